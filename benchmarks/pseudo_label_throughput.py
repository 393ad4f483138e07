"""Pseudo-labelling throughput: the Ray actor-pool UDF and the in-driver pass vs a plain ``Classifier.predict`` loop.

    .venv/bin/python benchmarks/pseudo_label_throughput.py     # a few minutes on 2 idle cores
    .venv/bin/python benchmarks/pseudo_label_throughput.py --rows 64 --repeats 1 --out /tmp/x.md    # a check

The same SIB-200 train rows labelled each way by e5 under a fresh head: rows/s against the machine's limit
(``machine_limit.py``) and the plain loop, padded tokens against the real ones, labels against the plain loop's.
Writes benchmarks/pseudo_label_throughput.md.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

import torch

import harness
from machine_limit import encoder_flops_per_token, fraction_of_limit, gemm_gflops
from ray_data_pool import pseudo_label
from xlt.hardware import PRECISIONS, autocast, native_bf16, resolve_precision
from xlt.inference import ClassifierSpec, InferenceSettings, build_classifier, share_classifier
from xlt.inference.labellers import Labellers
from xlt.models import EncoderConfig
from xlt.report import markdown_table

SOURCE = "bundled:multilingual-e5-small"


@dataclass
class Config:
    name: str
    sort_by_length: bool
    workers: str
    walls: list[float] = field(default_factory=list)
    first_batch: list[float] = field(default_factory=list)
    labels: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)  # by row id: label, probabilities

    def title(self) -> str:
        return f"{self.name} ({'bucketed' if self.sort_by_length else 'unsorted'})"


def consume(batches, config: Config) -> None:
    """Time a pass over the lazily labelled ``batches``: to its last batch, and to its first (start-up included)."""
    t0, first = time.perf_counter(), None
    for batch in batches:
        first = first or time.perf_counter() - t0
        ids = batch.column("id").to_pylist()
        config.labels.update(zip(ids, zip(batch.column("pseudo_label").to_pylist(),
                                          map(np.asarray, batch.column("probabilities").to_pylist()))))
    config.walls.append(time.perf_counter() - t0)
    config.first_batch.append(first)


def compare(a: Config, b: Config) -> str:
    common = [i for i in a.labels if i in b.labels]
    same = sum(a.labels[i][0] == b.labels[i][0] for i in common)
    diff = max((float(np.abs(a.labels[i][1] - b.labels[i][1]).max()) for i in common), default=float("nan"))
    return (f"{b.title()} vs {a.title()}: {same} of {len(a.labels)} labels identical, max |Δ probability| "
            f"{diff:.1e}; rows missing: {len(a.labels) - len(common)}, extra: {len(set(b.labels) - set(a.labels))}")


def main(argv: list[str] | None = None) -> None:
    p = harness.parser(__doc__, "pseudo_label_throughput.md", data_dir=True)
    p.add_argument("--rows", type=int, default=2000, help="rows to pseudo-label per pass")
    p.add_argument("--repeats", type=int, default=3, help="timed passes per configuration")
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=256, help="rows per UDF call / predict chunk")
    p.add_argument("--encode-batch-size", type=int, default=64, help="texts per forward pass")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads (default: every core)")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed")
    p.add_argument("--precision", default="auto", choices=PRECISIONS, help="of every configuration (xlt.hardware)")
    args = p.parse_args(argv)
    machine = harness.Machine()
    task = harness.sib200(harness.data_root(args.data_dir))
    langs = sorted(task.langs)
    every = [(e.id, e.text, e.lang) for lang in langs for e in task.examples("train", lang)]
    random.Random(args.seed).shuffle(every)
    picked = [every[i % len(every)] for i in range(args.rows)]  # cycled past the pool
    ids, texts = [f"{row_id}#{i}" for i, (row_id, _, _) in enumerate(picked)], [text for _, text, _ in picked]
    table = pa.table({"id": ids, "text": texts, "lang": [lang for _, _, lang in picked]})

    import ray.data

    torch.set_num_threads(args.threads)
    model = EncoderConfig(source=SOURCE)
    t0 = time.perf_counter()
    classifier = build_classifier(ClassifierSpec(model, task.labels))  # fresh, seeded head
    load_s = time.perf_counter() - t0
    lengths = np.asarray(classifier.encoder.lengths(texts))
    real = int(lengths.sum())
    blocks = [table.slice(lo, args.batch_size) for lo in range(0, table.num_rows, args.batch_size)]
    cores = os.cpu_count() or 1
    actor_cpus = cores / args.actors
    pool = f"{args.actors} actors x {max(1, int(actor_cpus))} threads"
    plain = Config("plain loop (Classifier.predict)", True, f"1 process x {args.threads} threads")
    here = Config("in the driver (labellers, num_actors 0)", True, f"1 process x {args.threads} threads")
    configs = [plain, here, Config("actor pool", True, pool), Config("actor pool", False, pool)]
    with harness.local_ray(cores):
        ray.data.DataContext.get_current().enable_progress_bars = False
        spec = share_classifier(classifier, model)  # the object store: no shared filesystem needed
        with autocast(args.precision):  # warm-up
            classifier.predict(texts[:args.batch_size], batch_size=args.encode_batch_size)
        for rep in range(args.repeats):
            for c in configs:
                if c is plain:
                    t0 = time.perf_counter()
                    for lo in range(0, len(texts), args.batch_size):
                        with autocast(args.precision):
                            pred = classifier.predict(texts[lo:lo + args.batch_size], batch_size=args.encode_batch_size)
                        c.labels.update(zip(ids[lo:lo + args.batch_size], zip(pred.labels, pred.probabilities)))
                    c.walls.append(time.perf_counter() - t0)
                elif c is here:
                    settings = InferenceSettings(encode_batch_size=args.encode_batch_size, num_actors=0,
                                                 threads=args.threads, precision=args.precision)
                    with Labellers(settings) as labellers:  # in this process: each block labelled whole, in order
                        labellers.load(spec)
                        consume(labellers.in_order(blocks), c)
                else:
                    settings = InferenceSettings(batch_size=args.batch_size, encode_batch_size=args.encode_batch_size,
                                                 num_actors=args.actors, num_cpus=actor_cpus, precision=args.precision)
                    ds = pseudo_label(ray.data.from_arrow(blocks), spec, settings, sort_by_length=c.sort_by_length)
                    consume(ds.iter_batches(batch_format="pyarrow", batch_size=None), c)
                print(f"rep {rep + 1}/{args.repeats} {c.title()}: {c.walls[-1]:.2f} s "
                      f"({args.rows / c.walls[-1]:.1f} rows/s)", file=sys.stderr)

    precision = resolve_precision(args.precision)
    flops = encoder_flops_per_token(SOURCE, round(real / args.rows))["forward_flops_per_token"]
    gflops = gemm_gflops("bfloat16" if precision == "bf16" else "float32", threads=args.threads)
    plain_rate = args.rows / statistics.median(plain.walls)
    rows = []
    for c in configs:
        med = statistics.median(c.walls)
        rate = args.rows / med
        first = statistics.median(c.first_batch) if c.first_batch else None
        after = None if first is None or args.rows <= args.batch_size else \
            (args.rows - args.batch_size) / (med - first)  # approximate: the first output batch is one block
        padded = harness.padded_tokens(lengths, args.encode_batch_size, c.sort_by_length, chunk=args.batch_size)
        rows.append({"run": c.name, "order": "length-bucketed" if c.sort_by_length else "unsorted",
                     "workers": c.workers, "median s": f"{med:.2f}", "rows/s (median)": f"{rate:.1f}",
                     "rows/s (best)": f"{args.rows / min(c.walls):.1f}", "× plain loop": f"{rate / plain_rate:.2f}",
                     "fraction of limit": f"{fraction_of_limit(rate, real / args.rows, flops, gflops):.2f}",
                     "1st batch s": None if first is None else f"{first:.2f}",
                     "rows/s after 1st batch": None if after is None else f"{after:.1f}",
                     "padded tokens": f"{padded:,}", "padding share": f"{1 - real / padded:.1%}"})
    by_lang = Counter(table.column("lang").to_pylist())
    facts = [
        f"Model: `{SOURCE}` (mean pooling, prefix `query: `, max_length {model.max_length}) + a fresh "
        f"{len(classifier.labels)}-label head (seed {model.seed}; throughput does not depend on its weights), loaded "
        f"in {load_s:.1f} s; precision {args.precision} → {precision} (native bf16: {native_bf16()})",
        f"Data: {args.rows} SIB-200 train sentences, shuffled (seed {args.seed}): "
        + ", ".join(f"{lang} {by_lang[lang]}" for lang in langs) + f"; {real:,} real tokens (mean "
        f"{lengths.mean():.1f}, max {lengths.max()} per text); padded: per sub-batch, rows x its longest text",
        f"Limit: {'bf16' if precision == 'bf16' else 'fp32'} GEMM {gflops:.0f} GFLOP/s on {args.threads} threads, "
        f"{flops / 1e6:.1f} MFLOP per token forward",
        f"Batches: {args.batch_size} rows per UDF call / predict chunk, {args.encode_batch_size} per forward pass; "
        f"Ray {ray.__version__}: actors reserve {actor_cpus:g} CPUs each of `ray.init(num_cpus={cores})`, the state "
        "dict reaches them through the object store",
        f"Protocol: {args.repeats} timed passes per configuration, round-robin; actor-pool passes include actor "
        "start-up and model loading, in-driver passes the model's loading from the spec; 'after 1st batch' excludes "
        "it (approximately: the rows of the first output block). Raw times (s): "
        + "; ".join(f"{c.title()} " + "/".join(f"{t:.2f}" for t in c.walls) for c in configs),
    ]
    checks = [compare(plain, here), compare(plain, configs[2]), compare(configs[2], configs[3])]
    harness.write(args.out, "\n".join([
        machine.header("Pseudo-labelling throughput: actor-pool UDF and in-driver pass vs plain loop"),
        *[f"- {fact}" for fact in facts], "", markdown_table(rows), "",
        "## Checks", "", *[f"- {line}" for line in checks], ""]), show=True)


if __name__ == "__main__":
    main()
