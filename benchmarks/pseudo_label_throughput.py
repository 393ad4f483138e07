"""Pseudo-labelling throughput: the Ray actor-pool UDF and the in-driver pass vs a plain ``Classifier.predict`` loop.

Run from the repository root on a quiet machine (a few minutes on 2 idle CPU cores):

    .venv/bin/python benchmarks/pseudo_label_throughput.py

(``--data-dir DIR`` or ``$XLT_DATA_DIR`` selects the data root; without either, ``../shared/data``
beside the checkout is used when it exists. ``--rows 64 --repeats 1 --out /tmp/x.md`` checks
that the script runs.)

What is measured, on the SAME rows: the train sentences of every SIB-200 language present
(the SIB-200 preset's, ``configs/tasks/sib200.yaml``), pooled, shuffled with ``--seed``, first ``--rows`` (cycled if more are
asked for than exist), so lengths and scripts are mixed. The model is
``bundled:multilingual-e5-small`` with a FRESH classification head (seeded): throughput does
not depend on the head's weights, so label quality is irrelevant here.

1. plain loop: ``Classifier.predict`` over consecutive chunks of ``--batch-size`` rows, with
   sub-batches of ``--encode-batch-size`` (length-bucketed: ``predict`` always is), in this
   process with ``--threads`` torch threads (default: every core), under ``--precision``
   (``xlt.hardware.autocast``): the bare ``torch.no_grad`` loop the others are held to;
2. in the driver: ``xlt.inference.labellers.Labellers`` (``num_actors: 0``; ``pseudo_label_here`` before) over the same blocks of ``--batch-size``
   rows, on ``--threads`` threads (co-training's ``inference.num_actors: 0``);
3. actor pool, length-bucketed: ``ray_data_pool.pseudo_label`` with ``--actors`` actors, each
   reserving cores / actors CPUs (torch gets that many threads), the classifier shipped to them
   through the object store (``share_classifier``), same batch and sub-batch sizes; input
   ``ray.data.from_arrow`` in blocks of ``--batch-size`` rows (several blocks, or one actor
   would get all the work), consumed by the driver with ``iter_batches``;
4. the same with ``sort_by_length=False`` (sub-batches in input order).

Every configuration runs at ``--precision`` (default ``auto``: bf16 autocast where the CPU has
native bf16, as co-training's ``inference.precision``). rows/s is also a fraction of the machine's
limit (``benchmarks/machine_limit.py``: real tokens × the encoder's forward FLOPs per token ÷ the
GEMM FLOP/s of the precision's dtype on the same threads), and a ratio to the plain loop's.

Every timed run is a full pass over the rows, wall clock. The plain loop gets one warm-up
chunk first; an actor-pool run includes starting its actors and loading the model in each
(what a pseudo-labelling pass costs), so it is also reported after its first output batch.
Runs go round-robin over the configurations ``--repeats`` times (drift on a shared machine
spreads over all of them); the median is reported, and the best pass.

Padded tokens: per sub-batch, rows x the longest tokenized text (prefix, special tokens and
``max_length`` truncation included, exactly as ``TextEncoder.encode`` pads) — what the model
computes — against the real tokens; the padding share is the part of the computed tokens
that is padding.

Checks: the actor pool's labels and probabilities per row id against the plain loop's, and
bucketed against unsorted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform as pyplatform  # stdlib; the source root named platform/ is not a package
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from xlt.hardware import cpu_model
from machine_limit import encoder_flops_per_token, fraction_of_limit, gemm_gflops

from xlt.hardware import PRECISIONS, autocast, native_bf16, resolve_precision
from xlt.config import from_dict, read_yaml
from xlt.data import resolve_data_dir
from xlt.report import command_line, markdown_table
from xlt.tasks import Task, TaskConfig, load_task

REPO = Path(__file__).resolve().parents[1]

SOURCE = "bundled:multilingual-e5-small"
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=None,
                   help="data root holding sib200/ (default: $XLT_DATA_DIR, else ../shared/data beside the repo)")
    p.add_argument("--rows", type=int, default=2000, help="rows to pseudo-label per pass (default 2000)")
    p.add_argument("--repeats", type=int, default=3, help="timed passes per configuration (default 3)")
    p.add_argument("--actors", type=int, default=2, help="actor-pool size (default 2)")
    p.add_argument("--batch-size", type=int, default=256, help="rows per UDF call / predict chunk (default 256)")
    p.add_argument("--encode-batch-size", type=int, default=64, help="texts per forward pass (default 64)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="torch threads of the plain loop (default: every core)")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed (default 0)")
    p.add_argument("--precision", default="auto", choices=PRECISIONS,
                   help="inference precision of every configuration (default auto: xlt.hardware)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "pseudo_label_throughput.md")
    a = p.parse_args(argv)
    if min(a.rows, a.repeats, a.actors, a.batch_size, a.encode_batch_size, a.threads) < 1:
        p.error("--rows, --repeats, --actors, --batch-size, --encode-batch-size and --threads must be >= 1")
    return a


def sib200(root: Path) -> Task:
    return load_task(from_dict(TaskConfig, read_yaml(REPO / "configs" / "tasks" / "sib200.yaml"), prefix="task."), root)


def read_rows(root: Path, n: int, seed: int) -> tuple[pa.Table, list[str]]:
    """``n`` rows (id, text, lang) of all SIB-200 train sentences, shuffled; and the languages."""
    task = sib200(root)
    langs = sorted(task.langs)
    pool = [(e.id, e.text, e.lang) for lang in langs for e in task.examples("train", lang)]
    random.Random(seed).shuffle(pool)
    picked = [pool[i % len(pool)] for i in range(n)]  # cycles only when n exceeds the pool
    return pa.table({"id": [f"{row_id}#{i}" for i, (row_id, _, _) in enumerate(picked)],
                     "text": [text for _, text, _ in picked], "lang": [lang for _, _, lang in picked]}), langs


def padded_tokens(lengths: np.ndarray, batch_size: int, encode_batch_size: int, sort_by_length: bool) -> int:
    """Tokens the model computes: per UDF batch, sub-batches in ``encode``'s order, rows x longest."""
    total = 0
    for lo in range(0, len(lengths), batch_size):
        chunk = lengths[lo:lo + batch_size]
        order = np.argsort(chunk, kind="stable") if sort_by_length else np.arange(len(chunk))
        for s in range(0, len(order), encode_batch_size):
            sub = chunk[order[s:s + encode_batch_size]]
            total += len(sub) * int(sub.max())
    return total


