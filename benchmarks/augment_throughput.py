"""Augmentation throughput and memory: the Ray Data pipeline vs the same UDF in a plain loop.

Run from the repository root (about 12 minutes on 2 idle CPU cores; longer when other work
competes for them):

    .venv/bin/python benchmarks/augment_throughput.py

(``--data-dir DIR`` or ``$XLT_DATA_DIR`` selects the data root; without either, ``../shared/data``
beside the checkout is used when it exists. ``--smoke`` runs a 1-minute version.)

What is measured (Wang et al. 2022, §3.1/§4.1 augmentation, t_f = t_p = t_c = 1, r_c = 0.5, into
``--languages`` de fr es ru, all from MUSE dictionaries: ``CrossLingualAugment`` with a
``DictionaryTranslator`` for full and partial translation and the same dictionaries for
code-switching):

1. plain loop: one ``CrossLingualAugment`` in this process, called on consecutive batches of
   ``--batch-size`` rows, ``--n-plain`` (200,000) sentences;
2. Ray Data: ``ray.data.range(n).map_batches(make_rows)`` (rows generated lazily, so the input
   never exists in full) -> ``build_augmented_dataset`` (an actor pool of ``--num-actors``) ->
   ``iter_batches`` in the driver, for each n in ``--n-ray`` (100,000 and 1,000,000), on a
   ``ray.init(num_cpus=2)`` local cluster.

Rows: row i is the i-th English SIB-200 train sentence, cycling over the 701 (id ``bench/<i>``,
so every row has its own random stream; a batch of consecutive ids holds distinct texts, and
nothing is cached across batches, so the repetition does not make the work cheaper).

Reported per run: wall time and sentences/s (Ray: also after the first batch, i.e. without
actor start-up), CPU seconds of this benchmark's processes (driver + every process of its Ray
session, from /proc) and sentences per CPU-second, which is robust to other work on a shared
machine; and the CPU share other processes took meanwhile (/proc/stat minus ours). Memory:
every ``--sample-interval`` s the proportional set size (PSS, /proc/<pid>/smaps_rollup) of the
driver and of each descendant process (raylet, which holds the shared-memory object store, GCS,
workers); PSS splits shared pages among the processes mapping them, so the sum does not count
the object store twice. The peak of the sum at 100k vs 1M sentences shows whether streaming keeps
memory flat. A checksum of the views of the first ``n`` rows checks that the Ray pipeline
produced exactly the plain loop's views (determinism per row id, reading 6 of xlt.augment).

Linux only (/proc). Prints the tables and writes them, with the command line, machine facts and
date, to ``--out`` (``benchmarks/augment_throughput.md``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform as pyplatform  # stdlib; the source root named platform/ is not a package
import shlex
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from xlt.hardware import cpu_model
from xlt.augment import AugmentConfig, CrossLingualAugment, build_augmented_dataset
from xlt.config import from_dict, read_yaml
from xlt.data import read_muse
from xlt.tasks import TaskConfig, load_task
from xlt.data.paths import resolve_data_dir
from xlt.translate import DictionaryTranslator

CLK_TCK = os.sysconf("SC_CLK_TCK")
REPO = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=None,
                   help="data root holding sib200/ and muse/ (default: $XLT_DATA_DIR, else ../shared/data)")
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
    p.add_argument("--smoke", action="store_true", help="tiny sizes: check that the script runs")
    p.add_argument("--out", type=Path, default=Path("benchmarks/augment_throughput.md"))
    args = p.parse_args(argv)
    if args.smoke:
        args.n_plain, args.n_ray = 3_000, [3_000, 6_000]
    return args


# ---------------------------------------------------------------------------------------------
# /proc: CPU seconds and PSS of this process tree
# ---------------------------------------------------------------------------------------------

def cpu_busy_seconds() -> float:
    """Machine-wide non-idle CPU seconds so far (all cores), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / CLK_TCK


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of ``pid``; None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()  # after "pid (comm) "; comm may contain spaces
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / CLK_TCK


def _pss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _role(pid: int, me: int) -> str:
    if pid == me:
        return "driver"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    if "raylet" in cmd:
        return "raylet"  # the object store (plasma) lives in the raylet process
    if cmd.startswith("ray::") or "default_worker.py" in cmd:
        return "workers"
    return "other"  # GCS, dashboard agents, log monitor


