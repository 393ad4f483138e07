"""Co-training's pass over a large unlabelled pool (``xlt.cotrain.pool``): rows/s and memory at 10k, 100k and 1M rows.

Per size N, on a ``files`` task of ten languages of N / 10 synthetic rows: ``put_pool``; one pseudo-labelling pass of
both learners (``tiny:bert``, one actor); ``stream_selections`` (every row a candidate, the worst case), ``Pass.check``
and ``exchange``, each size in a subprocess with a fresh local Ray (2 CPUs). A size already in the JSON beside
``--out`` for the checked-out commit is not run again (``--fresh`` reruns it); other commits' runs keep their tables.

    .venv/bin/python benchmarks/pool_scale.py                                  # -> benchmarks/pool_scale.md + .json
    .venv/bin/python benchmarks/pool_scale.py --sizes 2000 --out /tmp/x.md     # checks that it runs
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import harness
from xlt.report import markdown_table

VOCABULARY = [f"w{i}" for i in range(5000)]
LABELS = ("science", "travel", "politics", "sports", "health", "entertainment", "geography")
LANGS = ("de", "fr", "es", "it", "pt", "nl", "pl", "ru", "zh", "ja")
SELECTED = 234  # the demo's n/3 of 701 labelled rows
BATCH = 1024  # rows per Ray Data batch, and per block of the stored pool (as the loop stores it)


def write_task(root: Path, n: int) -> dict:
    """A files task under ``root``: N pool rows (8–16 words each) over ``LANGS`` and 70 English train rows."""
    import numpy as np

    rng = np.random.default_rng(0)
    (root / "en").mkdir(parents=True)
    (root / "en" / "train.tsv").write_text("id\ttext\tlabel\n" + "".join(
        f"en{i}\tlabelled sentence {i}\t{LABELS[i % len(LABELS)]}\n" for i in range(70)))
    for k, lang in enumerate(LANGS):
        rows = n // len(LANGS) + (k < n % len(LANGS))
        lengths = rng.integers(8, 17, rows)
        words = np.asarray(VOCABULARY, dtype=object)[rng.integers(0, len(VOCABULARY), (rows, 16))]
        (root / lang).mkdir()
        with open(root / lang / "pool.tsv", "w", encoding="utf-8") as f:
            f.write("id\ttext\n")
            f.writelines(f"{lang}/{i}\t{' '.join(words[i, :lengths[i]])}\n" for i in range(rows))
    return {"type": "files", "name": "synthetic", "path": f"{root}/{{lang}}/{{split}}.tsv",
            "fields": {"id": "id", "text": "text", "label": "label"}, "labels": list(LABELS),
            "source_lang": "en", "target_langs": list(LANGS), "splits": {"train": "train", "pool": "pool"}}


def run_one(n: int) -> dict:
    import tempfile

    import psutil
    import ray
    import ray.data

    from ray_data_pool import pseudo_label
    from xlt.config import from_dict
    from xlt.cotrain import LEARNERS, LoopState, exchange, load_cotrain_config
    from xlt.cotrain.pool import put_pool, stream_selections
    from xlt.cotrain.selection import Selection
    from xlt.inference import ClassifierSpec, InferenceSettings
    from xlt.models import EncoderConfig
    from xlt.tasks import TaskConfig, load_task

    with tempfile.TemporaryDirectory() as tmp:
        task = load_task(from_dict(TaskConfig, write_task(Path(tmp), n)))
        files = f"task={{type: files, name: synthetic, path: '{tmp}/{{lang}}/{{split}}.tsv'}}"
        cfg = load_cotrain_config(None, [files])
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        driver = psutil.Process()
        with harness.Watch(0.25) as watch:
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
        assert seen.rows == n and all(len(state.received[name]) == SELECTED for name in LEARNERS)
        ray.shutdown()
    return {"rows": n, "blocks": len(stored.blocks), "seconds": end - start, "rows_per_s": n / (end - start),
            "first_batch_s": first[0] - start, "put_s": put_s, "exchange_s": exchange_s,
            "peak_rss_all_mb": watch.peak["rss"], "peak_object_store_mb": watch.peak["shm"],
            "driver_put_rss_mb": put_rss / 2**20, "driver_pass_rss_mb": pass_rss / 2**20}


def commit() -> str:
    """The checked-out commit (short hash), with ``+`` if the work tree has changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=harness.REPO, capture_output=True, text=True).stdout.strip()

    changed = git("status", "--porcelain", "--", "platform", "benchmarks")
    return git("rev-parse", "--short", "HEAD") + ("+" if changed else "")


def row(r: dict) -> dict:
    """A table row of one run: the streamed loop's columns, or those of the runs before it (fdea726, 2fdb9fd:
    ``collect`` into ``PoolPredictions`` over a pool made inside Ray Data, then ``restrict`` + ``select``)."""
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
    parser = harness.parser(__doc__, "pool_scale.md")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--fresh", action="store_true", help="run every size again")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a single size, in this process
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        args.result.write_text(json.dumps(run_one(args.one)))
        return
    machine, store, version = harness.Machine(), args.out.with_suffix(".json"), commit()
    runs = json.loads(store.read_text())["runs"] if store.is_file() else []
    if args.fresh:
        runs = [r for r in runs if r["commit"] != version]
    for n in args.sizes:
        if any(r["rows"] == n and r["commit"] == version for r in runs):
            print(f"{n:,} rows: done already at {version} ({store})", file=sys.stderr)
            continue
        result, load = args.out.with_suffix(f".{n}.tmp.json"), f"{os.getloadavg()[0]:.2f}"
        proc = subprocess.run([sys.executable, __file__, "--one", str(n), "--result", str(result)],
                              env={**os.environ, "RAY_ADDRESS": ""})
        if proc.returncode != 0:
            sys.exit(f"the run of {n:,} rows failed (exit {proc.returncode})")
        runs.append({**json.loads(result.read_text()), "commit": version, "load_before": load,
                     "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
        result.unlink()
        store.write_text(json.dumps({**machine.fields(), "runs": runs}, indent=1))
        print(f"{n:,} rows: {runs[-1]['rows_per_s']:.0f} rows/s", file=sys.stderr)
    tables = [f"### At {version}\n\n"
              + markdown_table([row(r) for r in sorted(runs, key=lambda r: r["rows"]) if r["commit"] == version]) + "\n"
              for version in dict.fromkeys(r["commit"] for r in sorted(runs, key=lambda r: r["finished"]))]
    harness.write(args.out, f"{machine.header('Pseudo-labelling pool scale')}\nSee the docstring of "
                            "benchmarks/pool_scale.py for what runs. Peak RSS sums every process's resident memory "
                            "(shared pages once per process: an upper bound); the object store's peak is the growth "
                            "of /dev/shm; the driver's growth is its own RSS over put_pool and over the pass with "
                            "its selection.\n\n" + "\n".join(tables))
    print("\n".join(tables))


if __name__ == "__main__":
    main()
