"""Pseudo-labelling a large unlabelled pool: rows/s and memory at 10k, 100k and 1M rows.

Run from the repository root on a quiet machine (about 15 minutes on 2 idle cores):

    .venv/bin/python benchmarks/pool_scale.py                                  # writes pool_scale.md + .json
    .venv/bin/python benchmarks/pool_scale.py --sizes 2000 --out /tmp/x.md     # checks that it runs

Resumable: a size already in the JSON beside ``--out`` for the checked-out commit is not run again
(``--fresh`` reruns them). Runs of other commits stay in the JSON and get a table each, so that a
change to the driver's side is shown against the code before it. Each size runs in a subprocess of
its own with a fresh local Ray (2 CPUs), so that no size's memory carries into the next.

What runs, per size N, is co-training's pseudo-labelling pass and its driver side:

- the pool is ``ray.data.range(N)`` turned into rows (``position``, ``text`` of 8–16 words drawn
  from a fixed vocabulary, seeded by the row number) inside Ray Data's tasks, never in the driver;
- ``xlt.inference.pseudo_label`` with ``tiny:bert`` and a fresh 7-label head (throughput and memory
  do not depend on the weights), one actor, batches of 1,024 rows, sub-batches of 256;
- the driver consumes the stream with ``xlt.cotrain.loop.collect``, as ``predict`` does, into
  ``PoolPredictions`` over the pool's ids (an array of N strings made before the pass: the loop
  holds its pool in the driver);
- then what ``exchange`` does with them: ``restrict`` to the learner's pool ids, select
  (``threshold-random``, t = 0, so every row is a candidate, the worst case, n = 234 as the demo),
  and drop the selected ids from the pool list.

Measured:

- rows/s over the whole pass, and the seconds to the first output batch (actor start-up and the
  first block; at 10k rows, two blocks, that is most of the pass);
- peak resident memory of all processes (the driver and every Ray process it started: GCS, raylet,
  workers, actors), sampled every 0.25 s. This counts shared pages once per process that maps
  them, so it is an upper bound;
- peak object store use, as the growth of ``/dev/shm`` (where Ray's object store lives here);
- the driver's resident memory growth while collecting the predictions (not ``tracemalloc``, which
  would slow the timed pass), and its Python allocations (``tracemalloc`` peak) for restrict +
  select + pool bookkeeping, with their time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

from machine import cpu_model  # noqa: E402  (benchmarks/machine.py)
from xlt.report import command_line, markdown_table

HERE = Path(__file__).resolve().parent
VOCABULARY = [f"w{i}" for i in range(5000)]
LABELS = ("science", "travel", "politics", "sports", "health", "entertainment", "geography")
SELECTED = 234  # the demo's n/3 of 701 labelled rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--out", type=Path, default=HERE / "pool_scale.md")
    parser.add_argument("--fresh", action="store_true", help="run every size again")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a single size, in this process
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def texts(batch: dict) -> dict:
    """Ray Data UDF: row numbers -> ``position`` and a synthetic ``text`` of 8–16 words, seeded by the number."""
    import numpy as np

    out = []
    for i in batch["id"].tolist():
        rng = np.random.default_rng(i)
        out.append(" ".join(VOCABULARY[j] for j in rng.integers(0, len(VOCABULARY), rng.integers(8, 17))))
    return {"position": batch["id"], "text": np.asarray(out, dtype=object)}


class Sampler(threading.Thread):
    """Peak resident memory of this process and all its descendants, and peak /dev/shm growth."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        import psutil

        self.root = psutil.Process(os.getpid())
        self.shm0 = shutil.disk_usage("/dev/shm").used
        self.peak_rss = self.peak_shm = 0
        self.done = threading.Event()

    def sample(self) -> None:
        import psutil

        rss = 0
        for process in [self.root, *self.root.children(recursive=True)]:
            try:
                rss += process.memory_info().rss
            except psutil.Error:
                pass
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_shm = max(self.peak_shm, shutil.disk_usage("/dev/shm").used - self.shm0)

    def run(self) -> None:
        while not self.done.wait(0.25):
            self.sample()