@dataclass
class Config:
    name: str
    sort_by_length: bool
    workers: str
    walls: list[float] = field(default_factory=list)
    first_batch: list[float] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    probabilities: dict[str, np.ndarray] = field(default_factory=dict)


def run_plain(classifier, table: pa.Table, args: argparse.Namespace, config: Config) -> None:
    texts, ids = table.column("text").to_pylist(), table.column("id").to_pylist()
    t0 = time.perf_counter()
    for lo in range(0, len(texts), args.batch_size):
        with autocast(args.precision):
            pred = classifier.predict(texts[lo:lo + args.batch_size], batch_size=args.encode_batch_size)
        config.labels.update(zip(ids[lo:lo + args.batch_size], pred.labels))
        config.probabilities.update(zip(ids[lo:lo + args.batch_size], pred.probabilities))
    config.walls.append(time.perf_counter() - t0)


def blocks_of(table: pa.Table, args: argparse.Namespace) -> list[pa.Table]:
    return [table.slice(lo, args.batch_size) for lo in range(0, table.num_rows, args.batch_size)]


def consume(batches, config: Config) -> None:
    """Time a pass over the lazily labelled ``batches``, from its start to its last batch and to its
    first (for the actor pool: its actors started; in the driver: the classifier built from the spec,
    then one block predicted), keeping each row's label and probabilities."""
    t0, first = time.perf_counter(), None
    for batch in batches:
        if first is None:
            first = time.perf_counter() - t0
        ids = batch.column("id").to_pylist()
        config.labels.update(zip(ids, batch.column("pseudo_label").to_pylist()))
        config.probabilities.update(zip(ids, map(np.asarray, batch.column("probabilities").to_pylist())))
    config.walls.append(time.perf_counter() - t0)
    config.first_batch.append(first if first is not None else float("nan"))


