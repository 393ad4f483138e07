"""benchmarks/suite_cpu.py: each kind of process the suite starts is told apart by its command line (or the
title Ray gives a worker), and a measured command's CPU is summed per kind."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks.loading import load_benchmark


def test_each_process_is_counted_under_its_kind():
    kind_of = load_benchmark("suite_cpu").kind_of
    assert kind_of(["/repo/.venv/bin/python", "-m", "pytest", "-q"]) == "pytest (the test process)"
    assert kind_of(["/repo/.venv/bin/python", "-m", "pip", "install", "-e", ".[test]"]) == "pip and the install"
    assert kind_of(["python", "/repo/jobs/cotrain.py", "--set", "output.dir=/tmp/pytest-of-root/pytest-3/x"]) == \
        "job drivers (jobs/*.py)"
    assert kind_of(["python", "-c", "print()", "/tmp/pytest-of-root/pytest-3"]) is None
    assert kind_of(["ray::RayTrainWorker.__init__"]) == "Ray Train workers"
    assert kind_of(["ray::TrainController.run"]) == "Ray Train's other actors (controller, ...)"
    assert kind_of(["ray::FitRequests.next"]) == "xlt's actors (mailbox, labellers, ...)"
    assert kind_of(["ray::IDLE"]) == "other Ray workers"
    assert kind_of(["/repo/.venv/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet", "--node"]) == \
        "Ray's per-node processes"
    assert kind_of(["bash"]) is None


def test_a_command_is_measured_and_its_exit_status_kept(tmp_path, monkeypatch):
    module = load_benchmark("suite_cpu")
    output = tmp_path / "cpu.json"
    monkeypatch.setattr(sys, "argv", ["suite_cpu.py", "--out", str(output), "--", sys.executable, "-c",
                                      "import sys, time; time.sleep(0.6); sys.exit(3)"])
    with pytest.raises(SystemExit) as exited:
        module.main()
    assert exited.value.code == 3
    summary = json.loads(output.read_text())
    assert summary["returncode"] == 3 and summary["wall_s"] >= 0.6
    assert 0 <= summary["busy_cores"] <= summary["cores"]
