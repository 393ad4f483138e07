"""Every job turns bad input into one ``error: ...`` line naming the problem, exit status 2, before
Ray starts; ``--debug`` shows the traceback instead. The process boundary is what is tested here (the
exit status, everything the process writes on stderr, imports' warnings included), so each case is
a process of its own; they start together, and spend their seconds importing on both cores."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO, own_ray_env
from jobs.inprocess import assert_one_error_line

CASES = {
    "finetune.py": (["--smoke", "--set", "optim.lrr=1"], "optim.lrr"),
    "pretrain.py": (["--smoke", "--set", "data.alpha=[1'"], "is not valid YAML"),
    "cotrain.py": (["--smoke", "--set", "selection.policy=best"], "selection.policy"),
    "sweep.py": (["--smoke", "--space", "search_spaces/none.yaml"], "none.yaml"),
    "evaluate.py": (["--smoke", "--config", "configs/none.yaml"], "configs/none.yaml does not exist"),
}
DEBUG = ("cotrain.py", ["--smoke", "--set", "selection.policy=best", "--debug"])


@pytest.fixture(scope="module")
def finished(data_dir) -> dict[str, subprocess.CompletedProcess]:
    """Case (a job's name, or ``debug``) -> its finished process; all started at once."""
    env = own_ray_env(data_dir)
    commands = {job: args for job, (args, _) in CASES.items()} | {"debug": DEBUG[1]}
    started = {case: subprocess.Popen([sys.executable, str(REPO / "jobs" / (DEBUG[0] if case == "debug" else case)),
                                       *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                      cwd=REPO)
               for case, args in commands.items()}
    done = {}
    for case, proc in started.items():
        stdout, stderr = proc.communicate(timeout=300)
        done[case] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return done


@pytest.mark.parametrize("job", list(CASES))
def test_bad_input_is_one_error_line_with_status_2(job, finished):
    assert_one_error_line(finished[job], CASES[job][1])


def test_debug_shows_the_traceback(finished):
    proc = finished["debug"]
    assert proc.returncode != 0 and "Traceback (most recent call last)" in proc.stderr
