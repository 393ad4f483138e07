"""Augmentation throughput and memory: the Ray Data pipeline against the same UDF in a plain loop.

Wang et al. (2022)'s augmentation (§3.1/§4.1) as ``CrossLingualAugment``, in this process, then through
``build_augmented_dataset`` on a fresh local Ray of 2 CPUs per size: what Ray costs per sentence on 2 cores, and
whether streaming keeps memory flat from 100k to 1M sentences. About 12 minutes on 2 idle cores (``--smoke``: 1):

    .venv/bin/python benchmarks/augment_throughput.py     # -> benchmarks/augment_throughput.md
"""

from __future__ import annotations

import sys
import time
import zlib
from dataclasses import dataclass
from unittest import mock

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.compute as pc
import ray
import ray.data

import harness
from xlt.augment import AugmentConfig, CrossLingualAugment, build_augmented_dataset
from xlt.data import read_muse
from xlt.translate import DictionaryTranslator


class RowMaker:
    """``range`` batch (column ``id``: ints) -> Example columns; row i is sentence i mod 701, with an id of its own."""

    def __init__(self, texts: list[str], labels: list[str]) -> None:
        self.texts, self.labels = texts, labels

    def __call__(self, batch: pa.Table) -> pa.Table:
        ids, k = batch.column("id").to_pylist(), len(self.texts)
        return pa.table({"id": [f"bench/{i}" for i in ids], "text": [self.texts[i % k] for i in ids],
                         "lang": ["en"] * len(ids), "label": [self.labels[i % k] for i in ids],
                         "source_id": [str(i % k) for i in ids]})

    def rows(self, lo: int, hi: int) -> pa.Table:
        return self(pa.table({"id": pa.array(np.arange(lo, hi))}))


def views_checksum(batch: pa.Table, limit: int) -> int:
    """Order-independent checksum of (id, views, kinds, langs) over the rows with index < ``limit``."""
    columns = [batch.column(c).to_pylist() for c in ("id", "views", "view_kinds", "view_langs")]
    return sum(zlib.crc32("\x1e".join([row_id, *views, *kinds, *langs]).encode())
               for row_id, views, kinds, langs in zip(*columns) if int(row_id.rsplit("/", 1)[1]) < limit)


@dataclass
class Run:
    name: str
    n: int
    views: int
    memory: harness.Watch
    output_mib: float  # Arrow size of every output batch: what a materialised result would hold
    checksum: dict[int, int]
    first_batch: float | None = None  # seconds to the first batch, whose rows are noise at these sizes

    @property
    def rate(self) -> float:
        return self.n / self.memory.wall


def run_plain(args, make_rows: RowMaker, udf: CrossLingualAugment, check_sizes: list[int]) -> Run:
    views, output, checksum = 0, 0, dict.fromkeys(check_sizes, 0)
    with harness.Watch(args.sample_interval) as memory:
        for lo in range(0, args.n_plain, args.batch_size):
            out = udf(make_rows.rows(lo, min(lo + args.batch_size, args.n_plain)))
            views += pc.sum(pc.list_value_length(out.column("views"))).as_py() or 0
            output += out.nbytes
            checksum.update({size: checksum[size] + views_checksum(out, size) for size in check_sizes if lo < size})
    return Run("plain loop (1 process)", args.n_plain, views, memory, output / 2**20, checksum)


def segmentation_share(args, make_rows: RowMaker, udf: CrossLingualAugment, n: int = 4096) -> tuple[float, float]:
    """(share of the UDF's CPU time spent in ``Segmenter.__call__``, calls per sentence) on ``n`` sentences."""
    from xlt.text import words

    original, spent, calls = words.Segmenter.__call__, 0.0, 0

    def timed(self, text):  # type: ignore[no-untyped-def]
        nonlocal spent, calls
        start = time.process_time()
        out = original(self, text)
        spent, calls = spent + time.process_time() - start, calls + 1
        return out

    with mock.patch.object(words.Segmenter, "__call__", timed):
        start = time.process_time()
        for lo in range(0, n, args.batch_size):
            udf(make_rows.rows(lo, min(lo + args.batch_size, n)))
        total = time.process_time() - start
    return spent / total, calls / n


