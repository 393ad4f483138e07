"""A job's ``__main__`` run inside the test process, for the tests about what a job does with its input
rather than about the process boundary: no interpreter start and no imports per run (seconds each
on this machine, benchmarks/test_time.md). Such a job must not start Ray (bad input fails before Ray
starts; evaluation runs without it): starting it fails the run."""

from __future__ import annotations

import logging
import os
import runpy
import subprocess
import sys
from pathlib import Path
from unittest import mock

from conftest import REPO


def run_in_process(job: str, *args: str, capsys, data_dir: Path) -> subprocess.CompletedProcess:
    """``python jobs/<job> <args>`` as ``run_job`` runs it, here: its exit status (``SystemExit``'s
    code, else 0) and what it printed, its log lines on stderr as in a process of its own (the root
    logger starts without handlers, so the job's ``logging.basicConfig`` takes effect). The
    environment, ``sys.argv`` and the root logger are restored afterwards."""
    import ray

    def no_ray(*_, **__):
        raise AssertionError(f"{job} started Ray")

    root = logging.getLogger()
    capsys.readouterr()  # only this run's output
    with mock.patch.dict(os.environ, {"XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}), \
            mock.patch.object(sys, "argv", [str(REPO / "jobs" / job), *args]), \
            mock.patch.object(ray, "init", no_ray), \
            mock.patch.object(root, "handlers", []), mock.patch.object(root, "level", root.level):
        os.environ.pop("RAY_ADDRESS", None)
        try:
            runpy.run_path(str(REPO / "jobs" / job), run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    out = capsys.readouterr()
    return subprocess.CompletedProcess([job, *args], code, out.out, out.err)


def assert_one_error_line(ran: subprocess.CompletedProcess, message: str) -> None:
    """Exit status 2 and exactly one ``error: ...`` line on stderr that contains ``message``."""
    assert ran.returncode == 2, ran.stderr[-2000:]
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message.removeprefix("error: ") in lines[0], lines

