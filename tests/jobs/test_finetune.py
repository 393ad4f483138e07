"""jobs/finetune.py --smoke end to end on a fresh 2-CPU local Ray: table on stdout, JSON + config on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import REPO


def test_smoke(data_dir, tmp_path):
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "finetune.py"), "--smoke",
                           "--set", f"output.storage_path={tmp_path}", "--set", "output.name=smoke"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| lang " in proc.stdout and "| avg_target " in proc.stdout and "| transfer_gap " in proc.stdout
    assert "epoch 2 | step 4 | loss" in proc.stderr  # the per-epoch progress line of rank 0

    run = tmp_path / "smoke"
    result = json.loads((run / "results.json").read_text())
    assert "finetune.py" in result["command"] and result["config"]["model"]["source"] == "tiny:bert"
    assert [r["lang"] for r in result["rows"]] == ["en", "de", "zh", "avg_target", "transfer_gap"]
    rows = {r["lang"]: r for r in result["rows"]}
    for split in ("val", "test"):
        assert all(0.0 <= rows[lang][split] <= 1.0 for lang in ("en", "de", "zh"))
        assert abs(rows["avg_target"][split] - (rows["de"][split] + rows["zh"][split]) / 2) < 1e-9
        assert abs(rows["transfer_gap"][split] - (rows["en"][split] - rows["avg_target"][split])) < 1e-9
    metrics = result["metrics"]
    assert metrics["train/epoch"] == 2 and metrics["train/global_step"] == 4  # 16 rows, batch 8, 2 epochs
    assert (run / "config.yaml").is_file()
    assert (run / "epoch002-step0000004" / "model.pt").is_file() and result["checkpoint"].endswith("epoch002-step0000004")
