"""Co-training's pass over a large unlabelled pool: rows/s and memory at 10k, 100k and 1M rows.

Run from the repository root on a quiet machine (about 25 minutes on 2 idle cores):

    .venv/bin/python benchmarks/pool_scale.py                                  # writes pool_scale.md + .json
    .venv/bin/python benchmarks/pool_scale.py --sizes 2000 --out /tmp/x.md     # checks that it runs

Resumable: a size already in the JSON beside ``--out`` for the checked-out commit is not run again
(``--fresh`` reruns them). Runs of other commits stay in the JSON and get a table each, so that a
change to the driver's side is shown against the code before it. Each size runs in a subprocess of
its own with a fresh local Ray (2 CPUs), so that no size's memory carries into the next.

What runs, per size N, is what the co-training loop runs (``xlt.cotrain.pool``), on a ``files``
task written to a temporary directory first: the pool split of ten target languages of N / 10
rows each (``text`` of 8–16 words drawn from a fixed vocabulary), a small English train split.

- ``put_pool``: the pool read language by language and put into the object store, a block per batch;
- one pseudo-labelling pass with both learners in each actor (``tiny:bert``, fresh 7-label heads
  of two seeds: throughput and memory do not depend on the weights), one actor, batches of 1,024
  rows, sub-batches of 256;
- ``stream_selections`` into both learners' ``Selection`` (``threshold-random``, t = 0, so every
  row is a candidate, the worst case; n = 234 as the demo), then the exactly-once ``Pass.check``
  and ``exchange`` into a fresh loop state.

Measured:

- rows/s over the pass, and the seconds to the first output batch;
- peak resident memory of all processes (the driver and every Ray process it started: GCS, raylet,
  workers, actors), sampled every 0.25 s. This counts shared pages once per process that maps
  them, so it is an upper bound;
- peak object store use, as the growth of ``/dev/shm`` (where Ray's object store lives here); it
  holds the pool itself now;
- the driver's resident memory growth over ``put_pool`` (one language's rows pass through it) and
  over the pass with its selection, and the seconds of ``put_pool``.

Runs of commits before the loop streamed its pool (fdea726, 2fdb9fd) measured ``collect`` into
``PoolPredictions`` over a pool made inside Ray Data, and ``restrict`` + ``select`` after it; their
tables keep their own columns.
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
from pathlib import Path

from xlt.hardware import cpu_model
from xlt.report import command_line, markdown_table

HERE = Path(__file__).resolve().parent

VOCABULARY = [f"w{i}" for i in range(5000)]
LABELS = ("science", "travel", "politics", "sports", "health", "entertainment", "geography")
SELECTED = 234  # the demo's n/3 of 701 labelled rows
BATCH = 1024  # rows per Ray Data batch, and per block of the stored pool (as the loop stores it)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--out", type=Path, default=HERE / "pool_scale.md")
    parser.add_argument("--fresh", action="store_true", help="run every size again")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a single size, in this process
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


LANGS = ("de", "fr", "es", "it", "pt", "nl", "pl", "ru", "zh", "ja")


def write_task(root: Path, n: int) -> dict:
    """A files task under ``root``: N pool rows over ``LANGS`` and 70 English train rows; its config."""
    import numpy as np

    rng = np.random.default_rng(0)
    english = root / "en"
    english.mkdir(parents=True)
    (english / "train.tsv").write_text("id\ttext\tlabel\n" + "".join(
        f"en{i}\tlabelled sentence {i}\t{LABELS[i % len(LABELS)]}\n" for i in range(70)))
    for k, lang in enumerate(LANGS):
        rows = n // len(LANGS) + (k < n % len(LANGS))
        lengths = rng.integers(8, 17, rows)
        words = np.asarray(VOCABULARY, dtype=object)[rng.integers(0, len(VOCABULARY), (rows, 16))]
        (root / lang).mkdir()
        with open(root / lang / "pool.tsv", "w", encoding="utf-8") as f:
            f.write("id\ttext\n")
            for i in range(rows):
                f.write(f"{lang}/{i}\t{' '.join(words[i, :lengths[i]])}\n")
    return {"type": "files", "name": "synthetic", "path": f"{root}/{{lang}}/{{split}}.tsv",
            "fields": {"id": "id", "text": "text", "label": "label"}, "labels": list(LABELS),
            "source_lang": "en", "target_langs": list(LANGS), "splits": {"train": "train", "pool": "pool"}}


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
    import tempfile

    import psutil
    import ray
    import ray.data

    from xlt.config import from_dict
    from xlt.cotrain import LEARNERS, LoopState, exchange, load_cotrain_config
    from xlt.cotrain.pool import put_pool, stream_selections
    from xlt.cotrain.selection import Selection
    from ray_data_pool import pseudo_label
    from xlt.inference import ClassifierSpec, InferenceSettings
    from xlt.models import EncoderConfig
    from xlt.tasks import TaskConfig, load_task

    with tempfile.TemporaryDirectory() as tmp:
        task = load_task(from_dict(TaskConfig, write_task(Path(tmp), n)))
        cfg = load_cotrain_config(None, [f"task={{type: files, name: synthetic, path: '{tmp}/{{lang}}/{{split}}.tsv'}}"])
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        sampler = Sampler()
        sampler.start()
        driver = psutil.Process(os.getpid())
        rss0, t0 = driver.memory_info().rss, time.monotonic()
        stored = put_pool(task, 0, BATCH)
        put_s, put_rss = time.monotonic() - t0, driver.memory_info().rss - rss0

        specs = {name: ClassifierSpec(model=EncoderConfig(source="tiny:bert", max_length=32, seed=k), labels=LABELS)
                 for k, name in enumerate(LEARNERS)}
        ds = pseudo_label(stored.dataset(), specs, InferenceSettings(batch_size=BATCH, encode_batch_size=256,
                                                                     num_actors=1, num_cpus=1, threads=2))
        chosen = {name: Selection("threshold-random", threshold=0.0, size=SELECTED, seed=[0, 0, k])
                  for k, name in enumerate(LEARNERS)}
        rss0, start, first = driver.memory_info().rss, time.monotonic(), []
        seen = stream_selections(ds.iter_batches(batch_format="pyarrow", batch_size=None), chosen,
                                 done=lambda rows: first.append(time.monotonic()) if not first else None)
        end = time.monotonic()
        seen.check(stored)
        state = LoopState.fresh(LEARNERS)
        exchange(state, chosen, cfg, 0)
        exchange_s = time.monotonic() - end
        pass_rss = driver.memory_info().rss - rss0
        sampler.done.set()
        sampler.join()
        sampler.sample()
        assert seen.rows == n and all(len(state.received[name]) == SELECTED for name in LEARNERS)
        ray.shutdown()
    return {"rows": n, "blocks": len(stored.blocks), "seconds": end - start, "rows_per_s": n / (end - start),
            "first_batch_s": first[0] - start, "put_s": put_s, "exchange_s": exchange_s,
            "peak_rss_all_mb": sampler.peak_rss / 2**20, "peak_object_store_mb": sampler.peak_shm / 2**20,
            "driver_put_rss_mb": put_rss / 2**20, "driver_pass_rss_mb": pass_rss / 2**20}


def commit() -> str:
    """The checked-out commit (short hash), with ``+`` if the work tree has changes."""
    run = lambda *args: subprocess.run(["git", *args], cwd=HERE.parent, capture_output=True, text=True).stdout.strip()
    return run("rev-parse", "--short", "HEAD") + ("+" if run("status", "--porcelain", "--", "platform", "benchmarks") else "")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def row(r: dict) -> dict:
    """A table row of one run: the streamed loop's columns, or those of the runs before it."""
    common = {"pool rows": f"{r['rows']:,}", "rows/s": round(r["rows_per_s"]),
              "s to 1st batch": round(r["first_batch_s"], 1) if "first_batch_s" in r else "",
              "peak RSS, all processes (MB)": round(r["peak_rss_all_mb"]),
              "peak object store (MB)": round(r["peak_object_store_mb"])}
    if "driver_pass_rss_mb" in r:
        return {**common, "driver: put_pool, RSS growth (MB)": round(r["driver_put_rss_mb"], 1),
                "put_pool s": round(r["put_s"], 1),
                "driver: pass + selection, RSS growth (MB)": round(r["driver_pass_rss_mb"], 1),
                "exchange s": round(r["exchange_s"], 3), "1-min load before": r["load_before"].split()[0]}
    return {**common, "driver: collect, RSS growth (MB)": round(r["driver_collect_rss_mb"], 1),
            "driver: restrict + select + pool, Python peak (MB)": round(r["driver_select_peak_mb"], 1),
            "select s": round(r["select_s"], 2), "1-min load before": r["load_before"].split()[0]}


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
        table = markdown_table([row(r) for r in sorted(runs, key=lambda r: r["rows"]) if r["commit"] == version])
        tables.append(f"### At {version}\n\n{table}\n")
    args.out.write_text(f"# Pseudo-labelling pool scale\n\n```\n{command_line()}\n```\n\n{cpu_model()}; "
                        f"see the docstring of benchmarks/pool_scale.py for what is measured.\n\n"
                        + "\n".join(tables))
    print("\n".join(tables))


if __name__ == "__main__":
    main()
