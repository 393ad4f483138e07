"""jobs/finetune.py --smoke end to end on a fresh 2-CPU local Ray: table on stdout, JSON + config on
disk, tracking, for sentence pairs (XNLI; single texts, SIB-200, through ``ray job submit`` in
tests/jobs/test_job_submit.py); bad input is one error line, before Ray
starts (run in process: the exit status and stderr of the process itself are tests/jobs/test_cli_errors.py's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from jobs.inprocess import assert_one_error_line, run_in_process
from tracking.readback import artifacts, event_scalars, metric_steps, mlflow_run


def run_job(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "jobs" / "finetune.py"), *args],
                          capture_output=True, text=True, env=env, timeout=600)


# The smoke preset of finetune_sib200.yaml runs through ``ray job submit`` in
# tests/jobs/test_job_submit.py, with the assertions of ``assert_a_smoke_run``.
SMOKE_ARGS = ["--smoke", "--set", "task.target_langs=[de, zh]"]


@pytest.mark.ray
def test_smoke_on_sentence_pairs(job_env, tmp_path, mlflow_store):
    """The smoke run, also exported (``output.export``) and keeping its best epoch on English dev
    (``optim.keep: best-dev``): the export and the run's MLflow model predict what the kept classifier predicts,
    the epoch kept is the first of the best English dev accuracy the run logged, and the ending names it."""
    from mlflow.tracking import MlflowClient

    proc = run_job(job_env, "--config", str(REPO / "configs" / "finetune_xnli.yaml"), *SMOKE_ARGS,
                   "--set", f"output.dir={tmp_path / 'smoke'}", "--set", "output.export=true",
                   "--set", "optim.keep=best-dev")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_a_smoke_run(tmp_path / "smoke", "xnli", proc.stdout, proc.stderr, mlflow_store)
    assert_an_export(tmp_path / "smoke", proc.stdout, mlflow_store)
    kept = json.loads((tmp_path / "smoke" / "results.json").read_text())["metrics"]["train/kept_epoch"]
    # The last epoch's report holds the kept weights' scores, the best by construction.
    dev = [m.value for m in MlflowClient(mlflow_store).get_metric_history(
        mlflow_run(mlflow_store, "finetune").info.run_id, "val/acc/en")]
    assert len(dev) == 2 and kept == 1 + dev.index(max(dev))
    assert f"The weights of epoch {int(kept)} (of 2 trained, 2 set), the best en dev accuracy" in proc.stdout


def assert_an_export(run: Path, stdout: str, mlflow_store: str) -> None:
    import mlflow
    import numpy as np
    import pandas as pd

    from xlt.models import Classifier
    from xlt.train import load_classifier

    pairs = pd.DataFrame({"text": ["a man is playing", "es regnet"], "text_pair": ["someone plays", "die Sonne scheint"]})
    items = list(zip(pairs["text"], pairs["text_pair"]))
    expected = load_classifier(json.loads((run / "results.json").read_text())["checkpoint"]).predict(items)
    exported = Classifier.from_pretrained(run / "export")
    assert exported.paired and exported.predict(items).labels == expected.labels
    (uri,) = [line.split()[-1] for line in stdout.splitlines() if line.strip().startswith("mlflow model")]
    mlflow.set_tracking_uri(mlflow_store)
    served = mlflow.pyfunc.load_model(uri).predict(pairs)
    assert list(served["label"]) == expected.labels
    assert np.abs(served[[f"p_{label}" for label in exported.labels]].to_numpy() - expected.probabilities).max() < 1e-6


def assert_a_smoke_run(run: Path, task: str, stdout: str, stderr: str, mlflow_store: str) -> None:
    """``SMOKE_ARGS`` on ``task`` printed its table and epoch lines and left its results, config,
    checkpoint and tracking in run directory ``run``."""
    assert "| lang " in stdout and "| avg_target " in stdout and "| transfer_gap " in stdout
    assert "epoch 2 | step 4 | loss" in stderr  # the per-epoch progress line of rank 0

    result = json.loads((run / "results.json").read_text())
    assert "finetune.py" in result["command"] and result["config"]["model"]["source"] == "tiny:bert"
    assert result["config"]["task"]["name"] == task
    assert [r["lang"] for r in result["rows"]] == ["en", "de", "zh", "avg_target", "transfer_gap"]
    rows = {r["lang"]: r for r in result["rows"]}
    for column in ("val acc", "val f1", "test acc", "test f1"):
        assert all(0.0 <= rows[lang][column] <= 1.0 for lang in ("en", "de", "zh"))
        assert abs(rows["avg_target"][column] - (rows["de"][column] + rows["zh"][column]) / 2) < 1e-9
        assert abs(rows["transfer_gap"][column] - (rows["en"][column] - rows["avg_target"][column])) < 1e-9
    metrics = result["metrics"]
    assert metrics["train/epoch"] == 2 and metrics["train/global_step"] == 4  # 16 rows, batch 8, 2 epochs
    assert (run / "config.yaml").is_file()
    assert (run / "epoch002-step0000004" / "model.pt").is_file() and result["checkpoint"].endswith("epoch002-step0000004")

    tracked = mlflow_run(mlflow_store, "finetune")
    assert tracked.info.status == "FINISHED" and tracked.data.params["model.source"] == "tiny:bert"
    assert tracked.data.tags["xlt.checkpoint"] == result["checkpoint"]
    assert metric_steps(mlflow_store, tracked, "train/loss") == [1, 2]  # one per epoch
    assert "val/acc/de" in tracked.data.metrics and artifacts(mlflow_store, tracked) == {"results.json"}
    assert event_scalars(run / "tensorboard")["train/loss"] == [1, 2]


@pytest.mark.parametrize("args, message", [
    (["--set", "task.target_langs=[de, xx]"], "error: task.target_langs: unknown language code 'xx'"),
    (["--set", "data.target_langs=[de]'"], "error: override \"data.target_langs=[de]'\": the value \"[de]'\" is not valid YAML"),
    (["--set", "task.path='{data_dir}/sib200/{lang}/{split}.csv'"], "error: task 'sib200': no data for en under"),
    (["--set", "task.path={data_dir}/x.csv"], "is not valid YAML"),
    (["--set", "task.fields.label=topic"], "missing column 'topic'; columns present: 'index_id', 'category', 'text'"),
    (["--config", "nonexistent.yaml"], "error: config file nonexistent.yaml does not exist"),
])
def test_bad_input_is_one_error_line_before_ray_starts(args, message, data_dir, tmp_path, capsys):
    ran = run_in_process("finetune.py", "--smoke", "--set", f"output.dir={tmp_path / 'run'}", *args,
                         capsys=capsys, data_dir=data_dir)
    assert_one_error_line(ran, message)
    assert not any(tmp_path.iterdir())  # nothing half-written


@pytest.mark.ray
def test_the_readmes_evaluation_off_command_trains_checkpoints_and_exports(job_env, tmp_path, mlflow_store):
    """The README's ``evals=[]`` line as typed, from a checkout's root (its ``results/`` here): production retraining
    trains both epochs, checkpoints, exports and logs its MLflow model, and its ending and ``results.json`` say
    that nothing was scored."""
    from predict.test_readme_commands import readme_commands
    from xlt.report import NOTHING_SCORED

    (typed,) = [args for args in readme_commands("finetune.py") if "evals=[]" in args]
    (tmp_path / "configs").symlink_to(REPO / "configs")
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "finetune.py"), *typed], capture_output=True,
                          text=True, env=job_env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert NOTHING_SCORED in proc.stdout and "mlflow model" in proc.stdout
    run = tmp_path / "results" / "smoke" / "finetune_sib200"
    result = json.loads((run / "results.json").read_text())
    assert (result["scored"], result["rows"], result["metrics"]["train/epoch"]) == (False, [], 2)
    assert (run / "export" / "head.safetensors").is_file() and Path(result["checkpoint"], "model.pt").is_file()
    assert json.loads((run / "run.json").read_text())["status"] == "finished"