def run_one(n: int) -> dict:
    import numpy as np
    import psutil
    import ray
    import ray.data

    from xlt.cotrain.loop import collect
    from xlt.cotrain.selection import select
    from xlt.inference import ClassifierSpec, pseudo_label
    from xlt.models import EncoderConfig

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    sampler = Sampler()
    sampler.start()
    blocks = max(2, n // 10_000)
    pool = ray.data.range(n, override_num_blocks=blocks).map_batches(texts, batch_format="numpy")
    spec = ClassifierSpec(model=EncoderConfig(source="tiny:bert", max_length=32), labels=LABELS)
    ds = pseudo_label(pool, spec, batch_size=1024, encode_batch_size=256, num_actors=1, num_cpus=1, threads=2)

    pool_ids = [f"pool/{i}" for i in range(n)]  # the loop state's list of a learner's pool
    ids = np.asarray(pool_ids, dtype=object)
    driver = psutil.Process(os.getpid())
    rss0 = driver.memory_info().rss
    start = time.monotonic()
    first = []
    preds, _ = collect(ds.iter_batches(batch_format="numpy"), ids, LABELS,
                       lambda rows: first.append(time.monotonic()) if not first else None)
    end = time.monotonic()
    collect_rss = driver.memory_info().rss - rss0
    sampler.done.set()
    sampler.join()
    sampler.sample()

    tracemalloc.start()
    before, t0 = tracemalloc.get_traced_memory()[0], time.monotonic()
    own = preds.restrict(pool_ids)
    picked = select("threshold-random", own, threshold=0.0, size=SELECTED, seed=[0, 0, 0])
    taken = set(own.ids[picked].tolist())
    pool_ids = [i for i in pool_ids if i not in taken]
    select_s = time.monotonic() - t0
    select_peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    assert len(preds.ids) == n and len(pool_ids) == n - SELECTED
    ray.shutdown()
    return {"rows": n, "blocks": blocks, "seconds": end - start, "rows_per_s": n / (end - start),
            "first_batch_s": first[0] - start,
            "peak_rss_all_mb": sampler.peak_rss / 2**20, "peak_object_store_mb": sampler.peak_shm / 2**20,
            "driver_collect_rss_mb": collect_rss / 2**20,
            "driver_select_peak_mb": select_peak / 2**20, "select_s": select_s}


def commit() -> str:
    """The checked-out commit (short hash), with ``+`` if the work tree has changes."""
    run = lambda *args: subprocess.run(["git", *args], cwd=HERE.parent, capture_output=True, text=True).stdout.strip()
    return run("rev-parse", "--short", "HEAD") + ("+" if run("status", "--porcelain", "--", "platform", "benchmarks") else "")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.one is not None:
        args.result.write_text(json.dumps(run_one(args.one)))
        return
    store = args.out.with_suffix(".json")
    runs = [] if not store.is_file() else json.loads(store.read_text())["runs"]
    version = commit()
    if args.fresh:
        runs = [r for r in runs if r["commit"] != version]
    for n in args.sizes:
        if any(r["rows"] == n and r["commit"] == version for r in runs):
            print(f"{n:,} rows: done already at {version} ({store})", file=sys.stderr)
            continue
        result = args.out.with_suffix(f".{n}.tmp.json")
        load = load_average()
        proc = subprocess.run([sys.executable, __file__, "--one", str(n), "--result", str(result)],
                              env={**os.environ, "RAY_ADDRESS": ""})
        if proc.returncode != 0:
            sys.exit(f"the run of {n:,} rows failed (exit {proc.returncode})")
        runs.append({**json.loads(result.read_text()), "commit": version, "load_before": load,
                     "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
        result.unlink()
        store.write_text(json.dumps({"command": command_line(), "cpu": cpu_model(), "runs": runs}, indent=1))
        print(f"{n:,} rows: {runs[-1]['rows_per_s']:.0f} rows/s", file=sys.stderr)
    tables = []
    for version in dict.fromkeys(r["commit"] for r in sorted(runs, key=lambda r: r["finished"])):
        table = markdown_table([{
            "pool rows": f"{r['rows']:,}", "rows/s": round(r["rows_per_s"]),
            "s to 1st batch": round(r["first_batch_s"], 1) if "first_batch_s" in r else "",
            "peak RSS, all processes (MB)": round(r["peak_rss_all_mb"]),
            "peak object store (MB)": round(r["peak_object_store_mb"]),
            "driver: collect, RSS growth (MB)": round(r["driver_collect_rss_mb"], 1),
            "driver: restrict + select + pool, Python peak (MB)": round(r["driver_select_peak_mb"], 1),
            "select s": round(r["select_s"], 2), "1-min load before": r["load_before"].split()[0]}
            for r in sorted(runs, key=lambda r: r["rows"]) if r["commit"] == version])
        tables.append(f"### At {version}\n\n{table}\n")
    args.out.write_text(f"# Pseudo-labelling pool scale\n\n```\n{command_line()}\n```\n\n{cpu_model()}; "
                        f"see the docstring of benchmarks/pool_scale.py for what is measured.\n\n"
                        + "\n".join(tables))
    print("\n".join(tables))


if __name__ == "__main__":
    main()
