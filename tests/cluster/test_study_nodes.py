"""A study on a multi-node cluster (``cluster.harness``): two variants × two of the smoke study's three seeds
(``--seeds``), two units at a time on two worker nodes, the job stopped mid-way and submitted again; the second
run runs only the units the first had not finished, loses the node under one of them and finishes it on the
other from its latest checkpoint (a Tune trial's node loss, as a sweep's: studies and sweeps run their trials
alike); the report's intervals are a naive bootstrap's over the runs' recorded predictions."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from benchmarks.loading import load_benchmark
from conftest import REPO
from eval.test_stats import naive_bootstrap, naive_seed_item_bootstrap
from xlt.engine.checkpoints import latest_checkpoint, read_metrics
from xlt.metrics import TRAIN_RESUMED_FROM_STEP
from xlt import placement
from xlt.train.workload import read_predictions

pytestmark = pytest.mark.cluster

SEEDS = (0, 1)
UNITS = [f"{variant}-seed{seed}" for variant in ("ce", "scl") for seed in SEEDS]


def correctness(out: Path, variant: str) -> np.ndarray:
    """(seeds, target items) of ``variant``'s runs, from each run's latest checkpoint's predictions, by item id."""
    rows = []
    for seed in SEEDS:
        with latest_checkpoint(out / "runs" / f"{variant}-seed{seed}").as_directory() as checkpoint:
            p = read_predictions(checkpoint)["test"]
        items = sorted((f"{lang}/{i}", gold == predicted) for i, lang, gold, predicted
                       in zip(p["id"], p["lang"], p["label"], p["predicted"]) if lang != "en")
        rows.append([float(hit) for _, hit in items])
    return np.asarray(rows)


def checkpointed(out: Path) -> dict[str, dict]:
    """Unit -> the metrics of its run's latest checkpoint, for the units that have one (an in-process run lists
    its checkpoints once each is complete)."""
    found = {}
    for run in (out / "runs").glob("*"):
        try:
            with latest_checkpoint(run).as_directory() as checkpoint:
                found[run.name] = read_metrics(checkpoint)
        except (FileNotFoundError, ValueError, OSError, json.JSONDecodeError, KeyError):  # none yet, or being written
            continue
    return found


