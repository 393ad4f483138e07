"""Losing a worker node in the middle of a co-training job on a multi-node cluster (``cluster.harness``):
the job finishes, and its final state equals an uninterrupted run's on a single-node Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from cluster.harness import ray_cluster_head
from conftest import REPO

pytestmark = pytest.mark.cluster

JOB = [sys.executable, str(REPO / "jobs" / "cotrain.py"), "--smoke", "--set", "task.target_langs=[de, zh]",
       "--set", "iterations=1", "--set", "lm.optim.epochs=2", "--set", "lm.scaling.threads=1",
       "--set", "emb.scaling.threads=1", "--set", "inference.threads=1"]
# On the cluster, the LM learner's worker needs a node offering ``lm_host`` (two hold one: the
# first, and a spare), the embedding learner's one offering ``emb_host``; two CPUs for the LM
# worker keep the pseudo-labelling actor off the LM's node. It may restart twice.
ON_THE_CLUSTER = ["--set", "lm.scaling.cpus_per_worker=2", "--set", "lm.scaling.resources={lm_host: 1}",
                  "--set", "lm.scaling.max_failures=2", "--set", "emb.scaling.cpus_per_worker=1",
                  "--set", "emb.scaling.resources={emb_host: 1}", "--set", "inference.num_cpus=1"]


def state(out) -> dict:
    return json.loads((out / "state.json").read_text())


def test_a_learner_node_lost_in_the_middle_of_a_fit(data_dir, tmp_path):
    env = {"XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    reference = subprocess.run([*JOB, "--set", f"output_dir={tmp_path / 'reference'}"], capture_output=True,
                               text=True, timeout=600, env={**os.environ, **env, "RAY_ADDRESS": ""})
    assert reference.returncode == 0, reference.stderr[-3000:]

    out = tmp_path / "cluster"
    with ray_cluster_head(cpus=0) as head:
        lm_hosts = [head.add_worker(cpus=2, resources={"lm_host": 1}) for _ in range(2)]  # one is the spare
        head.add_worker(cpus=1, resources={"emb_host": 1})
        head.add_worker(cpus=1)
        ids = head.node_ids()
        command = head.submit_command({"env_vars": env}, [*JOB, *ON_THE_CLUSTER, "--set", f"output_dir={out}"],
                                      "xlt-test-node-failure", working_dir=False)
        log = tmp_path / "job.log"
        with open(log, "w") as sink:
            job = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, env=head.env)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not any((out / "learners" / "lm").glob("lm-iteration1-epoch001-*")):
            assert job.poll() is None, log.read_text()[-4000:]
            time.sleep(0.2)
        # In iteration 1's LM fit, its first epoch checkpointed: the node the LM learner ran on so far
        # (iteration 0's record in the loop state) fails.
        (first,) = [h["nodes"]["fit"] for h in state(out)["history"] if h["learner"] == "lm"][0]
        (lm_node,) = [node for node in lm_hosts if ids[node.name] == first]
        lm_node.kill()
        spare = next(node for node in lm_hosts if node is not lm_node)
        job.wait(timeout=600)
        logs = log.read_text()
        assert job.returncode == 0, logs[-4000:]

    history = json.loads((out / "results.json").read_text())["history"]
    fits = {(h["learner"], h["iteration"]): h["nodes"]["fit"] for h in history}
    assert fits[("lm", 1)] == [ids[spare.name]]  # restored on the spare
    assert "resuming after epoch 1" in logs
    after, before = state(out), state(tmp_path / "reference")
    assert after["received"] == before["received"] and after["pool"] == before["pool"]
    assert [h[k] for h in after["history"] for k in ("iteration", "learner")] == \
        [h[k] for h in before["history"] for k in ("iteration", "learner")]
