"""jobs/study.py --smoke end to end on a fresh local Ray, for the baselines: the frozen probe and SetFit units,
each a Tune trial and a child MLflow run, their records and the report, then the same command again, which
runs nothing. The job variants (CE, CE + SCL) over three seeds, stopped and resumed on two nodes:
tests/cluster/test_study_nodes.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO
from report.images import assert_a_drawn_png
from tracking.readback import artifacts, mlflow_run

pytestmark = pytest.mark.ray


def test_the_smoke_study_runs_the_baselines_as_trials_and_reports_them(job_env, tmp_path, mlflow_store):
    out = tmp_path / "study"
    command = [sys.executable, str(REPO / "jobs" / "study.py"), "--smoke", "--output", str(out)]
    proc = subprocess.run([*command, "--only", "probe", "setfit", "--seeds", "0"], capture_output=True, text=True,
                          env=job_env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Before launching: every unit, those --only / --seeds leave out marked, and no estimate yet.
    assert re.search(r"\| setfit-seed0 +\| to run +\| unknown +\|", proc.stdout)
    assert re.search(r"\| setfit-seed2 +\| not this time \(--only / --seeds\) +\| unknown +\|", proc.stdout)
    assert "2 units to run; no finished unit yet to estimate their minutes from" in proc.stdout

    probe, setfit = (json.loads((out / "units" / f"{name}.json").read_text()) for name in ("probe-seed0", "setfit-seed0"))
    assert probe["probe_c"] in (0.1, 1.0, 10.0, 100.0) and probe["model"] == "tiny:bert"
    assert probe["adapt"] == probe["config"]["adapt"] == {"center": True, "rounds": 1, "fraction": 0.5}
    assert setfit["setfit"] == {"num_iterations": 2, "num_epochs": 1, "batch_size": 16, "learning_rate": 2e-5,
                                "train_rows": 16, "pairs": 64, "freeze_word_embeddings": True}
    for record in (probe, setfit):
        (arm,) = record["arms"].values()
        assert set(arm["acc"]) == {"en", "de", "zh", "avg_target"} and len(arm["items"]) == 2 * 16
        assert arm["acc"]["avg_target"] == pytest.approx(sum(map(int, arm["items"])) / len(arm["items"]))
    assert probe["arms"]["probe"]["items_digest"] == setfit["arms"]["setfit"]["items_digest"]  # the same rows

    results = json.loads((out / "results.json").read_text())
    (comparison,) = [c for c in results["comparisons"] if (c["a"], c["b"]) == ("setfit", "probe")]
    assert comparison["seeds"] == "1 / 1" and "provisional: 1 seed" in comparison["verdict"]
    assert results["missing"] == [f"{v}-seed{s}" for v in ("ce", "scl") for s in (0, 1, 2)] + ["setfit-seed1", "setfit-seed2"]
    assert "| SetFit       | 1     |" in proc.stdout and "python jobs/study.py --smoke --output" in proc.stdout
    assert_a_drawn_png(out / "results.png")
    tracked = mlflow_run(mlflow_store, "study")
    assert {"results.md", "results.json", "results.png"} <= artifacts(mlflow_store, tracked)
    from mlflow.tracking import MlflowClient

    trials = MlflowClient(mlflow_store).search_runs(
        [tracked.info.experiment_id], f"tags.`mlflow.parentRunId` = '{tracked.info.run_id}'")
    assert sorted(t.data.params["unit"] for t in trials) == ["probe-seed0", "setfit-seed0"]

    # The same selection again runs nothing, and says what the rest would cost.
    again = subprocess.run([*command, "--only", "probe", "setfit", "--seeds", "0", "--dry-run"], capture_output=True,
                           text=True, env=job_env, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert re.search(r"\| probe-seed0 +\| finished +\|", again.stdout)
    assert "nothing selected is left to run; the rest of the study: 8 units unfinished: about" in again.stdout


def test_the_readmes_dry_run_lists_the_nusax_studys_units_and_runs_nothing(data_dir, tmp_path):
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    # As the README types it, from a directory of its own: the study's output is relative to it.
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "study.py"), "--study",
                           str(REPO / "studies" / "nusax-baselines.yaml"), "--dry-run"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| probe-use-seed0 | to run | unknown |" in proc.stdout and "11 units to run" in proc.stdout
    assert not (tmp_path / "results").exists()  # nothing written
