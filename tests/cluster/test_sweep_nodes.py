"""A fine-tuning sweep on a multi-node cluster (``cluster.harness``): its trials train on different
worker nodes, and a node lost under a running trial costs the sweep nothing but time (the trial's
Ray Train run resumes on another node from its latest epoch checkpoint, or Tune runs the trial
again and it resumes from that checkpoint)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from xlt import placement

TRAINED = placement.key("train")  # a trial's report: the node of its training worker (one rank)

pytestmark = pytest.mark.cluster

EPOCHS = 8  # an epoch of 48 rows takes about a second: enough of them that a trial is still running when seen


def registered_checkpoints(out: Path) -> dict[str, tuple[int, dict]]:
    """Trial id -> (epoch, the metrics its Ray Train run reported with that epoch's checkpoint), for
    the checkpoint each trial's run has registered now: the latest in its checkpoint manager's
    snapshot, which Ray Train writes once its controller has taken the report. (A checkpoint's
    directory appears earlier, when the worker uploads it; a node lost between the two leaves a run
    with nothing to resume from.)"""
    found: dict[str, tuple[int, dict]] = {}
    for path in out.glob("trial_*/finetune/checkpoint_manager_snapshot.json"):
        try:
            latest = json.loads(path.read_text())["latest_checkpoint_result"]
        except (OSError, json.JSONDecodeError):  # being written
            continue
        if latest is None:
            continue
        epoch = int(latest["checkpoint_dir_name"].removeprefix("epoch").split("-")[0])
        found[path.parts[-3].removeprefix("trial_")] = (epoch, latest["metrics"])
    return found


def test_a_sweep_spreads_its_trials_and_survives_a_lost_node(head, data_dir, tmp_path):
    out = tmp_path / "sweeps" / "nodes"
    sweep = [sys.executable, str(REPO / "jobs" / "sweep.py"), "--smoke", "--name", "nodes", "--storage",
             str(tmp_path / "sweeps"), "--searcher", "random", "--scheduler", "none", "--no-tracking",
             "--set", f"optim.epochs={EPOCHS}", "--set", "data.max_examples=48", "--set", "scaling.threads=1",
             "--set", "scaling.num_workers=1"]  # each trial's run on a Ray Train worker, not in its trial's process
    workers = head.add_workers(*[(1, None)] * 4)  # two trials' workers, two to spare
    ids = head.node_ids()
    command = head.submit_command({"env_vars": {"XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}},
                                  sweep, "xlt-test-sweep-nodes", working_dir=False)
    log = tmp_path / "job.log"
    with open(log, "w") as sink:
        job = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, env=head.env)
    # Both trials have reported (and checkpointed) an epoch, and one is still training: the node of
    # its training worker fails. The trials' own processes may be there too: then Tune runs them again.
    deadline = time.monotonic() + 300
    first_nodes: dict[str, str] = {}  # trial -> the node of its first epoch seen
    while True:
        reports = registered_checkpoints(out)
        for trial, (_, metrics) in reports.items():
            first_nodes.setdefault(trial, metrics[TRAINED])
        running = [trial for trial, (epoch, _) in reports.items() if epoch < EPOCHS - 1]
        if len(first_nodes) == 2 and running:
            break
        assert job.poll() is None and time.monotonic() < deadline, log.read_text()[-4000:]
        time.sleep(0.2)
    trial = min(running, key=lambda t: reports[t][0])
    lost = reports[trial][1][TRAINED]
    next(node for node in workers if ids[node.name] == lost).kill()
    job.wait(timeout=600)
    logs = log.read_text()
    assert job.returncode == 0, logs[-4000:]

    # The two trials trained side by side, on two different worker nodes (one each: a rank each).
    used = list(first_nodes.values())
    assert len(set(used)) == 2 and set(used) <= {ids[w.name] for w in workers}, used
    result = json.loads((out / "results.json").read_text())
    assert [t["status"] for t in result["trials"]] == ["TERMINATED"] * 2, result["trials"]
    assert all(t["result"]["train/epoch"] == EPOCHS for t in result["trials"])
    # The trial that lost its node finished on another, continuing from a checkpoint, not from scratch.
    (last,) = [t["result"] for t in result["trials"] if t["trial_id"] == trial]
    assert last[TRAINED] != lost and last["train/resumed_from_step"] > 0, last
