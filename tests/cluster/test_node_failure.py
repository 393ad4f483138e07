"""A co-training job on a multi-node cluster (``cluster.harness``): where its parts run, and losing
two worker nodes and then its driver in the middle of it (one job carries all three). Resubmitted
after losing its driver, from another working directory, it resumes from what is on the object
store, and its final state equals an uninterrupted run's on a single-node Ray (``cotrain_smoke``). (The co-training
job's kill-and-resume test: this one; resuming in process, tests/cotrain/test_loop.py.)

Jobs go in through ``ray job submit`` without an uploaded checkout (``--working-dir .``): on one
machine every node unpacks it into the same session directory, replacing the one the driver runs
in; tests/jobs/test_job_submit.py submits with it to a single node.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from cluster.harness import Node
from conftest import REPO
from cotrain_smoke import JOB, state
from xlt import placement
from xlt.storage import join, read_text

pytestmark = pytest.mark.cluster

# On the cluster, each learner trains on a Ray Train worker (the smoke preset's learners train in
# the driver, as the reference does: the final states must agree all the same). The LM learner's
# worker needs a node offering ``lm_host`` (two hold one: the first, and a spare), the embedding
# learner's one offering ``emb_host``; two CPUs for the LM worker keep the pseudo-labelling actor
# off the LM's node. It may restart twice. The pool is labelled by an actor (the smoke preset's, as
# the reference's, in the driver). No probe table at the end: the driver's, not the loop state's
# (tests/jobs/test_cotrain.py asserts it).
ON_THE_CLUSTER = ["--set", "probes=[]", "--set", "lm.scaling.num_workers=1", "--set", "emb.scaling.num_workers=1",
                  "--set", "lm.scaling.cpus_per_worker=2", "--set", "lm.scaling.resources={lm_host: 1}",
                  "--set", "lm.scaling.max_failures=2", "--set", "emb.scaling.cpus_per_worker=1",
                  "--set", "emb.scaling.resources={emb_host: 1}", "--set", "inference.num_actors=1",
                  "--set", "inference.num_cpus=1"]


def env(data_dir) -> dict[str, str]:
    return {"XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def reference(cotrain_smoke) -> dict:
    """The final loop state of the same job, uninterrupted, on a single-node Ray (``cotrain_smoke``,
    which also exports its learners at the end: nothing the state holds)."""
    return state(cotrain_smoke.out)


def assert_same_state(out: Path | str, reference: dict) -> None:
    """Same received rows (in order, with their pseudo-labels), so the same pools, same records."""
    after = state(out)
    assert after["received"] == reference["received"]
    assert [h[k] for h in after["history"] for k in ("iteration", "learner")] == \
        [h[k] for h in reference["history"] for k in ("iteration", "learner")]


def run_from(directory: Path, entrypoint: list[str]) -> list[str]:
    """``entrypoint`` run from ``directory``: without an uploaded checkout the driver runs where the
    head was started (the checkout), and a job's local files default to its ``./results``."""
    directory.mkdir()
    return ["sh", "-c", f"cd {directory} && {shlex.join(entrypoint)}"]


def history(out: str) -> list[dict]:
    return json.loads(read_text(join(out, "results.json")))["history"]


