"""A job process started now and waited for later, so that it runs beside a test's other work.

The suite's jobs leave the two cores idle for a good part of their time (Ray start-ups, Ray Train
controllers polling, nodes joining and failing): a job whose result a test needs only at its end
(an independent job of the same module: tests/jobs/test_object_storage.py, test_sweep.py,
test_job_submit.py) starts first and overlaps that idle time (benchmarks/test_time.md, round 5).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Started:
    process: subprocess.Popen
    stdout: Path
    stderr: Path

    def result(self, timeout: float = 600) -> subprocess.CompletedProcess:
        """Wait for the process; what ``subprocess.run(..., capture_output=True, text=True)`` returns."""
        try:
            returncode = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise
        return subprocess.CompletedProcess(self.process.args, returncode, self.stdout.read_text(),
                                           self.stderr.read_text())


@contextmanager
def started(command: Sequence[str], logs: Path, env: dict[str, str], cwd: Path | None = None) -> Iterator[Started]:
    """``command`` running in the background, its stdout and stderr in ``logs``/stdout.log and
    stderr.log; killed on leaving if it has not ended."""
    logs.mkdir(parents=True, exist_ok=True)
    stdout, stderr = logs / "stdout.log", logs / "stderr.log"
    with open(stdout, "w") as out, open(stderr, "w") as err:
        process = subprocess.Popen(list(command), stdout=out, stderr=err, env=env, cwd=cwd)
    try:
        yield Started(process, stdout, stderr)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
