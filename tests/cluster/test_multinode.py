"""A job submitted with ``ray job submit`` to a multi-node cluster on this machine (``cluster.harness``):
the head has no CPU, as cluster.yaml's, so every learner's Ray Train worker and every
pseudo-labelling actor runs on a worker node, and the results record which. (Not from an uploaded
checkout, ``--working-dir .``: on one machine every node unpacks it into the same session directory,
replacing the one the driver runs in; tests/jobs/test_job_submit.py submits with it to a single node.)"""

from __future__ import annotations

import json
import os
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.cluster
POOL_ROWS = 24  # the smoke preset's 12 pool rows in each of de and zh


@pytest.fixture
def cluster(head):
    """The head of no CPU (it runs the drivers and Ray's controllers) and three worker nodes of one CPU."""
    head.add_workers(*[(1, None)] * 3)
    return head


def test_cotraining_spreads_its_learners_and_actors_over_the_worker_nodes(cluster, data_dir, tmp_path):
    out = tmp_path / "cotrain"
    # One CPU per learner worker and per pseudo-labelling actor: three nodes of one CPU hold them only spread.
    env = {"env_vars": {"XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1",
                        "MLFLOW_TRACKING_URI": os.environ["MLFLOW_TRACKING_URI"]}}
    _, proc = cluster.submit(env, [
        sys.executable, str(REPO / "jobs" / "cotrain.py"), "--smoke", "--set", "task.target_langs=[de, zh]",
        "--set", "iterations=1", "--set", f"output_dir={out}", "--set", "lm.scaling.cpus_per_worker=1",
        "--set", "emb.scaling.cpus_per_worker=1", "--set", "inference.num_cpus=1"], working_dir=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]

    ids = cluster.node_ids()
    workers = {ids[f"worker{i}"] for i in (1, 2, 3)}
    history = json.loads((out / "results.json").read_text())["history"]
    fits = {(h["learner"], h["iteration"]): h["nodes"]["fit"] for h in history}
    labelled = {h["learner"]: h["nodes"]["pseudo-label"] for h in history if h["iteration"] == 0}
    used = {node for nodes in fits.values() for node in nodes} | {node for rows in labelled.values() for node in rows}
    assert used == workers, (fits, labelled, ids)  # each worker node ran something; the head ran only the driver
    assert fits[("lm", 0)] == fits[("lm", 1)] != fits[("emb", 0)]  # a learner's worker group stays where it started
    # Every pool row was predicted once (the pass checks it), by actors on worker nodes.
    assert sum(labelled["lm"].values()) == POOL_ROWS