def test_a_study_runs_two_units_at_a_time_and_resumes_after_a_stop(head, data_dir, tmp_path):
    out = tmp_path / "study"
    study = [sys.executable, str(REPO / "jobs" / "study.py"), "--smoke", "--only", "ce", "scl",
             "--seeds", *map(str, SEEDS), "--output", str(out), "--no-tracking",
             "--set", "optim.epochs=30",  # each unit in its trial's process, on the trial's node
             "--set", "optim.lr=0.01"]
    workers = head.add_workers((1, None), (1, None))
    ids = head.node_ids()
    env = {"env_vars": {"XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}}
    log = tmp_path / "first.log"
    with open(log, "w") as sink:
        first = subprocess.Popen(head.submit_command(env, study, "xlt-test-study-1", working_dir=False),
                                 stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, env=head.env)
    # Stopped once two units have finished and others have not: a user's Ctrl+C, or a lost driver.
    deadline = time.monotonic() + 300
    while len(list((out / "units").glob("*.json"))) < 2:
        assert first.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
        time.sleep(0.2)
    stopped = head.ray("job", "stop", "--address", head.address, "xlt-test-study-1")
    assert stopped.returncode == 0, stopped.stderr
    first.wait(timeout=120)
    before = {path.name: path.read_bytes() for path in (out / "units").glob("*.json")}
    assert 2 <= len(before) < len(UNITS), sorted(before)

    log = tmp_path / "second.log"
    with open(log, "w") as sink:
        job = subprocess.Popen(head.submit_command(env, study, "xlt-test-study-2", working_dir=False),
                               stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, env=head.env)
    # A unit of the second run has checkpointed an epoch and has at least 25 left: its node fails before the unit can
    # finish there (a tiny model's epoch in process takes a fraction of a second, and a trial outlives its raylet
    # for a moment).
    deadline = time.monotonic() + 300
    while True:
        running = {unit: metrics for unit, metrics in checkpointed(out).items()
                   if not (out / "units" / f"{unit}.json").exists() and metrics["train/epoch"] < 5}
        if running:
            break
        assert job.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
        time.sleep(0.2)
    lost_unit, metrics = next(iter(running.items()))
    lost = metrics[placement.key("train")]
    next(node for node in workers if ids[node.name] == lost).kill()
    job.wait(timeout=600)
    second = log.read_text()
    assert job.returncode == 0, second[-4000:]

    # The second run ran only what the first had not finished; the finished units' records are untouched.
    invocations = json.loads((out / "study.json").read_text())["invocations"]
    assert len(invocations) == 2 and invocations[0]["units"] == UNITS
    assert sorted(invocations[1]["units"]) == sorted(set(UNITS) - {n.removesuffix(".json") for n in before})
    assert invocations[1]["failed"] == {}
    assert all((out / "units" / name).read_bytes() == data for name, data in before.items())
    # Units ran side by side on the two worker nodes (a unit's 1-CPU bundle: the smoke study trains in process);
    # the unit that lost its node finished on the other, continuing from a checkpoint, not from scratch.
    records = [json.loads((out / "units" / f"{unit}.json").read_text()) for unit in UNITS]
    assert {r["trained_on"] for r in records} == {ids[w.name] for w in workers}
    (moved,) = [r for r in records if r["unit"] == lost_unit]
    assert moved["trained_on"] != lost
    with latest_checkpoint(out / "runs" / lost_unit).as_directory() as checkpoint:
        assert read_metrics(checkpoint)[TRAIN_RESUMED_FROM_STEP] > 0

    # The report's intervals: a naive bootstrap over the runs' own recorded predictions (on which the tiny model's
    # CE and CE + SCL may not differ at all: the report's arithmetic on real differences is tests/study/test_report.py's).
    results = json.loads((out / "results.json").read_text())
    (scl_ce,) = [c for c in results["comparisons"] if (c["a"], c["b"]) == ("scl", "ce")]
    scl, ce = correctness(out, "scl"), correctness(out, "ce")
    for variant, hits in (("scl", scl), ("ce", ce)):  # each record's items are its run's recorded predictions
        assert [[int(c) for c in r["arms"][variant]["items"]] for r in records if r["variant"] == variant] == hits.tolist()
    difference, low, high = scl_ce["interval"]
    assert difference == pytest.approx((scl.mean(0) - ce.mean(0)).mean())
    assert (low, high) == pytest.approx(naive_bootstrap(scl.mean(0) - ce.mean(0), 10_000, 0.95, 0))
    crossed = scl_ce["seed_item_interval"]
    assert crossed[1:] == pytest.approx(naive_seed_item_bootstrap(scl, ce, 10_000, seed=0, matched=True), abs=0.02)
    assert "CE+SCL − CE" in second and "## Units" in second
    # The study's record names each unit's run; a unit's classifier is found through it, its run's record the next hop.
    from xlt.predict import model_spec

    study_record = json.loads((out / "run.json").read_text())
    assert (study_record["job"], study_record["status"]) == ("study", "finished")
    assert study_record["metrics"]["units finished"] == len(UNITS) and study_record["metrics"]["units left"] > 0
    assert study_record["classifiers"] == {unit: {"run": f"runs/{unit}", "classifier": None} for unit in UNITS}
    where, spec = model_spec(out, UNITS[0])
    assert where.startswith(str(out / "runs" / UNITS[0])) and where.endswith("/model.pt") and spec.labels

    # benchmarks/fit.py scores a unit's final checkpoint as the job did: its English test accuracy is the recorded one
    fit = load_benchmark("fit").unit_fit(out / "runs" / "ce-seed0")
    assert fit["test"] == records[0]["arms"]["ce"]["acc"]["en"] and fit["test_rows"] == 16 and fit["train_rows"] == 16
