"""jobs/sweep.py --smoke end to end on a fresh local Ray: an Optuna + ASHA sweep killed after its first
trial that --resume completes; one stopped by Ctrl+C, whose report tells its unfinished trial from the
finished one, on a sentence-pair task, whose best config is the pair task's. What a finished random sweep prints and writes
(``assert_the_smoke_sweep``) is checked on the one tests/jobs/test_object_storage.py runs on S3."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from background import started
from conftest import REPO, own_ray_env
from report.images import assert_a_drawn_png
from tracking.readback import artifacts, event_scalars, metric_steps, mlflow_run
from xlt.train import load_finetune_config

pytestmark = pytest.mark.ray

JOB = [sys.executable, str(REPO / "jobs" / "sweep.py"), "--smoke"]
TEMPERATURE = "objectives[0].params.temperature"


# Tune saves its state at every step, so a kill loses nothing finished.
EVERY_STEP = {"TUNE_GLOBAL_CHECKPOINT_S": "0"}


def statuses(directory: Path) -> dict[str, str]:
    """Trial id -> status in Tune's newest experiment state file."""
    files = sorted(directory.glob("experiment_state-*.json"))
    if not files:
        return {}
    try:
        data = json.loads(files[-1].read_text())
    except json.JSONDecodeError:  # being rewritten
        return {}
    trials = [json.loads(t[0]) for t in data["trial_data"]]
    return {t["trial_id"]: t["status"] for t in trials}


def assert_the_smoke_sweep(proc: subprocess.CompletedProcess, out: Path, mlflow_store: str) -> None:
    """What ``jobs/sweep.py --smoke --searcher random --scheduler none`` printed and wrote into ``out``
    (its experiment directory, a local copy when it is on a store): two trials of random search (every
    entry sampled, the conditional one applied only when active), the table, the plot, a best config
    that jobs/finetune.py reads, and the tracking. Run by tests/jobs/test_object_storage.py, whose sweep
    is this one with its storage on S3."""
    assert "## Sweep smoke: finetune, random + none, 2 trials" in proc.stdout
    assert f"| trial | status     | {TEMPERATURE} | data.augment.t_c | data.augment.r_c |" in proc.stdout
    assert "resume:  nothing to resume: every trial ended" in proc.stdout  # not a --resume that does nothing
    for name in ("results.md", "results.json", "best.yaml", "best_so_far.png", "sweep.json"):
        assert (out / name).is_file(), name

    result = json.loads((out / "results.json").read_text())
    assert "sweep.py" in result["command"] and len(result["trials"]) == 2
    for trial in result["trials"]:
        assert trial["status"] == "TERMINATED" and trial["error"] is None
        assert 0.0 <= trial["result"]["val/acc/avg_target"] <= 1.0 and trial["result"]["train/epoch"] == 2
        assert 0.1 <= trial["values"][TEMPERATURE] <= 1.0 and 1e-5 <= trial["values"]["optim.lr"] <= 1e-3
        # r_c is conditional on code-switched views: random search samples it, the trial applies it only then
        assert ("data.augment.r_c" in trial["values"]) == (trial["values"]["data.augment.t_c"] == 1)

    # The exported config is the preset (+ smoke preset) with the best trial's values, without sweep_only.
    best = result["best"]["values"]
    cfg = load_finetune_config(out / "best.yaml")
    assert cfg.objectives[0].params["temperature"] == best[TEMPERATURE] and cfg.optim.lr == best["optim.lr"]
    assert cfg.data.augment.t_c == best["data.augment.t_c"]
    assert cfg.model.source == "tiny:bert" and cfg.output.name == "smoke-best"
    assert cfg.scaling.cpus_per_worker == 2  # the preset's: sweep_only set 1 for the trials only

    # MLflow: the sweep's run (its outputs as artifacts) with a nested run per trial (Tune's logger).
    from mlflow.tracking import MlflowClient

    assert_a_drawn_png(out / "best_so_far.png")
    tracked = mlflow_run(mlflow_store, "sweep")
    assert {"best.yaml", "results.md", "results.json", "best_so_far.png"} <= artifacts(mlflow_store, tracked)
    trials = MlflowClient(mlflow_store).search_runs(
        [tracked.info.experiment_id], f"tags.`mlflow.parentRunId` = '{tracked.info.run_id}'")
    assert len(trials) == 2 and all("val/acc/avg_target" in t.data.metrics for t in trials)
    assert metric_steps(mlflow_store, trials[0], "val/acc/avg_target") == [1, 2]  # a report per epoch
    assert event_scalars(out)  # Tune's TensorBoard logger, in the trial directories


