"""jobs/cotrain.py --smoke end to end on a fresh local Ray: tables, files, tracking, and a real kill in
the middle of an iteration (its learners' Ray Train runs started) followed by a restart that ends
in the state of an uninterrupted run, with the output on an S3-compatible server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from conftest import REPO
from report.images import assert_a_drawn_png
from tracking.readback import artifacts, event_scalars, metric_steps, mlflow_run
from xlt.storage import read_text

pytestmark = pytest.mark.ray

JOB = [sys.executable, str(REPO / "jobs" / "cotrain.py"), "--smoke", "--set", "task.target_langs=[de, zh]"]


def environment(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", **extra}
    env.pop("RAY_ADDRESS", None)
    return env


def run(out: Path | str, data_dir: Path, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([*JOB, "--set", f"output_dir={out}"], capture_output=True, text=True,
                          env=environment(data_dir, **env), timeout=600, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def state(out: Path | str) -> dict:
    return json.loads(read_text(f"{out}/state.json"))


@dataclass(frozen=True)
class Whole:
    out: Path
    proc: subprocess.CompletedProcess
    mlflow: str


@pytest.fixture(scope="module")
def whole(data_dir, tmp_path_factory) -> Whole:
    """One uninterrupted smoke run: the reference every killed-and-resumed run must end equal to."""
    root = tmp_path_factory.mktemp("cotrain-whole")
    store = f"sqlite:///{root / 'mlflow.db'}"
    return Whole(root / "whole", run(root / "whole", data_dir, MLFLOW_TRACKING_URI=store), store)


def kill_and_resume(out: Path | str, data_dir: Path, checkpointed: Callable[[], bool], resume_cwd: Path | None = None,
                    ) -> subprocess.CompletedProcess:
    """Start the job on ``out``, kill it (its whole process group, local Ray included) once
    ``checkpointed()``, check that it stopped within iteration 1, and run it again from ``resume_cwd``."""
    proc = subprocess.Popen([*JOB, "--set", f"output_dir={out}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=environment(data_dir), start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not checkpointed():
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert state(out)["iteration"] == 1  # killed within iteration 1
    resumed = run(out, data_dir, cwd=resume_cwd)
    assert "resuming" in resumed.stderr
    return resumed


def assert_same_run(out: Path | str, reference: Path) -> None:
    after, before = state(out), state(reference)
    assert after["received"] == before["received"]  # so the same pools
    assert [(h["iteration"], h["learner"]) for h in after["history"]] == [(h["iteration"], h["learner"])
                                                                           for h in before["history"]]


def test_smoke_writes_tables_plots_progress_and_tracking(whole):
    out, proc = whole.out, whole.proc
    assert "### Per iteration (test accuracy)" in proc.stdout and "| emb co-training (iteration 2) |" in proc.stdout
    assert "iteration 2: lm test avg_target" in proc.stderr
    for name in ("results.json", "results.md", "accuracy_per_iteration.png", "config.yaml", "state.json"):
        assert (out / name).is_file(), name
    result = json.loads((out / "results.json").read_text())
    assert "cotrain.py" in result["command"] and len(result["history"]) == 6
    assert {row["phase"] for row in result["phases"]} >= {"start Ray", "fit lm", "pseudo-label and select", "exchange"}
    assert "### Where the time went" in proc.stdout
    assert "\nresume:  " in proc.stdout and "look:    MLflow: mlflow ui --backend-store-uri sqlite:///" in proc.stdout
    # Progress bars (rows, rate, ETA): the driver's pseudo-labelling, a learner's epochs and its evaluation
    # drawn from its Ray Train worker; Ray's own notices are off without --verbose.
    for bar in ("pseudo-label", "lm-iteration0 epoch 1/1", "emb-iteration2 evaluate val"):
        assert bar in proc.stderr, bar
    assert "row/s" in proc.stderr or "rows/s" in proc.stderr
    for noise in ("Started a local Ray instance", "Token authentication", "Failed to query Ray Train",
                  "Reporting training result", "Starting execution of Dataset", "Attempting to start training"):
        assert noise not in proc.stderr, noise

    assert_a_drawn_png(out / "accuracy_per_iteration.png")
    tracked = mlflow_run(whole.mlflow, "cotrain")
    assert tracked.info.status == "FINISHED" and tracked.data.params["selection.threshold"] == "0.0"
    assert metric_steps(whole.mlflow, tracked, "lm/test/acc/avg_target") == [0, 1, 2]  # one per iteration
    assert metric_steps(whole.mlflow, tracked, "emb/epoch/train/loss") == [1, 2, 3]  # each fit's epoch (K = 1)
    assert artifacts(whole.mlflow, tracked) == {"results.json", "results.md", "accuracy_per_iteration.png"}
    scalars = event_scalars(out / "tensorboard")
    assert scalars["lm/test/acc/avg_target"] == [0, 1, 2] and scalars["lm/epoch/train/loss"] == [1, 2, 3]


@pytest.mark.cluster
def test_on_object_storage_a_job_resubmitted_elsewhere_resumes_from_the_store(whole, data_dir, tmp_path, s3):
    # The job killed in an iteration (its local Ray with it), once the LM learner has checkpointed an
    # epoch of its iteration-1 fit (iteration 0 is saved, iteration 1 is not), ends as the uninterrupted
    # run when started again; here with its output on the store and started again elsewhere, the harder
    # case (a local output's learner checkpoints are what tests/cluster/test_node_failure.py watches).
    import pyarrow.fs

    fs, runs = pyarrow.fs.FileSystem.from_uri(f"{s3}/cotrain/learners/lm")

    def lm_checkpointed_in_iteration_1() -> bool:
        found = fs.get_file_info(pyarrow.fs.FileSelector(runs, allow_not_found=True))
        return any(Path(f.path).name.startswith("lm-iteration1-epoch") for f in found)

    # Resubmitted from another working directory: nothing local survives, only what is on the store.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = kill_and_resume(f"{s3}/cotrain", data_dir, lm_checkpointed_in_iteration_1, resume_cwd=elsewhere)
    assert_same_run(f"{s3}/cotrain", whole.out)
    for name in ("results.json", "results.md", "config.yaml"):
        assert read_text(f"{s3}/cotrain/{name}"), name
    assert f"{s3}/cotrain/results.json" in resumed.stdout


def assert_pairs_exchanged(out: Path | str) -> None:
    """A co-training run on XNLI (target languages de, zh) pseudo-labelled pairs and exchanged them
    whole. tests/jobs/test_job_submit.py submits that job with ``ray job submit``."""
    received = state(out)["received"]
    rows = received["lm"] + received["emb"]
    assert rows and all(r["text_pair"] and r["id"].startswith("xnli/") for r in rows)  # pairs travel whole
    assert {r["lang"] for r in rows} <= {"de", "zh"}
