"""jobs/evaluate.py end to end in --smoke mode: table on stdout, JSON + config on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO


def run_job(*args: str, data_dir, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(REPO / "jobs" / "evaluate.py"), *args,
                           "--set", f"output_dir={tmp_path}"], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize("task, columns", [("sib200", "| lang "), ("tatoeba", "| xx->en "), ("mining", "| f1 ")])
def test_smoke(task, columns, data_dir, tmp_path):
    proc = run_job("--task", task, "--smoke", data_dir=data_dir, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"## {task}" in proc.stdout and columns.split()[1] in proc.stdout
    result = json.loads((tmp_path / f"{task}.json").read_text())
    assert result["task"] == task and "evaluate.py" in result["command"]
    assert (tmp_path / "config.yaml").is_file()
    rows = result["rows"]
    assert {r["model"] for r in rows} == {"tiny:bert"}
    if task == "sib200":
        accs = {r["lang"]: r["acc"] for r in rows}
        assert set(accs) == {"en", "de", "zh", "avg_target", "transfer_gap"}
        assert accs["avg_target"] == pytest.approx((accs["de"] + accs["zh"]) / 2)
        assert accs["transfer_gap"] == pytest.approx(accs["en"] - accs["avg_target"])
    elif task == "tatoeba":
        assert [r["lang"] for r in rows] == ["de", "zh", "avg"]
        assert all(0.0 <= r["mean"] <= 1.0 for r in rows)
    else:
        assert [r["lang"] for r in rows] == ["de", "zh"]
        assert all(r["n_tgt"] > r["n_src"] for r in rows)  # distractors were added
        assert "Protocol: BUCC-style mining with the ratio margin" in proc.stdout and "k=4" in proc.stdout


def test_bad_override_is_reported(data_dir, tmp_path):
    proc = run_job("--smoke", "--set", "probe_c=[1, -1]", data_dir=data_dir, tmp_path=tmp_path)
    assert proc.returncode != 0
    assert "is not valid: expected a list of positive numbers" in proc.stderr


def test_unknown_language_is_reported(data_dir, tmp_path):
    proc = run_job("--smoke", "--set", "languages=[en, ko]", data_dir=data_dir, tmp_path=tmp_path)
    assert proc.returncode != 0 and "have no sib200 data" in proc.stderr and "available:" in proc.stderr
