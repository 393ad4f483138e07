"""Metric names ``<split>/<metric>[/<lang>]`` (xlt.metrics)."""

from __future__ import annotations

import pytest

from xlt.metrics import (ACC, AVG_TARGET, F1, SPLITS, TRANSFER_GAP, VAL_AVG_TARGET_ACC, VAL_TRANSFER_GAP, metric_name,
                         per_language)


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


def test_per_language_reads_a_runs_scores_back_by_language():
    reported = {"train/loss": 0.3, "test/acc/de": 0.5, "test/acc/en": 0.9, "test/acc/avg_target": 0.5,
                "test/f1/de": 0.4, "test/transfer_gap": 0.4, "val/acc/de": 0.6}
    assert per_language(reported, "test") == {"de": 0.5, "en": 0.9, AVG_TARGET: 0.5}
    assert list(per_language(reported, "test")) == ["de", "en", AVG_TARGET]  # as reported
    assert per_language(reported, "test", F1) == {"de": 0.4}
    assert per_language(reported, "val") == {"de": 0.6} and per_language(reported, "train") == {}
