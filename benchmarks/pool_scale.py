"""Co-training's pass over a large unlabelled pool (``xlt.cotrain.pool``): rows/s and memory at 10k, 100k and 1M rows.
Per size N, in a subprocess with a fresh local Ray (2 CPUs), on ten languages of N / 10 synthetic rows: ``put_pool``,
one pseudo-labelling pass of both learners (``tiny:bert``), ``stream_selections`` (every row a candidate, the worst
case), ``Pass.check`` and ``exchange``. A size in the JSON beside ``--out`` for the checked-out commit is not run
again (``--fresh`` reruns it); other commits' runs keep their tables.

    .venv/bin/python benchmarks/pool_scale.py                                  # -> benchmarks/pool_scale.md + .json
    .venv/bin/python benchmarks/pool_scale.py --sizes 2000 --out /tmp/x.md     # checks that it runs
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import psutil
import ray.data

import harness
from ray_data_pool import pseudo_label
from xlt.config import from_dict
from xlt.cotrain import LEARNERS, LoopState, exchange, load_cotrain_config
from xlt.cotrain.pool import put_pool, stream_selections
from xlt.cotrain.selection import Selection
from xlt.inference import ClassifierSpec, InferenceSettings
from xlt.models import EncoderConfig
from xlt.report import markdown_table
from xlt.tasks import TaskConfig, load_task

VOCABULARY = [f"w{i}" for i in range(5000)]
LABELS = ("science", "travel", "politics", "sports", "health", "entertainment", "geography")
LANGS = ("de", "fr", "es", "it", "pt", "nl", "pl", "ru", "zh", "ja")
SELECTED = 234  # the demo's n/3 of 701 labelled rows
BATCH = 1024  # rows per Ray Data batch, and per block of the stored pool (as the loop stores it)


def write_task(root: Path, n: int) -> dict:
    """A files task under ``root``: N pool rows (8–16 words each) over ``LANGS`` and 70 English train rows."""
    rng = np.random.default_rng(0)
    (root / "en").mkdir(parents=True)
    (root / "en" / "train.tsv").write_text("id\ttext\tlabel\n" + "".join(
        f"en{i}\tlabelled sentence {i}\t{LABELS[i % len(LABELS)]}\n" for i in range(70)))
    for k, lang in enumerate(LANGS):
        rows = n // len(LANGS) + (k < n % len(LANGS))
        lengths = rng.integers(8, 17, rows)
        words = np.asarray(VOCABULARY, dtype=object)[rng.integers(0, len(VOCABULARY), (rows, 16))]
        (root / lang).mkdir()
        (root / lang / "pool.tsv").write_text("id\ttext\n" + "".join(
            f"{lang}/{i}\t{' '.join(words[i, :lengths[i]])}\n" for i in range(rows)), encoding="utf-8")
    return {"type": "files", "name": "synthetic", "path": f"{root}/{{lang}}/{{split}}.tsv",
            "fields": {"id": "id", "text": "text", "label": "label"}, "labels": list(LABELS),
            "source_lang": "en", "target_langs": list(LANGS), "splits": {"train": "train", "pool": "pool"}}


def run_one(n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, harness.local_ray(2, address="local"):
        task = load_task(from_dict(TaskConfig, write_task(Path(tmp), n)))
        cfg = load_cotrain_config(None, ["task={type: files, name: synthetic, path: '%s/{lang}/{split}.tsv'}" % tmp])
        ray.data.DataContext.get_current().enable_progress_bars = False
        driver = psutil.Process()
        with harness.Watch(0.25, full=False) as watch:
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
    return {"rows": n, "blocks": len(stored.blocks), "seconds": end - start, "rows_per_s": n / (end - start),
            "first_batch_s": first[0] - start, "put_s": put_s, "exchange_s": exchange_s,
            "peak_rss_all_mb": watch.peak["rss"], "peak_object_store_mb": watch.peak["shm"],
            "driver_put_rss_mb": put_rss / 2**20, "driver_pass_rss_mb": pass_rss / 2**20}


def row(r: dict) -> dict:
    """A table row of one run: the streamed loop's columns, or those of the runs before it (fdea726, 2fdb9fd:
    ``collect`` into ``PoolPredictions`` over a pool made inside Ray Data, then ``restrict`` + ``select``)."""
    return {"pool rows": f"{r['rows']:,}", "rows/s": round(r["rows_per_s"]),
            "s to 1st batch": round(r["first_batch_s"], 1) if "first_batch_s" in r else "",
            "peak RSS, all processes (MB)": round(r["peak_rss_all_mb"]),
            "peak object store (MB)": round(r["peak_object_store_mb"]),
            **({"driver: put_pool, RSS growth (MB)": round(r["driver_put_rss_mb"], 1),
                "put_pool s": round(r["put_s"], 1),
                "driver: pass + selection, RSS growth (MB)": round(r["driver_pass_rss_mb"], 1),
                "exchange s": round(r["exchange_s"], 3)} if "driver_pass_rss_mb" in r else
               {"driver: collect, RSS growth (MB)": round(r["driver_collect_rss_mb"], 1),
                "driver: restrict + select + pool, Python peak (MB)": round(r["driver_select_peak_mb"], 1),
                "select s": round(r["select_s"], 2)}),
            "1-min load before": r["load_before"].split()[0]}


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, "pool_scale.md")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--fresh", action="store_true", help="run every size again")
    args = parser.parse_args(argv)
    git = [subprocess.run(["git", *a], cwd=harness.REPO, capture_output=True, text=True).stdout.strip()
           for a in (("rev-parse", "--short", "HEAD"), ("status", "--porcelain", "platform", "benchmarks"))]
    version = git[0] + ("+" if git[1] else "")  # the checked-out commit, "+" when the code measured has changes
    machine, store = harness.Machine(), args.out.with_suffix(".json")
    os.environ["RAY_ADDRESS"] = ""  # each size's process starts a local Ray, not one this shell names
    runs = json.loads(store.read_text())["runs"] if store.is_file() else []
    runs = [r for r in runs if not (args.fresh and r["commit"] == version)]
    for n in [n for n in args.sizes if not any(r["rows"] == n and r["commit"] == version for r in runs)]:
        load = f"{os.getloadavg()[0]:.2f}"
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as fresh:  # a Ray of its own
            runs.append({**fresh.submit(run_one, n).result(), "commit": version, "load_before": load,
                         "finished": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())})
        store.write_text(json.dumps({**machine.fields(), "runs": runs}, indent=1))
    tables = [f"### At {version}\n\n"
              + markdown_table([row(r) for r in sorted(runs, key=lambda r: r["rows"]) if r["commit"] == version]) + "\n"
              for version in dict.fromkeys(r["commit"] for r in sorted(runs, key=lambda r: r["finished"]))]
    harness.write(args.out, f"{machine.header('Pseudo-labelling pool scale')}\nPeak RSS: every process's, summed "
                  "(shared pages in each: an upper bound); object store: the growth of /dev/shm; driver: its own RSS "
                  "growth over put_pool and over the pass with its selection.\n\n" + "\n".join(tables), show=True)


if __name__ == "__main__":
    main()
