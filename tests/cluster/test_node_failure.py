"""A co-training job on a multi-node cluster (``cluster.harness``): where its parts run, and losing
a worker node, or the driver, in the middle of it. The job finishes (or, resubmitted, resumes from
what is on the object store), and its final state equals an uninterrupted run's on a single-node Ray.

Jobs go in through ``ray job submit`` without an uploaded checkout (``--working-dir .``): on one
machine every node unpacks it into the same session directory, replacing the one the driver runs
in; tests/jobs/test_job_submit.py submits with it to a single node.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cluster.harness import Head, Node
from conftest import REPO
from xlt.storage import join, names, read_text

pytestmark = pytest.mark.cluster

# 200 rows per language: pool of 400, pseudo-labelled one row per batch, a pass long enough to
# lose a node in its middle; three LM epochs, so that a fit goes on for two after its first checkpoint.
JOB = [sys.executable, str(REPO / "jobs" / "cotrain.py"), "--smoke", "--set", "task.target_langs=[de, zh]",
       "--set", "iterations=1", "--set", "data.max_examples=200", "--set", "lm.optim.epochs=3",
       "--set", "lm.scaling.threads=1", "--set", "emb.scaling.threads=1", "--set", "inference.threads=1",
       "--set", "inference.batch_size=1", "--set", "inference.encode_batch_size=1"]
POOL_ROWS = 400
# On the cluster, each learner trains on a Ray Train worker (the smoke preset's learners train in
# the driver, as the reference does: the final states must agree all the same). The LM learner's
# worker needs a node offering ``lm_host`` (two hold one: the first, and a spare), the embedding
# learner's one offering ``emb_host``; two CPUs for the LM worker keep the pseudo-labelling actor
# off the LM's node. It may restart twice.
ON_THE_CLUSTER = ["--set", "lm.scaling.num_workers=1", "--set", "emb.scaling.num_workers=1",
                  "--set", "lm.scaling.cpus_per_worker=2", "--set", "lm.scaling.resources={lm_host: 1}",
                  "--set", "lm.scaling.max_failures=2", "--set", "emb.scaling.cpus_per_worker=1",
                  "--set", "emb.scaling.resources={emb_host: 1}", "--set", "inference.num_cpus=1"]


def env(data_dir) -> dict[str, str]:
    return {"XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}


def state(out: Path | str) -> dict:
    return json.loads(read_text(join(str(out), "state.json")))


@pytest.fixture(scope="module")
def reference(data_dir, tmp_path_factory) -> dict:
    """The final loop state of the same job, uninterrupted, on a single-node Ray."""
    out = tmp_path_factory.mktemp("reference")
    proc = subprocess.run([*JOB, "--set", f"output_dir={out}"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env(data_dir), "RAY_ADDRESS": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return state(out)


def assert_same_state(out: Path | str, reference: dict) -> None:
    """Same received rows (in order, with their pseudo-labels), so the same pools, same records."""
    after = state(out)
    assert after["received"] == reference["received"]
    assert [h[k] for h in after["history"] for k in ("iteration", "learner")] == \
        [h[k] for h in reference["history"] for k in ("iteration", "learner")]


def run_and_kill(head: Head, data_dir, out: Path, log: Path, *victims: Callable[[], Node | None]) -> str:
    """Submit the job; for each of ``victims`` in turn, kill the node it returns as soon as it
    returns one; return the job's log once it has finished (successfully: asserted)."""
    command = head.submit_command({"env_vars": env(data_dir)}, [*JOB, *ON_THE_CLUSTER, "--set", f"output_dir={out}"],
                                  f"xlt-test-{out.name}", working_dir=False)
    with open(log, "w") as sink:
        job = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, env=head.env)
    deadline = time.monotonic() + 300
    for when in victims:
        while (victim := when()) is None:
            assert job.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.2)
        victim.kill()
    job.wait(timeout=600)
    logs = log.read_text()
    assert job.returncode == 0, logs[-4000:]
    return logs


def history(out: Path) -> list[dict]:
    return json.loads((out / "results.json").read_text())["history"]