def test_a_job_spreads_over_the_worker_nodes_and_survives_losing_two_nodes_and_its_driver(
        head, data_dir, tmp_path, reference, s3):
    """Where everything runs (the head runs only the driver), and three failures in one job, its
    output on the S3 server: the LM learner's node after the first epoch of its first fit (Ray Train
    restarts the worker group on the spare LM node, from that epoch's checkpoint); the
    pseudo-labelling actor's node while the pool streams through it (Ray restarts the actor on the
    other spare, which loads the pass's weights and labels the rows the lost one had not); the driver
    (the job's entrypoint process on the head), once iteration 0 is saved on the store and iteration
    1's LM fit has checkpointed an epoch. The job fails with its
    driver; the same command submitted again, from another working directory, resumes at iteration
    1 from the store and leaves its outputs there. The final state is the uninterrupted single-node
    run's."""
    import psutil

    out = f"{s3}/cotrain"
    job_env = {**env(data_dir), "MLFLOW_TRACKING_URI": os.environ["MLFLOW_TRACKING_URI"],  # the test's store
               **{k: v for k, v in os.environ.items() if k.startswith("AWS_")}}
    nodes = head.add_workers((2, {"lm_host": 1}), (2, {"lm_host": 1}),  # the second: the LM's spare
                             (1, {"emb_host": 1}), (1, None), (1, None))  # the last two: where labelling actors go
    lm_hosts, labellers = nodes[:2], nodes[3:]
    ids = head.node_ids()
    lost: dict[str, str] = {}
    entrypoint = [*JOB, *ON_THE_CLUSTER, "--set", f"output.dir={out}"]
    command = head.submit_command({"env_vars": job_env}, run_from(tmp_path / "first", entrypoint),
                                  "xlt-test-failures", working_dir=False)
    log = tmp_path / "job.log"

    def lm_checkpoint(prefix: str) -> bool:
        # Registered, not only uploaded: a worker puts its report on a queue the Train controller
        # polls every 2 s, and a checkpoint on the store whose report died with its worker is not
        # one a restart resumes from. The controller's snapshot names each checkpoint it holds.
        # Read while the controller rewrites it, the S3 server has handed back a torn file.
        try:
            snapshot = read_text(join(out, "learners", "lm", "checkpoint_manager_snapshot.json"))
        except UnicodeDecodeError:
            return False
        return snapshot is not None and prefix in snapshot

    def lm_node_once_its_first_epoch_checkpointed() -> Node | None:
        # The LM's first fit has checkpointed its first epoch: the node of its Ray Train worker
        # (the only one on an lm_host node) fails.
        if not lm_checkpoint("lm-iteration0-epoch001-"):
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
            if actor["class_name"] == "LabelWorker":
                node = next((n for n in labellers if ids[n.name] == actor["node_id"]), None)
                if node is not None:
                    lost["labeller"] = ids[node.name]
                    return node
        return None

    def driver_once_iteration_1_checkpointed() -> psutil.Process | None:
        if not lm_checkpoint("lm-iteration1-epoch"):
            return None
        (driver,) = [p for p in psutil.process_iter(["cmdline"])  # not the shell around it, nor the CLI
                     if (p.info["cmdline"] or [])[1:2] == [JOB[1]] and f"output.dir={out}" in p.info["cmdline"]]
        return driver

    with open(log, "w") as sink:
        first = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, env=head.env)
    deadline = time.monotonic() + 400
    for when in (lm_node_once_its_first_epoch_checkpointed, node_of_a_labelling_actor,
                 driver_once_iteration_1_checkpointed):
        while (victim := when()) is None:
            assert first.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.2)
        victim.kill()
    first.wait(timeout=120)
    assert first.returncode != 0  # the job failed with its driver
    assert re.search(r"resuming after epoch [12] ", log.read_text()), log.read_text()[-4000:]  # not from scratch
    assert state(out)["iteration"] == 1  # killed within iteration 1: iteration 0 is saved, iteration 1 is not

    # Submitted again from another working directory: nothing local survives, only what is on the store.
    _, again = head.submit({"env_vars": job_env}, run_from(tmp_path / "elsewhere", entrypoint), working_dir=False)
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    assert f"resuming {out} at iteration 1" in again.stdout + again.stderr
    for name in ("results.json", "results.md", "config.yaml"):
        assert read_text(join(out, name)), name
    assert f"{out}/results.json" in again.stdout  # the job's last lines name its outputs

    (spare,) = [ids[node.name] for node in lm_hosts if ids[node.name] != lost["lm"]]
    fits = {(h["learner"], h["iteration"]): placement.nodes(h, "train") for h in history(out)}
    labelled = {h["learner"]: placement.nodes(h, "pseudo-label") for h in history(out) if h["iteration"] == 0}
    # The LM's first fit was restored on the spare, the resubmitted job's fit ran there too (the only
    # lm_host left); the embedding learner's fits stayed where they started.
    assert fits[("lm", 0)] == fits[("lm", 1)] == [spare], fits
    assert fits[("emb", 0)] == fits[("emb", 1)] == [ids[nodes[2].name]], fits
    # The pass survived its node: rows came from the lost node's actor and from the one that took over
    # on another node, and every pool row was predicted exactly once (each pass checks its row count
    # and id fingerprint, or fails).
    assert lost["labeller"] in labelled["lm"] and len(set(labelled["lm"])) == 2, labelled
    # Each worker node ran something; the head, only the driver.
    used = {lost["lm"]} | {node for ranks in fits.values() for node in ranks} | \
        {node for rows in labelled.values() for node in rows}
    assert used == {ids[node.name] for node in nodes}, (used, ids)
    assert_same_state(out, reference)
