"""jobs/pretrain.py --smoke end to end on a fresh 2-CPU local Ray; its encoder then fine-tunes in jobs/finetune.py --smoke."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys

from conftest import REPO
from tracking.readback import artifacts, event_scalars, metric_steps, mlflow_run


def run(job: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "jobs" / job), "--smoke", *args], capture_output=True, text=True,
                          env=env, timeout=600)


def test_smoke_then_finetune_the_pretrained_encoder(data_dir, tmp_path, mlflow_store):
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)
    proc = run("pretrain.py", "--set", f"output.storage_path={tmp_path}", "--set", "output.name=smoke", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| pair " in proc.stdout and "| en-de " in proc.stdout and "| fr " in proc.stdout
    assert "epoch 2 | step 4 | loss" in proc.stderr and "tatoeba fr" in proc.stderr  # rank 0's epoch lines

    run_dir = tmp_path / "smoke"
    result = json.loads((run_dir / "results.json").read_text())
    assert "pretrain.py" in result["command"] and result["config"]["recipe"] == "veco2"
    assert result["config"]["data"]["train_rows"] == 24 and result["mixture"][0]["drawn"] == 24
    metrics = result["metrics"]
    assert metrics["train/epoch"] == 2 and metrics["train/global_step"] == 4  # 24 pairs, 4 micro-batches of 6, 2 per step
    assert {"train/loss/parallel_info_nce", "train/loss/token_alignment", "train/loss/mlm"} <= set(metrics)
    assert 0.0 <= metrics["val/tatoeba/fr"] <= 1.0 and metrics["val/tatoeba/avg"] == metrics["val/tatoeba/fr"]
    checkpoint = run_dir / "epoch002-step0000004"
    assert result["checkpoint"].endswith(checkpoint.name) and (checkpoint / "model.pt").is_file()
    encoder = checkpoint / "encoder"
    assert result["encoder"] == str(encoder) and (encoder / "config.json").is_file()
    assert json.loads((encoder / "xlt_encoder.json").read_text()) == {"pooling": "mean", "prefix": ""}
    assert re.search(rf"\n  encoder +local:{re.escape(str(encoder))}\n", proc.stdout)  # the job's last lines
    assert "resume:  python jobs/pretrain.py --resume" in proc.stdout and "look:    TensorBoard: tensorboard" in proc.stdout
    tracked = mlflow_run(mlflow_store, "pretrain")
    assert tracked.data.params["recipe"] == "veco2" and tracked.data.tags["xlt.encoder"] == f"local:{encoder}"
    assert metric_steps(mlflow_store, tracked, "train/loss/mlm") == [1, 2]
    assert artifacts(mlflow_store, tracked) == {"results.json"}
    assert event_scalars(run_dir / "tensorboard")["val/tatoeba/fr"] == [1, 2]

    proc = run("finetune.py", "--set", f"model.source=local:{encoder}", "--set", f"output.storage_path={tmp_path}",
               "--set", "output.name=finetune", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    finetuned = json.loads((tmp_path / "finetune" / "results.json").read_text())
    assert finetuned["config"]["model"]["source"] == f"local:{encoder}"
    assert finetuned["metrics"]["train/global_step"] == 4 and "| avg_target " in proc.stdout