def test_killed_sweep_resumes(job_env, tmp_path):
    """Killed, and resumed by another process, each attached to the session's Ray (``job_env``): Ray ends
    the killed driver's trials, as on a cluster."""
    args = ["--storage", str(tmp_path), "--max-concurrent", "1"]
    env = {**job_env, **EVERY_STEP}
    out = tmp_path / "smoke"
    proc = subprocess.Popen([*JOB, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and "TERMINATED" not in statuses(out).values():
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the job's driver
    proc.wait()
    before = statuses(out)
    assert list(before.values()).count("TERMINATED") == 1 and not (out / "results.json").exists()
    finished = next(trial_id for trial_id, status in before.items() if status == "TERMINATED")
    lines = (out / f"trial_{finished}" / "result.json").read_text().splitlines()

    proc = subprocess.run([*JOB, *args, "--resume", "--export"], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "results.json").read_text())
    assert (result["settings"]["searcher"], result["settings"]["scheduler"]) == ("optuna", "asha")
    assert len(result["trials"]) == 2 and all(t["status"] == "TERMINATED" for t in result["trials"])
    assert finished in {t["trial_id"] for t in result["trials"]}
    # the finished trial was kept, not trained again
    assert (out / f"trial_{finished}" / "result.json").read_text().splitlines() == lines
    assert load_finetune_config(out / "best.yaml").objectives[0].params["temperature"] == \
        result["best"]["values"][TEMPERATURE]

    # --export: the best trial's model as its trial left it, which predict and export also find by the sweep
    from xlt.models import Classifier
    from xlt.predict import model_spec
    from xlt.train import load_classifier

    record = json.loads((out / "run.json").read_text())
    assert record["classifiers"]["best"]["run"] == f"trial_{result['best']['trial_id']}/finetune"
    assert record["outputs"]["export classifier"] == "export"
    best = Path(model_spec(out)[0]).parent  # through the sweep's record, then the trial run's
    assert best.parent == out / f"trial_{result['best']['trial_id']}" / "finetune"
    texts = ["der rover fand wasser", "la finale s'est terminée"]
    assert Classifier.from_pretrained(out / "export").predict(texts).labels == load_classifier(best).predict(texts).labels
    assert ["export", "classifier", str(out / "export")] in [line.split() for line in proc.stdout.splitlines()]


def one_of_two_finished(found: dict[str, str]) -> bool:
    """The first trial finished and the second one is made (it cannot finish within a poll: its Ray Train
    worker group takes seconds to start)."""
    return len(found) == 2 and list(found.values()).count("TERMINATED") == 1


@dataclass(frozen=True)
class Interrupted:
    out: Path
    finished: Callable[[], tuple[subprocess.CompletedProcess, bool]]  # the job's end; whether it was stopped in time


@pytest.fixture(scope="module", autouse=True)
def interrupted_sweep(data_dir, tmp_path_factory) -> Iterator[Interrupted]:
    """A sweep over a sentence-pair task (XNLI, lr only), stopped by Ctrl+C once its first trial has
    finished and its second is made. Started with the module, so that it runs beside the killed
    sweep below (two local Rays; the cores are idle for much of each sweep), with a thread of its
    own that watches its trials and sends the SIGINT."""
    storage = tmp_path_factory.mktemp("interrupted")
    args = ["--storage", str(storage), "--max-concurrent", "1", "--searcher", "random", "--scheduler", "none",
            "--space", str(REPO / "search_spaces" / "lr.yaml"), "--config", str(REPO / "configs" / "finetune_xnli.yaml"),
            "--num-samples", "2", "--set", "task.target_langs=[de, zh]"]
    out = storage / "lr-smoke"
    seen = threading.Event()

    # Its own MLflow store: the per-test one (conftest's mlflow_store) is not set up yet for a module's fixture.
    mlruns = tmp_path_factory.mktemp("interrupted-mlruns")
    env = {**own_ray_env(data_dir), **EVERY_STEP, "MLFLOW_TRACKING_URI": f"sqlite:///{mlruns / 'mlflow.db'}"}
    with started([*JOB, *args], tmp_path_factory.mktemp("interrupted-logs"), env) as job:
        def ctrl_c_once_one_of_two_finished() -> None:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and job.process.poll() is None:
                if one_of_two_finished(statuses(out)):
                    seen.set()
                    break
                time.sleep(0.2)
            job.process.send_signal(signal.SIGINT)  # Ctrl+C: Tune saves its state, stops the trials, the job reports

        watcher = threading.Thread(target=ctrl_c_once_one_of_two_finished, daemon=True)
        watcher.start()

        def finished() -> tuple[subprocess.CompletedProcess, bool]:
            watcher.join(timeout=300)
            return job.result(timeout=300), seen.is_set()

        yield Interrupted(out, finished)


def test_a_sweep_stopped_by_ctrl_c_reports_its_unfinished_trials_as_interrupted(interrupted_sweep):
    # It selects on macro-F1, and its best config, exported from the finished trial, is the pair task's.
    proc, stopped_in_time = interrupted_sweep.finished()
    assert stopped_in_time, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    stdout, out = proc.stdout, interrupted_sweep.out
    result = json.loads((out / "results.json").read_text())
    assert sorted(t["status"] for t in result["trials"]) == ["INTERRUPTED", "TERMINATED"]
    assert "best so far (1 of 2 trials interrupted; --resume continues them): trial 0" in stdout
    assert "--resume  (finishes the sweep's unfinished trials)" in stdout
    assert "## Sweep lr-smoke: finetune, random + none, 2 trials" in stdout and "val/f1/avg_target" in stdout
    best = load_finetune_config(out / "best.yaml")
    assert best.task.name == "xnli" and best.task.paired and best.task.target_langs == ("de", "zh")


def test_a_sweep_refuses_evaluation_off_in_one_line_before_ray_starts(data_dir, tmp_path, capsys):
    """A sweep selects on dev after every epoch: a preset without that eval (``evals: []``) is refused first."""
    from jobs.inprocess import assert_one_error_line, run_in_process

    ran = run_in_process("sweep.py", "--smoke", "--set", "evals=[]", "--storage", str(tmp_path / "sweep"),
                         capsys=capsys, data_dir=data_dir)
    assert_one_error_line(ran, "evals=[] is not valid: expected a classification of val scored every epoch")
    assert not (tmp_path / "sweep").exists()
