"""``engine.checkpoints.latest_checkpoint``: a run directory's latest checkpoint as the run recorded it,
in process (on Ray Train: tests/engine/test_loop.py), without listing the directory."""

# No `from __future__ import annotations`: the toy workload's module (test_loop) is shipped to Ray's
# workers by value, as there.

from pathlib import Path

import pytest

from engine.test_loop import Regression, ToyConfig, assert_latest_checkpoint, engine_run, toy_rows
from xlt.engine import ScalingSettings, run_dir
from xlt.engine.checkpoints import latest_checkpoint
from xlt.storage import OutputSettings


def test_the_latest_checkpoint_is_the_one_the_run_ended_with(ray_cluster, tmp_path, monkeypatch):
    """In process (on Ray Train, with a restart: tests/engine/test_loop.py's killed worker)."""
    cfg = ToyConfig(scaling=ScalingSettings(num_workers=0), output=OutputSettings(str(tmp_path / "run"), num_to_keep=2))
    result = engine_run(Regression(), cfg, toy_rows())
    assert Path(result.checkpoint.path).name == "epoch002-step0000006"  # two epochs: two checkpoints kept
    assert_latest_checkpoint(result, run_dir(cfg), monkeypatch)


def test_a_directory_without_a_run_records_no_checkpoint(tmp_path):
    (tmp_path / "epoch001-step0000003").mkdir()  # named like a checkpoint, but no run reported it
    for run in (tmp_path, tmp_path / "missing"):
        with pytest.raises(FileNotFoundError, match="records no checkpoint"):
            latest_checkpoint(run)


def test_final_metrics_of_a_rerun_that_reported_none_are_its_last_checkpoints(tmp_path):
    """The rerun of a finished run trains nothing and reports nothing (``Result.metrics`` is None, the issue's
    ``TypeError`` in ``results_rows``): its metrics are those its last checkpoint was written with."""
    import json

    from ray.train import Checkpoint, Result

    from xlt.engine import final_metrics

    (tmp_path / "metrics.json").write_text(json.dumps({"val/acc/en": 0.5}))
    checkpoint = Checkpoint.from_directory(str(tmp_path))
    def result(metrics):
        return Result(metrics=metrics, checkpoint=checkpoint, error=None, path=str(tmp_path))

    assert final_metrics(result(None)) == {"val/acc/en": 0.5}
    assert final_metrics(result({"val/acc/en": 0.7})) == {"val/acc/en": 0.7}
