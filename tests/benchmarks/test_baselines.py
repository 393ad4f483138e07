"""benchmarks/baselines.md is what `python benchmarks/baselines.py` (the README's command) makes of the committed
studies' records: run as typed, it writes the same file."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO


def test_the_committed_summary_is_what_the_command_makes_of_the_committed_records():
    summary = REPO / "benchmarks" / "baselines.md"
    committed = summary.read_text(encoding="utf-8")
    try:
        subprocess.run([sys.executable, "benchmarks/baselines.py"], cwd=REPO, check=True, capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(REPO / "platform")})
        assert summary.read_text(encoding="utf-8") == committed
    finally:
        summary.write_text(committed, encoding="utf-8")