def process_tree(me: int) -> dict[int, float]:
    """{pid: CPU seconds} of ``me`` and all its descendants (Ray's processes, when it started them)."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _stat(int(entry))
            if found is not None:
                parent[int(entry)], cpu[int(entry)] = found
    tree, frontier = {me}, [me]
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in tree:
                tree.add(child)
                frontier.append(child)
    return {pid: cpu[pid] for pid in tree if pid in cpu}


@dataclass
class Sampler:
    """Samples PSS (by role) and CPU seconds of this process tree in a background thread."""

    interval: float
    me: int = field(default_factory=os.getpid)
    peak_total: float = 0.0
    peak: dict[str, float] = field(default_factory=dict)
    peak_driver_rss: float = 0.0
    first_cpu: dict[int, float] = field(default_factory=dict)
    last_cpu: dict[int, float] = field(default_factory=dict)
    samples: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.baseline = self._sample(record=False)
        self.first_cpu = dict(self.last_cpu)  # CPU before the run; processes born later start at 0
        self.busy0, self.t0 = cpu_busy_seconds(), time.perf_counter()

    def _sample(self, record: bool = True) -> float:
        tree = process_tree(self.me)
        by_role: dict[str, float] = {}
        for pid, cpu in tree.items():
            self.last_cpu[pid] = cpu
            pss = _pss_mib(pid)
            if pss is not None:
                role = _role(pid, self.me)
                by_role[role] = by_role.get(role, 0.0) + pss
        total = sum(by_role.values())
        if record:
            self.samples += 1
            self.peak_total = max(self.peak_total, total)
            for role, value in by_role.items():
                self.peak[role] = max(self.peak.get(role, 0.0), value)
            self.peak_driver_rss = max(self.peak_driver_rss, _rss_mib(self.me) or 0.0)
        return total

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sample()
        self._stop.set()
        self._thread.join()
        self.wall = time.perf_counter() - self.t0
        # Processes that ended between two samples lose at most one interval of CPU here.
        self.cpu = sum(cpu - self.first_cpu.get(pid, 0.0) for pid, cpu in self.last_cpu.items())
        self.others = max(0.0, (cpu_busy_seconds() - self.busy0 - self.cpu) / self.wall)  # cores


# ---------------------------------------------------------------------------------------------
# Rows and views
# ---------------------------------------------------------------------------------------------

class RowMaker:
    """``range`` batch (column ``id``: ints) -> Example columns; row i is sentence i mod 701."""

    def __init__(self, texts: list[str], labels: list[str]) -> None:
        self.texts, self.labels = texts, labels

    def __call__(self, batch: pa.Table) -> pa.Table:
        ids = batch.column("id").to_pylist()
        k = len(self.texts)
        return pa.table({
            "id": [f"bench/{i}" for i in ids],
            "text": [self.texts[i % k] for i in ids],
            "lang": ["en"] * len(ids),
            "label": [self.labels[i % k] for i in ids],
            "source_id": [str(i % k) for i in ids],
        })


def views_checksum(batch: pa.Table, limit: int) -> int:
    """Order-independent checksum of (id, views, kinds, langs) over the rows with index < ``limit``."""
    total = 0
    columns = [batch.column(c).to_pylist() for c in ("id", "views", "view_kinds", "view_langs")]
    for row_id, views, kinds, langs in zip(*columns):
        if int(row_id.rsplit("/", 1)[1]) < limit:
            total += zlib.crc32("\x1e".join([row_id, *views, *kinds, *langs]).encode())
    return total


def count_views(batch: pa.Table) -> int:
    import pyarrow.compute as pc

    return int(pc.sum(pc.list_value_length(batch.column("views"))).as_py() or 0)


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------

@dataclass
class Run:
    name: str
    n: int
    views: int
    wall: float
    cpu: float
    others: float
    setup: float = 0.0
    first_batch: float | None = None
    output_mib: float = 0.0  # Arrow size of every output batch: what a materialised result would hold
    checksum: dict[int, int] = field(default_factory=dict)
    memory: Sampler | None = None

    @property
    def rate(self) -> float:
        return self.n / self.wall

    @property
    def steady_rate(self) -> float | None:
        if self.first_batch is None:
            return None
        return self.n / (self.wall - self.first_batch)  # first batch's rows are noise at these sizes


def run_plain(args: argparse.Namespace, make_rows: RowMaker, dicts: list, config: AugmentConfig,
              check_sizes: list[int]) -> Run:
    t0 = time.perf_counter()
    udf = CrossLingualAugment.from_config(config, translator=DictionaryTranslator(dicts), dictionaries=dicts)
    setup = time.perf_counter() - t0
    views, output = 0, 0
    checksum = dict.fromkeys(check_sizes, 0)
    with Sampler(args.sample_interval) as memory:
        for lo in range(0, args.n_plain, args.batch_size):
            ids = pa.table({"id": pa.array(np.arange(lo, min(lo + args.batch_size, args.n_plain)))})
            out = udf(make_rows(ids))
            views += count_views(out)
            output += out.nbytes
            for size in check_sizes:
                if lo < size:
                    checksum[size] += views_checksum(out, size)
    return Run("plain loop (1 process)", args.n_plain, views, memory.wall, memory.cpu, memory.others, setup=setup,
               checksum=checksum, memory=memory, output_mib=output / 2**20)


def segmentation_share(args: argparse.Namespace, make_rows: RowMaker, dicts: list, config: AugmentConfig,
                       n: int = 4096) -> tuple[float, float]:
    """(share of the UDF's CPU time spent in ``Segmenter.__call__``, calls per sentence), measured
    on ``n`` sentences by timing every call of the word segmenter of xlt.text.words."""
    from xlt.text import words

    udf = CrossLingualAugment.from_config(config, translator=DictionaryTranslator(dicts), dictionaries=dicts)
    original = words.Segmenter.__call__
    spent, calls = 0.0, 0

    def timed(self, text):  # type: ignore[no-untyped-def]
        nonlocal spent, calls
        t = time.process_time()
        out = original(self, text)
        spent += time.process_time() - t
        calls += 1
        return out

    words.Segmenter.__call__ = timed
    try:
        t0 = time.process_time()
        for lo in range(0, n, args.batch_size):
            udf(make_rows(pa.table({"id": pa.array(np.arange(lo, min(lo + args.batch_size, n)))})))
        total = time.process_time() - t0
    finally:
        words.Segmenter.__call__ = original
    return spent / total, calls / n


def run_ray(args: argparse.Namespace, n: int, make_rows: RowMaker, dicts: list, config: AugmentConfig,
            check: bool) -> Run:
    import ray.data

    blocks = max(1, -(-n // args.rows_per_block))
    source = ray.data.range(n, override_num_blocks=blocks).map_batches(make_rows, batch_format="pyarrow",
                                                                        batch_size=None)
    ds = build_augmented_dataset(source, config, translator=DictionaryTranslator(dicts), dictionaries=dicts,
                                 batch_size=args.batch_size, num_actors=args.num_actors, num_cpus=args.actor_cpus)
    views, checksum, first, output = 0, 0, None, 0
    with Sampler(args.sample_interval) as memory:
        for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            if first is None:
                first = time.perf_counter() - memory.t0
            views += count_views(batch)
            output += batch.nbytes
            if check:
                checksum += views_checksum(batch, n)
    return Run(f"Ray Data ({args.num_actors} actors)", n, views, memory.wall, memory.cpu, memory.others,
               first_batch=first, checksum={n: checksum} if check else {}, memory=memory, output_mib=output / 2**20)


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def mem_total_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024**2
    return float("nan")


def notes(runs: list[Run], plain: Run, segmentation: tuple[float, float], actors: int) -> list[str]:
    """What the tables say, in sentences whose numbers come from this run."""
    ray_runs = [r for r in runs if r.first_batch is not None]
    out = []
    if ray_runs:
        big = max(ray_runs, key=lambda r: r.n)
        overhead = 1 - (big.n / big.cpu) / (plain.n / plain.cpu)
        out.append(
            f"Throughput: on {big.n:,} sentences the Ray pipeline ran at {big.rate:,.0f} sentences/s, "
            f"{big.rate / plain.rate:.2f}x the plain loop's {plain.rate:,.0f} (other processes used "
            f"{big.others:.2f} and {plain.others:.2f} cores meanwhile). Per CPU-second of all our processes it "
            f"did {big.n / big.cpu:,.0f} sentences vs {plain.n / plain.cpu:,.0f} in the plain loop: Ray's "
            "overhead (Arrow batches moved between processes through the object store, the driver's "
            f"iter_batches, raylet and GCS, {actors} actors starting and loading the dictionaries) is "
            f"{overhead:.0%} of the per-sentence CPU. With 2 cores the best case is 2 actors on 2 free cores, "
            "i.e. below 2x the plain loop; when other work takes a core (see the last column), the plain loop "
            "keeps its one core while the 2 actors share what is left, and Ray can be slower than the loop.")
        small = min(ray_runs, key=lambda r: r.n)
        if small is not big:
            growth = big.memory.peak_total / small.memory.peak_total - 1
            verdict = ("Streaming keeps memory flat" if growth < 0.25 else
                       "Memory is NOT flat: something accumulates with the number of sentences")
            out.append(
                f"Memory: the peak PSS of all processes was {small.memory.peak_total:,.0f} MiB at {small.n:,} "
                f"sentences and {big.memory.peak_total:,.0f} MiB at {big.n:,} ({growth:+.0%}) while the output "
                f"streamed grew {big.output_mib / small.output_mib:.0f}x to {big.output_mib:,.0f} MiB; the object "
                f"store (in the raylet's PSS) peaked at {big.memory.peak.get('raylet', 0):,.0f} MiB. {verdict}; "
                "most of the memory is fixed cost: per actor the Python worker and the dictionaries' lookup tables.")
    share, calls = segmentation
    out.append(
        f"Where the CPU goes: word segmentation (xlt.text.words.Segmenter, {calls:.1f} calls per "
        "sentence: the text once, shared by code-switching and the partial-translation span, then the "
        f"DictionaryTranslator's own segmentation of the full text and of the span) is {share:.0%} of the UDF's "
        "CPU time on a 4,096-sentence profile pass (process CPU time inside Segmenter.__call__ over that of "
        "the UDF calls).")
    return out


def report(args: argparse.Namespace, runs: list[Run], facts: list[str], plain: Run,
           segmentation: tuple[float, float]) -> str:
    def fmt(x: float | None, spec: str = ",.0f") -> str:
        return "–" if x is None else format(x, spec)

    lines = ["# Augmentation throughput: Ray Data pipeline vs plain loop", "",
             "Generated by `benchmarks/augment_throughput.py`; rerun to refresh. Command:", "",
             "```", f".venv/bin/python benchmarks/augment_throughput.py {shlex.join(sys.argv[1:])}".rstrip(), "```",
             "", *[f"- {fact}" for fact in facts], "",
             "## Throughput", "",
             "| run | sentences | views | wall s | sentences/s | sentences/s after 1st batch | CPU s (ours) "
             "| sentences per CPU-s | other processes (cores) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        lines.append(f"| {r.name} | {r.n:,} | {r.views:,} | {r.wall:,.1f} | {r.rate:,.0f} | {fmt(r.steady_rate)} "
                     f"| {r.cpu:,.1f} | {r.n / r.cpu:,.0f} | {r.others:.2f} |")
    lines += ["", "## Memory (PSS, MiB; peak over the run, sampled every "
              f"{args.sample_interval:g} s)", "",
              "| run | sentences | output streamed (Arrow MiB) | before run (all) | peak all processes | peak driver "
              "| peak driver RSS | peak workers | peak raylet (+object store) | peak other Ray | samples |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        m = r.memory
        assert m is not None
        lines.append(f"| {r.name} | {r.n:,} | {r.output_mib:,.0f} | {m.baseline:,.0f} | {m.peak_total:,.0f} "
                     f"| {m.peak.get('driver', 0):,.0f} "
                     f"| {m.peak_driver_rss:,.0f} | {fmt(m.peak.get('workers'))} | {fmt(m.peak.get('raylet'))} "
                     f"| {fmt(m.peak.get('other'))} | {m.samples} |")
    ray_runs = [r for r in runs if r.first_batch is not None]
    lines += ["", "## Reading", "", *[f"- {note}" for note in notes(runs, plain, segmentation, args.num_actors)]]
    lines += ["", "## Checks", ""]
    for r in ray_runs:
        for size, value in r.checksum.items():
            same = plain.checksum.get(size) == value
            lines.append(f"- views of rows 0..{size - 1:,}: Ray checksum {value} vs plain loop "
                         f"{plain.checksum.get(size)}: {'identical' if same else 'DIFFERENT'}")
        expected = 3 * r.n
        lines.append(f"- {r.name}, {r.n:,} sentences: {r.views:,} views of {expected:,} requested "
                     f"({expected - r.views:,} missing: texts with no dictionary word in the drawn span/language)")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.perf_counter()
    load_before = os.getloadavg()
    shared = REPO.parent / "shared" / "data"
    if args.data_dir is None and not os.environ.get("XLT_DATA_DIR") and shared.is_dir():
        args.data_dir = str(shared)
    root = resolve_data_dir(args.data_dir)
    examples = load_task(from_dict(TaskConfig, read_yaml(REPO / "configs" / "tasks" / "sib200.yaml"), prefix="task."), root).examples("train", "en")
    make_rows = RowMaker([e.text for e in examples], [e.label for e in examples])
    dicts = [read_muse(root, "en", lang) for lang in args.languages]
    config = AugmentConfig(t_f=1, t_p=1, t_c=1, r_c=0.5, languages=tuple(args.languages), seed=args.seed)
    check_sizes = [n for n in args.n_ray if n <= args.n_plain]

    segmentation = segmentation_share(args, make_rows, dicts, config)
    print(f"plain loop: {args.n_plain:,} sentences ...", file=sys.stderr)
    plain = run_plain(args, make_rows, dicts, config, check_sizes)
    runs = [plain]
    print(f"  {plain.rate:,.0f} sentences/s", file=sys.stderr)

    import ray

    for n in args.n_ray:
        # A fresh local cluster per run: the same baseline (no idle workers left by the last run).
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            import ray.data

            ray.data.DataContext.get_current().enable_progress_bars = False
            print(f"Ray Data: {n:,} sentences ...", file=sys.stderr)
            runs.append(run_ray(args, n, make_rows, dicts, config, check=n in check_sizes))
            print(f"  {runs[-1].rate:,.0f} sentences/s, peak PSS {runs[-1].memory.peak_total:,.0f} MiB",
                  file=sys.stderr)
        finally:
            ray.shutdown()

    facts = [
        f"Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"whole run {(time.perf_counter() - started) / 60:.1f} min",
        f"Machine: {os.cpu_count()} CPU cores ({cpu_model()}), {mem_total_gib():.0f} GiB RAM, no GPU, "
        f"{pyplatform.system()} {pyplatform.release()}",
        f"Python {pyplatform.python_version()}, Ray {ray.__version__} (`ray.init(num_cpus=2)`), "
        f"pyarrow {pa.__version__}",
        f"Augmentation: `CrossLingualAugment` t_f = t_p = t_c = 1, r_c = 0.5, partial_fraction 0.5, seed "
        f"{args.seed}, languages {', '.join(args.languages)}; full and partial translation by "
        f"`DictionaryTranslator` (first MUSE translation), code-switching with the same MUSE dictionaries "
        f"({', '.join(f'en-{d.tgt_lang}: {d.num_pairs:,} pairs' for d in dicts)})",
        f"Input: SIB-200 eng_Latn train ({len(examples)} sentences) cycled, ids `bench/<i>`; batches of "
        f"{args.batch_size} rows; Ray input `ray.data.range(n)` in blocks of {args.rows_per_block} rows -> "
        f"`map_batches(make_rows)` (lazy), actor pool of {args.num_actors} with num_cpus={args.actor_cpus} each, "
        "driver consumes `iter_batches(batch_format='pyarrow')`",
        f"UDF set-up in the plain loop (dictionary tables, segmenters): {plain.setup:.1f} s, not in its wall time; "
        "Ray's wall time includes actor start-up (their set-up too); 'after 1st batch' excludes it",
        f"Contention (shared machine): 1-min load average {load_before[0]:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end; the last column of the throughput table is the CPU other "
        "processes used during each run, in cores (of 2)",
    ]
    text = report(args, runs, facts, plain, segmentation)
    print(text)
    if not args.smoke:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
