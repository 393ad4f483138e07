"""benchmarks/run_difference.py: two dev runs compared item by item, per language and on the target average."""

from __future__ import annotations

import json

import pytest

from benchmarks.loading import load_benchmark
from xlt.engine.checkpoints import METRICS_FILE
from xlt.metrics import TRAIN_EPOCH
from xlt.train.workload import PREDICTIONS_FILE


def checkpoint(tmp_path, name, predicted, ids=("1", "2", "3", "4", "5", "6")):
    directory = tmp_path / name / "epoch002-step0000010"
    directory.mkdir(parents=True)
    (directory / METRICS_FILE).write_text(json.dumps({TRAIN_EPOCH: 2.0}))
    langs, gold = ["en", "en", "de", "de", "fr", "fr"], ["y", "n", "y", "n", "y", "n"]
    (directory / PREDICTIONS_FILE).write_text(json.dumps(
        {"val": {"id": list(ids), "lang": langs, "label": gold, "predicted": list(predicted)}}))
    return directory


def test_the_difference_is_per_language_and_paired_over_the_target_items(tmp_path):
    module = load_benchmark("run_difference")
    a = checkpoint(tmp_path, "a", ["y", "n", "y", "n", "y", "y"])  # en 2/2, de 2/2, fr 1/2
    b = checkpoint(tmp_path, "b", ["y", "y", "n", "n", "n", "y"])  # en 1/2, de 1/2, fr 0/2
    assert module.checkpoint_of(tmp_path / "a", 2) == a
    rows, interval = module.compare(a, b, "val", "en")
    assert [(r["lang"], r["A"], r["B"], r["A − B"]) for r in rows] == [
        ("en", "1.000", "0.500", "+0.500"), ("de", "1.000", "0.500", "+0.500"), ("fr", "0.500", "0.000", "+0.500")]
    assert interval.difference == pytest.approx(0.5)  # the four target items only: 3/4 − 1/4
    assert interval.low <= 0.5 <= interval.high


def test_runs_scored_on_other_items_or_epochs_are_refused(tmp_path):
    module = load_benchmark("run_difference")
    a = checkpoint(tmp_path, "a", ["y"] * 6)
    b = checkpoint(tmp_path, "b", ["y"] * 6, ids=("1", "2", "3", "4", "5", "7"))
    with pytest.raises(SystemExit, match="different val items"):
        module.compare(a, b, "val", "en")
    with pytest.raises(SystemExit, match="not 'test'"):
        module.compare(a, a, "test", "en")
    with pytest.raises(SystemExit, match="no checkpoint of epoch 3; it keeps epoch002-step0000010"):
        module.checkpoint_of(tmp_path / "a", 3)
