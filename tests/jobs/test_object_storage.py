"""Training jobs with every output on an S3-compatible server (moto on 127.0.0.1, the standard AWS
variables): pretraining's checkpoints, encoder export and results go to ``s3://``; fine-tuning
loads that encoder from the store, writes its run there, and is resumed from the store by a job
started in another working directory. (Co-training on the store: tests/jobs/test_cotrain.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from xlt.storage import names, read_text

pytestmark = pytest.mark.cluster


def run(job: str, *args: str, data_dir, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / job), *args], capture_output=True, text=True,
                          env=env, timeout=600, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_pretrain_then_finetune_and_resume_with_every_output_on_the_store(s3, data_dir, tmp_path):
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir(), elsewhere.mkdir()
    run("pretrain.py", "--smoke", "--set", f"output.storage_path={s3}", "--set", "output.name=pretrain", data_dir=data_dir, cwd=here)
    result = json.loads(read_text(f"{s3}/pretrain/results.json"))
    encoder = result["encoder"]
    assert encoder == f"{s3}/pretrain/epoch002-step0000004/encoder"
    assert json.loads(read_text(f"{encoder}/xlt_encoder.json")) == {"pooling": "mean", "prefix": ""}
    assert read_text(f"{s3}/pretrain/config.yaml")

    proc = run("finetune.py", "--smoke", "--set", f"model.source=local:{encoder}", "--set", f"output.storage_path={s3}",
               "--set", "output.name=finetune", data_dir=data_dir, cwd=here)
    first = json.loads(read_text(f"{s3}/finetune/results.json"))
    assert first["metrics"]["train/epoch"] == 2 and f"{s3}/finetune/results.json" in proc.stdout

    # Resumed from the store by a job in another directory: nothing local to either job is shared.
    proc = run("finetune.py", "--resume", f"{s3}/finetune", "--set", "optim.epochs=3", data_dir=data_dir, cwd=elsewhere)
    resumed = json.loads(read_text(f"{s3}/finetune/results.json"))
    assert resumed["metrics"]["train/epoch"] == 3 and resumed["metrics"]["train/global_step"] == 6
    assert "resuming after epoch 2 at global step 4" in proc.stderr
    assert not list(elsewhere.rglob("*.pt"))  # checkpoints live on the store only


def test_a_sweep_keeps_its_experiment_trials_and_best_config_on_the_store(s3, data_dir, tmp_path):
    args = ["--smoke", "--storage", f"{s3}/sweeps", "--searcher", "random", "--scheduler", "none"]
    proc = run("sweep.py", *args, data_dir=data_dir, cwd=tmp_path)
    assert "## Sweep smoke-smoke: finetune, random + none, 2 trials" in proc.stdout
    out = f"{s3}/sweeps/smoke-smoke"
    found = names(out)
    assert {"results.md", "results.json", "best.yaml", "best_so_far.png", "sweep.json"} <= set(found)
    assert any(name.startswith("experiment_state-") for name in found)
    trials = [name for name in found if name.startswith("trial_")]
    assert len(trials) == 2 and all("finetune" in names(f"{out}/{trial}") for trial in trials)  # each trial's run
    result = json.loads(read_text(f"{out}/results.json"))
    assert [t["status"] for t in result["trials"]] == ["TERMINATED", "TERMINATED"]
    assert "output:\n" in read_text(f"{out}/best.yaml")

    again = subprocess.run([sys.executable, str(REPO / "jobs" / "sweep.py"), *args], capture_output=True, text=True,
                           env={**os.environ, "XLT_DATA_DIR": str(data_dir)}, timeout=600, cwd=tmp_path)
    assert again.returncode == 2 and "already holds a sweep: pass --resume" in again.stderr