def test_a_job_spreads_over_the_worker_nodes_and_survives_losing_a_learners_and_a_labellers_node(
        head, data_dir, tmp_path, reference):
    """Where everything runs (the head runs only the driver), and two node failures in one job: the
    LM learner's node after the first epoch of its first fit (Ray Train restarts the worker group on
    the spare LM node, from that epoch's checkpoint), then the pseudo-labelling actor's node while
    the pool streams through it (Ray Data restarts the actor on the other spare)."""
    out = tmp_path / "cotrain"
    nodes = head.add_workers((2, {"lm_host": 1}), (2, {"lm_host": 1}),  # the second: the LM's spare
                             (1, {"emb_host": 1}), (1, None), (1, None))  # the last two: where labelling actors go
    lm_hosts, labellers = nodes[:2], nodes[3:]
    ids = head.node_ids()
    log = tmp_path / "job.log"
    lost: dict[str, str] = {}

    def lm_node_once_its_first_epoch_checkpointed() -> Node | None:
        # The LM's first fit has checkpointed its first epoch: the node of its Ray Train worker
        # (the only one on an lm_host node) fails.
        if not any((out / "learners" / "lm").glob("lm-iteration0-epoch001-*")):
            return None
        hosts = {ids[node.name]: node for node in lm_hosts}
        running = [hosts[a["node_id"]] for a in head.actors()
                   if "RayTrainWorker" in a["class_name"] and a["node_id"] in hosts]
        if len(running) != 1:  # the state API not answering yet
            return None
        lost["lm"] = ids[running[0].name]
        return running[0]

    def node_of_a_labelling_actor() -> Node | None:
        # The first pass has an actor up and some rows predicted (the driver's bar has moved; a
        # block is one row): its node fails.
        done = [float(n) for n in re.findall(r"pseudo-label: +\d+%\|[^|]*\| *([\d.]+)/", log.read_text())]
        if not done or max(done) == 0:
            return None
        for actor in head.actors():
            if "PseudoLabelUDF" in actor["class_name"]:
                node = next((n for n in labellers if ids[n.name] == actor["node_id"]), None)
                if node is not None:
                    lost["labeller"] = ids[node.name]
                    return node
        return None

    logs = run_and_kill(head, data_dir, out, log, lm_node_once_its_first_epoch_checkpointed, node_of_a_labelling_actor)

    (spare,) = [ids[node.name] for node in lm_hosts if ids[node.name] != lost["lm"]]
    fits = {(h["learner"], h["iteration"]): h["nodes"]["fit"] for h in history(out)}
    labelled = {h["learner"]: h["nodes"]["pseudo-label"] for h in history(out) if h["iteration"] == 0}
    # The LM's fit was restored on the spare, from its first epoch, and its worker group stayed
    # there; the embedding learner's stayed where it started.
    assert fits[("lm", 0)] == fits[("lm", 1)] == [spare], fits
    assert re.search(r"resuming after epoch [12] ", logs), logs[-4000:]  # not from scratch
    assert fits[("emb", 0)] == fits[("emb", 1)] == [ids[nodes[2].name]], fits
    # The pass survived its node: rows came from the lost node and from the one that took over, and
    # every pool row was predicted exactly once (each pass checks its row count and id fingerprint).
    assert lost["labeller"] in labelled["lm"] and len(labelled["lm"]) == 2, labelled
    assert sum(labelled["lm"].values()) == POOL_ROWS
    # Each worker node ran something; the head, only the driver.
    used = {lost["lm"]} | {node for ranks in fits.values() for node in ranks} | \
        {node for rows in labelled.values() for node in rows}
    assert used == {ids[node.name] for node in nodes}, (used, ids)
    assert_same_state(out, reference)


def test_the_driver_killed_and_the_job_resubmitted_resumes_from_the_store(head, data_dir, tmp_path, reference, s3):
    import psutil

    out = f"{s3}/cotrain"
    job_env = {**env(data_dir), **{k: v for k, v in os.environ.items() if k.startswith("AWS_")}}
    head.add_workers((2, {"lm_host": 1}), (1, {"emb_host": 1}), (1, None))
    entrypoint = [*JOB, *ON_THE_CLUSTER, "--set", f"output_dir={out}"]
    command = head.submit_command({"env_vars": job_env}, entrypoint, "xlt-test-driver-1", working_dir=False)
    log = tmp_path / "job1.log"
    with open(log, "w") as sink:
        first = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, env=head.env)
    # Iteration 0 is saved on the store and iteration 1's LM fit has checkpointed an epoch: the
    # driver (the job's entrypoint process on the head) dies.
    deadline = time.monotonic() + 300
    while not any(name.startswith("lm-iteration1-epoch") for name in names(f"{out}/learners/lm")):
        assert first.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
        time.sleep(0.5)
    (driver,) = [p for p in psutil.process_iter(["cmdline"])  # not the shell around it, nor the CLI
                 if (p.info["cmdline"] or [])[1:2] == [JOB[1]] and f"output_dir={out}" in p.info["cmdline"]]
    driver.kill()
    first.wait(timeout=120)
    assert first.returncode != 0  # the job failed with its driver

    _, again = head.submit({"env_vars": job_env}, entrypoint, working_dir=False)
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]

    assert f"resuming {out} at iteration 1" in again.stdout + again.stderr
    assert_same_state(out, reference)
