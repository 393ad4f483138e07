"""Quieting the libraries without importing them: a Ray worker process that never loads a model
must not pay for importing transformers, and one that does gets it quiet."""

import subprocess
import sys

from conftest import REPO

SCRIPT = """
import sys
from xlt.logs import quiet_libraries
quiet_libraries()
assert "transformers" not in sys.modules, "quiet_libraries imported transformers"
from transformers.utils import logging
print(logging.get_verbosity() == logging.ERROR, logging.is_progress_bar_enabled())
"""


def test_quiet_libraries_quiets_transformers_without_importing_it():
    env = {"PYTHONPATH": str(REPO / "platform"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]