def run_pool(spec, table: pa.Table, args: argparse.Namespace, config: Config, actor_cpus: float) -> None:
    import ray.data

    from xlt.inference import InferenceSettings
    from ray_data_pool import pseudo_label

    settings = InferenceSettings(batch_size=args.batch_size, encode_batch_size=args.encode_batch_size,
                                 num_actors=args.actors, num_cpus=actor_cpus, precision=args.precision)
    ds = pseudo_label(ray.data.from_arrow(blocks_of(table, args)), spec, settings,
                      sort_by_length=config.sort_by_length)
    consume(ds.iter_batches(batch_format="pyarrow", batch_size=None), config)


def run_here(spec, table: pa.Table, args: argparse.Namespace, config: Config) -> None:
    from xlt.inference import InferenceSettings
    from xlt.inference.labellers import Labellers

    settings = InferenceSettings(encode_batch_size=args.encode_batch_size, num_actors=0, threads=args.threads,
                                 precision=args.precision)
    with Labellers(settings) as labellers:  # in this process: each block labelled whole, in order
        labellers.load(spec)
        consume(labellers.in_order(blocks_of(table, args)), config)


def compare(a: Config, b: Config) -> str:
    common = [i for i in a.labels if i in b.labels]
    same = sum(a.labels[i] == b.labels[i] for i in common)
    diff = max((float(np.abs(a.probabilities[i] - b.probabilities[i]).max()) for i in common), default=float("nan"))
    name = lambda c: f"{c.name} ({'bucketed' if c.sort_by_length else 'unsorted'})"  # noqa: E731
    return (f"{name(b)} vs {name(a)}: {same} of {len(a.labels)} labels identical, max |Δ probability| "
            f"{diff:.1e}; rows missing: {len(a.labels) - len(common)}, extra: {len(set(b.labels) - set(a.labels))}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    started, load_before = time.perf_counter(), os.getloadavg()
    shared = REPO.parent / "shared" / "data"
    if args.data_dir is None and not os.environ.get("XLT_DATA_DIR") and shared.is_dir():
        args.data_dir = str(shared)
    root = resolve_data_dir(args.data_dir)
    table, langs = read_rows(root, args.rows, args.seed)

    import ray
    import torch

    from xlt.inference import ClassifierSpec, build_classifier, share_classifier
    from xlt.models import EncoderConfig

    torch.set_num_threads(args.threads)
    model = EncoderConfig(source=SOURCE)
    t0 = time.perf_counter()
    classifier = build_classifier(ClassifierSpec(model, sib200(root).labels))  # fresh, seeded head
    load_s = time.perf_counter() - t0
    lengths = np.asarray(classifier.encoder.lengths(table.column("text").to_pylist()))
    real = int(lengths.sum())

    cores = os.cpu_count() or 1
    actor_cpus = cores / args.actors
    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False)
    try:
        import ray.data

        ray.data.DataContext.get_current().enable_progress_bars = False
        spec = share_classifier(classifier, model)  # the object store: no shared filesystem needed
        pool = f"{args.actors} actors x {max(1, int(actor_cpus))} threads"
        plain = Config("plain loop (Classifier.predict)", True, f"1 process x {args.threads} threads")
        here = Config("in the driver (labellers, num_actors 0)", True, f"1 process x {args.threads} threads")
        configs = [plain, here, Config("actor pool", True, pool), Config("actor pool", False, pool)]
        with autocast(args.precision):  # warm-up
            classifier.predict(table.column("text").to_pylist()[:args.batch_size], batch_size=args.encode_batch_size)
        for rep in range(args.repeats):
            for c in configs:
                if c is plain:
                    run_plain(classifier, table, args, c)
                elif c is here:
                    run_here(spec, table, args, c)
                else:
                    run_pool(spec, table, args, c, actor_cpus)
                order = "bucketed" if c.sort_by_length else "unsorted"
                print(f"rep {rep + 1}/{args.repeats} {c.name}, {order}: {c.walls[-1]:.2f} s "
                      f"({args.rows / c.walls[-1]:.1f} rows/s)", file=sys.stderr)
    finally:
        ray.shutdown()

    precision = resolve_precision(args.precision)
    flops = encoder_flops_per_token(SOURCE, round(real / args.rows))["forward_flops_per_token"]
    gflops = gemm_gflops("bfloat16" if precision == "bf16" else "float32", threads=args.threads)
    plain_rate = args.rows / statistics.median(plain.walls)
    rows = []
    for c in configs:
        med = statistics.median(c.walls)
        first = statistics.median(c.first_batch) if c.first_batch else None
        after = None if first is None or args.rows <= args.batch_size else \
            (args.rows - args.batch_size) / (med - first)  # approximate: the first output batch is one block
        padded = padded_tokens(lengths, args.batch_size, args.encode_batch_size, c.sort_by_length)
        rows.append({"run": c.name, "order": "length-bucketed" if c.sort_by_length else "unsorted",
                     "workers": c.workers, "median s": f"{med:.2f}", "rows/s (median)": f"{args.rows / med:.1f}",
                     "rows/s (best)": f"{args.rows / min(c.walls):.1f}",
                     "× plain loop": f"{args.rows / med / plain_rate:.2f}",
                     "fraction of limit": f"{fraction_of_limit(args.rows / med, real / args.rows, flops, gflops):.2f}",
                     "1st batch s": None if first is None else f"{first:.2f}",
                     "rows/s after 1st batch": None if after is None else f"{after:.1f}",
                     "padded tokens": f"{padded:,}", "padding share": f"{1 - real / padded:.1%}"})
    table_md = markdown_table(rows)
    by_lang = {lang: 0 for lang in langs}
    for lang in table.column("lang").to_pylist():
        by_lang[lang] += 1
    facts = [
        f"Date: {dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; whole run "
        f"{(time.perf_counter() - started) / 60:.1f} min",
        f"Machine: {cores} CPU cores ({cpu_model()}), no GPU, {pyplatform.system()} {pyplatform.release()}; "
        f"Python {pyplatform.python_version()}, torch {torch.__version__}, Ray {ray.__version__}",
        f"Load: 1-minute load average {load_before[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end "
        "(above 0 means other work competed for the cores)",
        f"Model: `{SOURCE}` (mean pooling, prefix `query: `, max_length {model.max_length}) + a fresh "
        f"{len(classifier.labels)}-label head (seed {model.seed}): throughput does not depend on the head's "
        f"weights, so label quality is irrelevant; loading it took {load_s:.1f} s in this process",
        f"Data: {args.rows} SIB-200 train sentences of {len(langs)} languages, shuffled (seed {args.seed}): "
        + ", ".join(f"{k} {v}" for k, v in by_lang.items()),
        f"Tokens: {real:,} real (mean {lengths.mean():.1f}, max {lengths.max()} per text)",
        f"Precision: {args.precision} → {precision} (native bf16: {'yes' if native_bf16() else 'no'}); limit: "
        f"{'bf16' if precision == 'bf16' else 'fp32'} GEMM {gflops:.0f} GFLOP/s on {args.threads} threads, "
        f"{flops / 1e6:.1f} MFLOP per token forward",
        f"Batches: {args.batch_size} rows per UDF call / predict chunk, {args.encode_batch_size} per forward pass; "
        f"actors reserve {actor_cpus:g} CPUs each on `ray.init(num_cpus={cores})`; the state dict reaches them "
        "through the object store",
        f"Protocol: timed passes per configuration: {args.repeats}, round-robin; actor-pool passes include "
        "actor start-up and model loading, in-driver passes the model's loading from the spec; 'after 1st batch' excludes it (approximately: the rows of the first "
        "output block)",
        "Raw times (s): " + "; ".join(
            f"{c.name} {'bucketed' if c.sort_by_length else 'unsorted'} " + "/".join(f"{t:.2f}" for t in c.walls)
            for c in configs),
    ]
    checks = [compare(plain, here), compare(plain, configs[2]), compare(configs[2], configs[3])]
    md = "\n".join([
        "# Pseudo-labelling throughput: actor-pool UDF and in-driver pass vs plain loop", "",
        "Generated by `benchmarks/pseudo_label_throughput.py`; rerun to refresh. Command:", "",
        "```", command_line(), "```", "",
        *[f"- {fact}" for fact in facts], "",
        table_md, "",
        "## Checks", "",
        *[f"- {line}" for line in checks], "",
    ])
    print(md)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(md, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
