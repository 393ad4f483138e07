"""Training jobs with every output on an S3-compatible server (moto on 127.0.0.1, the standard AWS
variables): ``jobs/pretrain.py --smoke`` end to end (its table, epoch lines, results, checkpoints,
encoder export and tracking), its checkpoints, encoder and results on ``s3://``; fine-tuning loads
that encoder from the store, writes its run there, and is resumed from the store by a job started in
another working directory. A smoke sweep keeps its experiment on the store; it runs beside the
pretrain → finetune chain (``store_sweep``). (Co-training on the store: tests/cluster/test_node_failure.py.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from background import started
from conftest import REPO, S3_BUCKET, own_ray_env
from jobs.test_sweep import assert_the_smoke_sweep
from tracking.readback import artifacts, event_scalars, metric_steps, mlflow_run
from xlt.storage import names, read_text

pytestmark = pytest.mark.cluster


def run(job: str, *args: str, env: dict[str, str], cwd) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / job), *args], capture_output=True, text=True,
                          env=env, timeout=600, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


SWEEP_ARGS = ["--smoke", "--searcher", "random", "--scheduler", "none"]


@dataclass(frozen=True)
class StoreSweep:
    storage: str  # the sweep's --storage on the store
    cwd: Path
    mlflow_store: str
    finished: Callable[[], subprocess.CompletedProcess]


@pytest.fixture(scope="module", autouse=True)
def store_sweep(s3_server, data_dir, tmp_path_factory) -> Iterator[StoreSweep]:
    """The smoke sweep with its storage on S3, started with the module so that it runs beside the
    pretrain → finetune chain (independent of it), with an MLflow store of its own; its test waits
    for it."""
    storage = f"s3://{S3_BUCKET}/sweep-{uuid.uuid4().hex[:8]}/sweeps"
    cwd, uri = tmp_path_factory.mktemp("sweep"), f"sqlite:///{tmp_path_factory.mktemp('sweep-mlruns') / 'mlflow.db'}"
    env = {**own_ray_env(data_dir), **s3_server, "MLFLOW_TRACKING_URI": uri}  # a Ray of its own: beside the chain's jobs
    command = [sys.executable, str(REPO / "jobs" / "sweep.py"), *SWEEP_ARGS, "--storage", storage]
    with started(command, tmp_path_factory.mktemp("sweep-logs"), env, cwd=cwd) as job:
        yield StoreSweep(storage, cwd, uri, job.result)


def test_pretrain_then_finetune_and_resume_with_every_output_on_the_store(s3, job_env, tmp_path, mlflow_store):
    """Three jobs, one after the other, attached to the session's Ray (``job_env``), whose workers see the
    S3 server as the jobs do."""
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir(), elsewhere.mkdir()
    proc = run("pretrain.py", "--smoke", "--set", f"output.dir={s3}/pretrain",
               env=job_env, cwd=here)
    assert "| pair " in proc.stdout and "| en-de " in proc.stdout and "| fr " in proc.stdout
    assert "epoch 2 | step 4 | loss" in proc.stderr and "tatoeba fr" in proc.stderr  # rank 0's epoch lines
    result = json.loads(read_text(f"{s3}/pretrain/results.json"))
    assert "pretrain.py" in result["command"] and result["config"]["recipe"] == "veco2"
    assert result["config"]["data"]["train_rows"] == 24 and result["mixture"][0]["drawn"] == 24
    metrics = result["metrics"]
    assert metrics["train/epoch"] == 2 and metrics["train/global_step"] == 4  # 24 pairs, 4 micro-batches of 6, 2 per step
    assert {"train/loss/parallel_info_nce", "train/loss/token_alignment", "train/loss/mlm"} <= set(metrics)
    assert 0.0 <= metrics["val/tatoeba/fr"] <= 1.0 and metrics["val/tatoeba/avg"] == metrics["val/tatoeba/fr"]
    checkpoint = f"{s3}/pretrain/epoch002-step0000004"
    assert result["checkpoint"].endswith("pretrain/epoch002-step0000004") and "model.pt" in names(checkpoint)
    encoder = result["encoder"]
    assert encoder == f"{checkpoint}/encoder" and "config.json" in names(encoder)
    assert json.loads(read_text(f"{encoder}/xlt_encoder.json")) == {"pooling": "mean", "prefix": ""}
    assert read_text(f"{s3}/pretrain/config.yaml")
    record = json.loads(read_text(f"{s3}/pretrain/run.json"))  # the run's record, on the store beside it
    assert (record["job"], record["status"], record["classifiers"]) == ("pretrain", "finished", {})
    assert record["outputs"]["encoder"] == "epoch002-step0000004/encoder"
    assert re.search(rf"\n  encoder +local:{re.escape(encoder)}\n", proc.stdout)  # the job's last lines
    assert "resume:  python jobs/pretrain.py --resume" in proc.stdout
    tracked = mlflow_run(mlflow_store, "pretrain")
    assert tracked.data.params["recipe"] == "veco2" and tracked.data.tags["xlt.encoder"] == f"local:{encoder}"
    assert metric_steps(mlflow_store, tracked, "train/loss/mlm") == [1, 2]
    assert artifacts(mlflow_store, tracked) == {"results.json"}
    # TensorBoard writes local files: for an output on a store, under the local tracking directory.
    (log_dir,) = re.findall(r"look: +TensorBoard: tensorboard --logdir (\S+)", proc.stdout)
    assert event_scalars(Path(log_dir))["val/tatoeba/fr"] == [1, 2]

    proc = run("finetune.py", "--smoke", "--set", f"model.source=local:{encoder}", "--set", f"output.dir={s3}/finetune",
               env=job_env, cwd=here)
    first = json.loads(read_text(f"{s3}/finetune/results.json"))
    assert first["config"]["model"]["source"] == f"local:{encoder}" and "| avg_target " in proc.stdout
    assert first["metrics"]["train/epoch"] == 2 and first["metrics"]["train/global_step"] == 4
    assert f"{s3}/finetune/results.json" in proc.stdout

    # Resumed from the store by a job in another directory: nothing local to either job is shared.
    proc = run("finetune.py", "--resume", f"{s3}/finetune", "--set", "optim.epochs=3", env=job_env, cwd=elsewhere)
    resumed = json.loads(read_text(f"{s3}/finetune/results.json"))
    assert resumed["metrics"]["train/epoch"] == 3 and resumed["metrics"]["train/global_step"] == 6
    assert "resuming after epoch 2 at global step 4" in proc.stderr
    record = json.loads(read_text(f"{s3}/finetune/run.json"))
    assert (record["job"], record["status"], record["default"]) == ("finetune", "finished", "model")
    assert record["classifiers"]["model"]["spec"]["state"] == "epoch003-step0000006/model.pt"
    assert record["metrics"]["train/global_step"] == 6 and record["outputs"]["results"] == "results.json"
    assert not list(elsewhere.rglob("*.pt"))  # checkpoints live on the store only


def test_a_sweep_keeps_its_experiment_trials_and_best_config_on_the_store(store_sweep, s3, data_dir, tmp_path):
    import pyarrow.fs

    proc = store_sweep.finished()
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = f"{store_sweep.storage}/smoke"
    copy = tmp_path / "copy"
    pyarrow.fs.copy_files(out, str(copy))
    assert_the_smoke_sweep(proc, copy, store_sweep.mlflow_store)  # what a random smoke sweep prints and writes
    found = names(out)
    assert {"results.md", "results.json", "best.yaml", "best_so_far.png", "sweep.json"} <= set(found)
    assert any(name.startswith("experiment_state-") for name in found)
    trials = [name for name in found if name.startswith("trial_")]
    assert len(trials) == 2 and all("finetune" in names(f"{out}/{trial}") for trial in trials)  # each trial's run
    result = json.loads(read_text(f"{out}/results.json"))
    assert [t["status"] for t in result["trials"]] == ["TERMINATED", "TERMINATED"]
    assert "output:\n" in read_text(f"{out}/best.yaml")

    command = [sys.executable, str(REPO / "jobs" / "sweep.py"), *SWEEP_ARGS, "--storage", store_sweep.storage]
    again = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "XLT_DATA_DIR": str(data_dir)},
                           timeout=600, cwd=store_sweep.cwd)
    assert again.returncode == 2 and "already holds a sweep: pass --resume" in again.stderr
