"""Metric names ``<split>/<metric>[/<lang>]`` (xlt.metrics)."""

from __future__ import annotations

import pytest

from xlt.metrics import ACC, AVG_TARGET, SPLITS, TRANSFER_GAP, VAL_AVG_TARGET_ACC, VAL_TRANSFER_GAP, metric_name


def test_metric_names_follow_split_metric_lang():
    assert metric_name("val", ACC, "de") == "val/acc/de"
    assert metric_name("test", ACC, AVG_TARGET) == "test/acc/avg_target"
    assert metric_name("train", TRANSFER_GAP) == "train/transfer_gap"
    assert VAL_AVG_TARGET_ACC == "val/acc/avg_target"
    assert VAL_TRANSFER_GAP == "val/transfer_gap"
    assert SPLITS == ("train", "val", "test")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("dev", ACC), r"split='dev' is not valid: expected one of train, val, test"),
        (("val", ""), r"metric='' is not valid"),
        (("val", "acc/top1"), r"metric='acc/top1' is not valid: expected a non-empty string without '/'"),
        (("val", ACC, "de/ch"), r"lang='de/ch' is not valid"),
        (("val", ACC, ""), r"lang='' is not valid"),
    ],
)
def test_metric_name_rejects_bad_parts(args, match):
    with pytest.raises(ValueError, match=match):
        metric_name(*args)