def run_ray(args, n: int, make_rows: RowMaker, dicts: list, config: AugmentConfig, check: bool) -> Run:
    ray.data.DataContext.get_current().enable_progress_bars = False
    source = ray.data.range(n, override_num_blocks=max(1, -(-n // args.rows_per_block)))
    ds = build_augmented_dataset(source.map_batches(make_rows, batch_format="pyarrow", batch_size=None), config,
                                 translator=DictionaryTranslator(dicts), dictionaries=dicts,
                                 batch_size=args.batch_size, num_actors=args.num_actors, num_cpus=args.actor_cpus)
    views, checksum, first, output = 0, 0, None, 0
    with harness.Watch(args.sample_interval) as memory:
        for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            if first is None:
                first = time.perf_counter() - memory.start
            views += pc.sum(pc.list_value_length(batch.column("views"))).as_py() or 0
            output += batch.nbytes
            if check:
                checksum += views_checksum(batch, n)
    return Run(f"Ray Data ({args.num_actors} actors)", n, views, memory, output / 2**20,
               {n: checksum} if check else {}, first)


def notes(runs: list[Run], share: float, calls: float, actors: int) -> list[str]:
    plain, big, small = runs[0], max(runs[1:], key=lambda r: r.n), min(runs[1:], key=lambda r: r.n)
    per_cpu, plain_per_cpu = big.n / big.memory.cpu, plain.n / plain.memory.cpu
    out = [f"Throughput: on {big.n:,} sentences Ray ran at {big.rate:,.0f} sentences/s, {big.rate / plain.rate:.2f}x "
           f"the plain loop's {plain.rate:,.0f} (other processes used {big.memory.others:.2f} and "
           f"{plain.memory.others:.2f} cores meanwhile); per CPU-second of our processes {per_cpu:,.0f} sentences vs "
           f"{plain_per_cpu:,.0f}: Ray's overhead (Arrow batches through the object store, iter_batches, raylet and "
           f"GCS, {actors} actors starting and loading the dictionaries) is {1 - per_cpu / plain_per_cpu:.0%} of the "
           "per-sentence CPU. On 2 cores Ray stays below 2x the loop; when other work takes a core, the loop keeps its "
           "one while the actors share the rest, and Ray can be slower than the loop."]
    if small is not big:
        low, high = small.memory.peak["pss"], big.memory.peak["pss"]
        out.append(f"Memory: the peak PSS of all processes was {low:,.0f} MiB at {small.n:,} sentences, {high:,.0f} "
                   f"MiB at {big.n:,} ({high / low - 1:+.0%}: {'flat' if high / low - 1 < 0.25 else 'NOT flat'}) while "
                   f"the output streamed grew {big.output_mib / small.output_mib:.0f}x to {big.output_mib:,.0f} MiB; "
                   f"the object store (in the raylet's PSS) peaked at {big.memory.peak.get('pss:raylet', 0):,.0f} MiB.")
    return out + [
        f"Where the CPU goes: word segmentation (xlt.text.words.Segmenter, {calls:.1f} calls per sentence: the text "
        "once for code-switching and the partial-translation span, then DictionaryTranslator's own of the full text "
        f"and of the span) is {share:.0%} of the UDF's CPU time (process CPU time on a 4,096-sentence profile pass)."]


def report(args, machine: harness.Machine, runs: list[Run], facts: list[str], segmentation) -> str:
    fmt = lambda x: "–" if x is None else f"{x:,.0f}"  # noqa: E731
    lines = [machine.header("Augmentation throughput: Ray Data pipeline vs plain loop"),
             *[f"- {fact}" for fact in facts], "", "## Throughput", "",
             "| run | sentences | views | wall s | sentences/s | sentences/s after 1st batch | CPU s (ours) "
             "| sentences per CPU-s | other processes (cores) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.name} | {r.n:,} | {r.views:,} | {r.memory.wall:,.1f} | {r.rate:,.0f} "
              f"| {fmt(r.first_batch and r.n / (r.memory.wall - r.first_batch))} | {r.memory.cpu:,.1f} "
              f"| {r.n / r.memory.cpu:,.0f} | {r.memory.others:.2f} |" for r in runs]
    lines += ["", f"## Memory (PSS, MiB; peak over the run, sampled every {args.sample_interval:g} s)", "",
              "| run | sentences | output streamed (Arrow MiB) | before run (all) | peak all processes | peak driver "
              "| peak driver RSS | peak workers | peak raylet (+object store) | peak other Ray | samples |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.name} | {r.n:,} | {r.output_mib:,.0f} | {r.memory.baseline:,.0f} | {r.memory.peak['pss']:,.0f} "
              f"| {r.memory.peak.get('pss:driver', 0):,.0f} | {r.memory.peak['driver_rss']:,.0f} "
              f"| {fmt(r.memory.peak.get('pss:workers'))} | {fmt(r.memory.peak.get('pss:raylet'))} "
              f"| {fmt(r.memory.peak.get('pss:other'))} | {r.memory.samples} |" for r in runs]
    lines += ["", "## Reading", "", *[f"- {note}" for note in notes(runs, *segmentation, args.num_actors)],
              "", "## Checks", ""]
    for r in runs[1:]:
        for size, value in r.checksum.items():
            plain = runs[0].checksum.get(size)
            lines.append(f"- views of rows 0..{size - 1:,}: Ray checksum {value} vs plain loop {plain}: "
                         f"{'identical' if plain == value else 'DIFFERENT'}")
        lines.append(f"- {r.name}, {r.n:,} sentences: {r.views:,} views of {3 * r.n:,} requested ({3 * r.n - r.views:,}"
                     " missing: texts with no dictionary word in the drawn span/language)")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = harness.parser(__doc__, "augment_throughput.md", data_dir=True)
    p.add_argument("--languages", nargs="+", default=["de", "fr", "es", "ru"])
    p.add_argument("--n-plain", type=int, default=200_000)
    p.add_argument("--n-ray", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--rows-per-block", type=int, default=4096, help="rows per block of the lazy input")
    p.add_argument("--num-actors", type=int, default=2)
    p.add_argument("--actor-cpus", type=float, default=0.5,
                   help="CPUs reserved per actor; < 1 so that the input's read tasks still get a slot on 2 CPUs")
    p.add_argument("--sample-interval", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--smoke", action="store_true", help="tiny sizes: check that the script runs (writes nothing)")
    args = p.parse_args(argv)
    if args.smoke:
        args.n_plain, args.n_ray = 3_000, [3_000, 6_000]

    machine = harness.Machine()
    root = harness.data_root(args.data_dir)
    examples = harness.sib200(root).examples("train", "en")
    make_rows = RowMaker([e.text for e in examples], [e.label for e in examples])
    dicts = [read_muse(root, "en", lang) for lang in args.languages]
    config = AugmentConfig(t_f=1, t_p=1, t_c=1, r_c=0.5, languages=tuple(args.languages), seed=args.seed)
    check_sizes = [n for n in args.n_ray if n <= args.n_plain]
    udf = lambda: CrossLingualAugment.from_config(config, translator=DictionaryTranslator(dicts),  # noqa: E731
                                                  dictionaries=dicts)
    segmentation = segmentation_share(args, make_rows, udf())
    print(f"plain loop: {args.n_plain:,} sentences ...", file=sys.stderr)
    setup, plain_udf = time.perf_counter(), udf()
    setup = time.perf_counter() - setup
    runs = [run_plain(args, make_rows, plain_udf, check_sizes)]
    for n in args.n_ray:
        with harness.local_ray(2):  # fresh per run: the same baseline, no idle workers left by the last run
            print(f"Ray Data: {n:,} sentences ...", file=sys.stderr)
            runs.append(run_ray(args, n, make_rows, dicts, config, check=n in check_sizes))
    facts = [
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB RAM, no GPU; Ray {ray.__version__} (a fresh "
        f"`ray.init(num_cpus=2)` per run), pyarrow {pa.__version__}",
        f"Augmentation: `CrossLingualAugment` t_f = t_p = t_c = 1, r_c = 0.5, partial_fraction 0.5, seed {args.seed}, "
        f"languages {', '.join(args.languages)}; translation by `DictionaryTranslator` (first MUSE translation), "
        f"code-switching by the same ({', '.join(f'en-{d.tgt_lang}: {d.num_pairs:,} pairs' for d in dicts)})",
        f"Input: SIB-200 eng_Latn train ({len(examples)} sentences) cycled, ids `bench/<i>`, batches of "
        f"{args.batch_size}; Ray: `ray.data.range(n)` in blocks of {args.rows_per_block} -> `map_batches(make_rows)`, "
        f"{args.num_actors} actors of num_cpus={args.actor_cpus}, the driver's `iter_batches(batch_format='pyarrow')`",
        f"UDF set-up: {setup:.1f} s, outside the plain loop's wall time; Ray's includes the actors' start-up and "
        "set-up ('after 1st batch' excludes it). CPU (ours): the driver's and its Ray session's; others': in cores",
    ]
    text = report(args, machine, runs, facts, segmentation)
    print(text)
    if not args.smoke:
        harness.write(args.out, text)


if __name__ == "__main__":
    main()
