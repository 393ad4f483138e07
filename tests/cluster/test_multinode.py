"""A job submitted with ``ray job submit`` to a multi-node cluster on this machine (``cluster.harness``):
the head has no CPU, as cluster.yaml's, so every learner's Ray Train worker and every
pseudo-labelling actor runs on a worker node, and the results record which. The job runs from the
uploaded checkout, as cluster.yaml's submit command runs it (``--working-dir .``), and succeeds with
its tables in its logs, as tests/jobs/test_job_submit.py checks for fine-tuning."""

from __future__ import annotations

import json

import pytest

from cluster.harness import assert_succeeded_with_a_table, runtime_env

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
    submission_id, proc = cluster.submit(runtime_env(data_dir), [
        "python", "jobs/cotrain.py", "--smoke", "--set", "task.target_langs=[de, zh]",
        "--set", "iterations=1", "--set", f"output_dir={out}", "--set", "lm.scaling.cpus_per_worker=1",
        "--set", "emb.scaling.cpus_per_worker=1", "--set", "inference.num_cpus=1"])
    assert_succeeded_with_a_table(cluster, submission_id, proc,
                                  ["### Per iteration (test accuracy)", "| emb co-training (iteration 1) |"])

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
