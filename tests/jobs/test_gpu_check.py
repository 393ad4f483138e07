"""``jobs/gpu_check.py`` on a machine without a GPU: it says so and exits 0, writing nothing. (Its rehearsal,
``--smoke``, runs every job's smoke in a venv of a GPU node's versions: ``python -m xlt.wheelhouse rehearse``, not the
suite.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO


def test_without_a_gpu_it_says_so_and_exits_0(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "gpu_check.py"), "--out", str(tmp_path / "check")],
                          capture_output=True, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("gpu_check: no CUDA GPU visible") and "--smoke" in proc.stdout
    assert not (tmp_path / "check").exists()


def test_a_check_whose_budget_ran_out_skips_every_step_and_says_so(tmp_path):
    """The report and log are written whatever happens; a skipped step fails the check."""
    out = tmp_path / "check"
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "gpu_check.py"), "--smoke", "--budget", "0",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    report = (out / "gpu.md").read_text()
    for job in ("finetune", "pretrain", "cotrain", "evaluate", "sweep"):
        assert f"| {job} " in report and f"{job} --smoke: skipped" in (out / "gpu_check.log").read_text()
    assert "## Failed steps" in report and "fine-tuning loop at fp32, input in the step's thread: skipped, the check's --budget ran out" in report


@pytest.mark.parametrize("ahead", [0, 2])
def test_the_fine_tuning_loop_it_times_is_the_engines_epoch_with_its_input_made_here_or_ahead(ahead):
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "jobs" / "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    per_s, steps, waiting = gpu_check.finetune_loop("tiny:bert", "cpu", "fp32", ahead, steps=3, budget=60)
    assert steps == 3 and per_s > 0 and 0 <= waiting < 1
