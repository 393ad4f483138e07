"""The real Ray autoscaler on this machine (Ray's fake multi-node provider, node types derived from
cluster.yaml): a co-training job submitted to a head with no worker node gets the nodes its learners
and pseudo-labelling actors ask for, and they are removed once idle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from xlt import placement

from cluster.harness import autoscaling_config, ray_cluster_head
from conftest import REPO

pytestmark = pytest.mark.cluster

IDLE_TIMEOUT_MIN = 0.1


def assert_no_worker_node_left(head, tmp_path) -> None:
    """Only the head is alive; else the alive actors, ``ray status`` and the autoscaler's log go to
    ``autoscaling-debug.txt`` beside the test's directory, for whoever reads the failure."""
    left = [n["node_id"] for n in head.alive() if not n["is_head_node"]]
    if left:
        actors = head.ray("list", "actors", "--address", head.address, "--format", "json", "--filter", "state=ALIVE")
        status = head.ray("status", "-v", "--address", head.gcs)
        monitor = head.temp_dir / "session_latest" / "logs" / "monitor.log"
        (tmp_path.parent / "autoscaling-debug.txt").write_text(
            actors.stdout + "\n=====\n" + status.stdout + status.stderr + "\n=====\n" + monitor.read_text()[-20000:])
    assert left == [], f"worker nodes still alive: {left}; see {tmp_path.parent / 'autoscaling-debug.txt'}"


def test_a_cotraining_job_scales_the_cluster_up_from_zero_and_down_after(data_dir, tmp_path):
    out = tmp_path / "cotrain"
    with ray_cluster_head(cpus=0, autoscaling=autoscaling_config(IDLE_TIMEOUT_MIN)) as head:
        assert_no_worker_node_left(head, tmp_path)
        # Both learners ask for a gpu_worker node (cluster.yaml's type; one each), the actor for a CPU: the embedding
        # learner fine-tuned on Ray Train (emb.kind=finetune; the declared probe learner fits in the driver).
        job = [sys.executable, str(REPO / "jobs" / "cotrain.py"), "--smoke", "--set", "emb.kind=finetune",
               "--set", "task.target_langs=[de, zh]",
               "--set", "iterations=1", "--set", f"output.dir={out}",
               "--set", "lm.scaling={num_workers: 1, cpus_per_worker: 1, resources: {gpu_worker: 1}}",
               "--set", "emb.scaling={num_workers: 1, cpus_per_worker: 1, resources: {gpu_worker: 1}}",
               "--set", "inference.num_actors=1", "--set", "inference.num_cpus=1",
               "--set", "probes=[]", "--set", "adapted_probes=[]"]  # the driver's: tests/jobs/test_cotrain.py
        command = head.submit_command({"env_vars": {"XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1",
                                                    "MLFLOW_TRACKING_URI": os.environ["MLFLOW_TRACKING_URI"]}},
                                      job, "xlt-test-autoscaling", working_dir=False)
        log = tmp_path / "job.log"
        with open(log, "w") as sink:
            submitted = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, env=head.env)
        most = 0
        while submitted.poll() is None:
            most = max(most, len([n for n in head.alive() if not n["is_head_node"]]))
            time.sleep(2)
        logs = log.read_text()
        assert submitted.returncode == 0, logs[-4000:]
        assert "it will wait for an autoscaler to add nodes" in logs  # the job said why it waited
        assert most == 3, most  # one gpu_worker node per learner, one more for the actor

        history = json.loads((out / "results.json").read_text())["history"]
        workers = {node for h in history for node in placement.nodes(h, "train")}
        assert len(workers) == 2 and head.node_ids().get("head") not in workers

        # Idle nodes go after the idle timeout (plus the autoscaler's update interval and node shutdown).
        deadline = time.monotonic() + IDLE_TIMEOUT_MIN * 60 + 120
        while [n for n in head.alive() if not n["is_head_node"]] and time.monotonic() < deadline:
            time.sleep(2)
        assert_no_worker_node_left(head, tmp_path)
