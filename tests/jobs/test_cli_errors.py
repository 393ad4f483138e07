"""Every job turns bad input into one ``error: ...`` line naming the problem, exit status 2, before
Ray starts; ``--debug`` shows the traceback instead."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO

CASES = [
    ("finetune.py", ["--smoke", "--set", "optim.lrr=1"], "optim.lrr"),
    ("pretrain.py", ["--smoke", "--set", "data.alpha=[1'"], "is not valid YAML"),
    ("cotrain.py", ["--smoke", "--set", "selection.policy=best"], "selection.policy"),
    ("sweep.py", ["--smoke", "--space", "search_spaces/none.yaml"], "none.yaml"),
    ("evaluate.py", ["--smoke", "--config", "configs/none.yaml"], "configs/none.yaml does not exist"),
]


def run(job: str, *args: str, data_dir) -> subprocess.CompletedProcess:
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run([sys.executable, str(REPO / "jobs" / job), *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)


@pytest.mark.parametrize("job, args, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_error_line_with_status_2(job, args, message, data_dir):
    proc = run(job, *args, data_dir=data_dir)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_debug_shows_the_traceback(data_dir):
    proc = run("cotrain.py", "--smoke", "--set", "selection.policy=best", "--debug", data_dir=data_dir)
    assert proc.returncode != 0 and "Traceback (most recent call last)" in proc.stderr
