"""jobs/cotrain.py --smoke end to end on a fresh local Ray: tables, files, and a real kill in the
middle of an iteration (its learners' Ray Train runs started) followed by a restart that ends in
the state of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO
from report.images import assert_a_drawn_png
from tracking.readback import artifacts, event_scalars, metric_steps, mlflow_run

JOB = [sys.executable, str(REPO / "jobs" / "cotrain.py"), "--smoke", "--set", "task.target_langs=[de, zh]"]


def environment(data_dir: Path) -> dict[str, str]:
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)
    return env


def run(out: Path, data_dir: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([*JOB, "--set", f"output_dir={out}"], capture_output=True, text=True,
                          env=environment(data_dir), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def state(out: Path) -> dict:
    return json.loads((out / "state.json").read_text())


def test_smoke_then_kill_and_resume(data_dir, tmp_path, mlflow_store):
    whole = run(tmp_path / "whole", data_dir)
    assert "### Per iteration (test accuracy)" in whole.stdout and "| emb co-training (iteration 2) |" in whole.stdout
    assert "iteration 2: lm test avg_target" in whole.stderr
    for name in ("results.json", "results.md", "accuracy_per_iteration.png", "config.yaml", "state.json"):
        assert (tmp_path / "whole" / name).is_file(), name
    result = json.loads((tmp_path / "whole" / "results.json").read_text())
    assert "cotrain.py" in result["command"] and len(result["history"]) == 6
    assert {row["phase"] for row in result["phases"]} >= {"start Ray", "fit lm", "pseudo-label emb", "select and exchange"}
    assert "### Where the time went" in whole.stdout
    assert "\nresume:  " in whole.stdout and "look:    MLflow: mlflow ui --backend-store-uri sqlite:///" in whole.stdout
    # Progress bars (rows, rate, ETA): the driver's pseudo-labelling, a learner's epochs and its evaluation
    # drawn from its Ray Train worker; Ray's own notices are off without --verbose.
    for bar in ("pseudo-label lm", "lm-iteration0 epoch 1/1", "emb-iteration2 evaluate val"):
        assert bar in whole.stderr, bar
    assert "row/s" in whole.stderr or "rows/s" in whole.stderr
    for noise in ("Started a local Ray instance", "Token authentication", "Failed to query Ray Train",
                  "Reporting training result", "Starting execution of Dataset", "Attempting to start training"):
        assert noise not in whole.stderr, noise

    assert_a_drawn_png(tmp_path / "whole" / "accuracy_per_iteration.png")
    tracked = mlflow_run(mlflow_store, "cotrain")
    assert tracked.info.status == "FINISHED" and tracked.data.params["selection.threshold"] == "0.0"
    assert metric_steps(mlflow_store, tracked, "lm/test/acc/avg_target") == [0, 1, 2]  # one per iteration
    assert metric_steps(mlflow_store, tracked, "emb/epoch/train/loss") == [1, 2, 3]  # each fit's epoch (K = 1)
    assert artifacts(mlflow_store, tracked) == {"results.json", "results.md", "accuracy_per_iteration.png"}
    scalars = event_scalars(tmp_path / "whole" / "tensorboard")
    assert scalars["lm/test/acc/avg_target"] == [0, 1, 2] and scalars["lm/epoch/train/loss"] == [1, 2, 3]

    # Kill the job (its whole process group, local Ray included) in iteration 1, once the LM learner
    # has checkpointed an epoch of its fit: iteration 0 is saved, iteration 1 is not.
    out = tmp_path / "killed"
    proc = subprocess.Popen([*JOB, "--set", f"output_dir={out}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=environment(data_dir), start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not any((out / "learners" / "lm").glob("lm-iteration1-epoch*")):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert state(out)["iteration"] == 1  # killed within iteration 1
    resumed = run(out, data_dir)
    assert "resuming" in resumed.stderr
    after, before = state(out), state(tmp_path / "whole")
    assert after["received"] == before["received"] and after["pool"] == before["pool"]
    assert [(h["iteration"], h["learner"]) for h in after["history"]] == [(h["iteration"], h["learner"])
                                                                           for h in before["history"]]


def test_a_pool_of_sentence_pairs_is_pseudo_labelled_and_exchanged(data_dir, tmp_path):
    proc = subprocess.run([*JOB, "--config", str(REPO / "configs" / "cotrain_xnli.yaml"), "--set", "iterations=1",
                           "--set", f"output_dir={tmp_path}"], capture_output=True, text=True,
                          env=environment(data_dir), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "## co-training on xnli" in proc.stdout
    received = state(tmp_path)["received"]
    rows = received["lm"] + received["emb"]
    assert rows and all(r["text_pair"] and r["id"].startswith("xnli/") for r in rows)  # pairs travel whole
    assert {r["lang"] for r in rows} <= {"de", "zh"}
