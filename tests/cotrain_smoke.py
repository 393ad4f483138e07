"""The co-training smoke job two test files read, run once a session (``conftest.cotrain_smoke``):
tests/jobs/test_cotrain.py checks what it prints, writes, tracks and exports; tests/cluster/test_node_failure.py
runs the same job on a multi-node cluster through three failures, and its final state must equal this
uninterrupted run's, on a single-node Ray of its own. One run serves both: the job is the suite's
longest single-node one."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO, own_ray_env
from xlt.storage import join, read_text

# 200 rows per language: pool of 400, pseudo-labelled one row per batch, a pass long enough to
# lose a node in its middle; three LM epochs, so that a fit goes on for two after its first checkpoint;
# the LM's precision auto, as the CPU resolves it (bf16 where it has native bf16). The embedding learner fine-tuned
# (a head on its tiny encoder), not the declared probe: the cluster run puts it on a Ray Train worker of its own
# (the declared recipe's smoke: tests/jobs/test_cotrain.py).
JOB = [sys.executable, str(REPO / "jobs" / "cotrain.py"), "--smoke", "--set", "emb.kind=finetune",
       "--set", "task.target_langs=[de, zh]",
       "--set", "iterations=1", "--set", "data.max_examples=200", "--set", "lm.optim.epochs=3",
       "--set", "lm.optim.precision=auto",
       "--set", "lm.scaling.threads=1", "--set", "emb.scaling.threads=1", "--set", "inference.threads=1",
       "--set", "inference.batch_size=1", "--set", "inference.encode_batch_size=1"]


@dataclass(frozen=True)
class SmokeRun:
    out: Path  # output.dir
    proc: subprocess.CompletedProcess
    mlflow_store: str  # its own: a session's fixture comes before any test's store


def state(out: Path | str) -> dict:
    """The co-training loop's saved state (``state.json``) under ``out`` (local or URI)."""
    return json.loads(read_text(join(str(out), "state.json")))


def run_smoke(data_dir: Path, directory: Path) -> SmokeRun:
    """``JOB`` with ``output.export=true``, uninterrupted, from ``directory`` (a job's local files default
    to ``./results``) on a local Ray of its own, into ``directory/cotrain``."""
    out, store = directory / "cotrain", f"sqlite:///{directory / 'mlflow.db'}"
    env = {**own_ray_env(data_dir), "MLFLOW_TRACKING_URI": store}
    proc = subprocess.run([*JOB, "--set", f"output.dir={out}", "--set", "output.export=true"], capture_output=True,
                          text=True, timeout=600, cwd=directory, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return SmokeRun(out, proc, store)
