"""Per-language accuracy and transfer gap (Zhang et al. 2023, §4.6.1), on hand-made inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xlt.eval import TransferSummary, accuracy_by_language, summarize_transfer, to_metrics

# ---- accuracy by language ------------------------------------------------------------------


def test_accuracy_by_language_exact_values():
    y_true = [0, 1, 1, 0, 2, 2, 1]
    y_pred = [0, 1, 0, 0, 2, 1, 1]
    langs = ["en", "en", "en", "de", "de", "fr", "fr"]
    acc = accuracy_by_language(y_true, y_pred, langs)
    assert list(acc) == ["de", "en", "fr"]  # sorted
    assert acc == {"de": 1.0, "en": 2 / 3, "fr": 0.5}
    assert all(type(k) is str and type(v) is float for k, v in acc.items())


def test_accuracy_by_language_string_labels_and_arrays():
    acc = accuracy_by_language(
        np.array(["pos", "neg", "neg", "pos"]),
        np.array(["pos", "pos", "neg", "neg"]),
        np.array(["sw", "sw", "yo", "yo"]),
    )
    assert acc == {"sw": 0.5, "yo": 0.5}


def test_accuracy_by_language_all_wrong_language_is_zero():
    assert accuracy_by_language([1, 1], [0, 1], ["de", "en"]) == {"de": 0.0, "en": 1.0}


def test_accuracy_by_language_errors():
    with pytest.raises(ValueError, match=r"got lengths 3, 2 and 3"):
        accuracy_by_language([0, 1, 1], [0, 1], ["en", "en", "de"])
    with pytest.raises(ValueError, match=r"no examples"):
        accuracy_by_language([], [], [])
    with pytest.raises(ValueError, match=r"y_pred must be 1-D .* got shape \(2, 2\)"):
        accuracy_by_language([0, 1], [[0, 1], [1, 0]], ["en", "de"])
    with pytest.raises(TypeError, match=r"mix text and numeric labels"):
        accuracy_by_language(["pos", "neg"], [0, 1], ["en", "de"])


# ---- transfer summary ----------------------------------------------------------------------


def test_summarize_transfer_gap_is_source_minus_target_mean():
    s = summarize_transfer({"fr": 0.5, "en": 0.9, "de": 0.7}, source_lang="en")
    assert isinstance(s, TransferSummary)
    assert s.source == "en"
    assert s.targets == ("de", "fr")
    assert s.avg_target == pytest.approx(0.6)
    assert s.transfer_gap == pytest.approx(0.3)
    assert s.per_lang == {"de": 0.7, "en": 0.9, "fr": 0.5}


def test_summarize_transfer_other_source_and_negative_gap():
    # A target beating the source gives a negative gap; the source is whichever is named.
    s = summarize_transfer({"en": 0.6, "de": 0.8}, source_lang="de")
    assert s.targets == ("en",)
    assert s.avg_target == 0.6
    assert s.transfer_gap == pytest.approx(0.2)
    s = summarize_transfer({"en": 0.5, "de": 0.75})
    assert s.transfer_gap == pytest.approx(-0.25)


def test_summarize_transfer_errors_name_what_was_given():
    with pytest.raises(ValueError, match=r"source language 'en' not in per_lang \(got: de, fr\)"):
        summarize_transfer({"de": 0.7, "fr": 0.5})
    with pytest.raises(ValueError, match=r"per_lang is empty"):
        summarize_transfer({})
    with pytest.raises(ValueError, match=r"only the source language 'en'"):
        summarize_transfer({"en": 0.9})
    with pytest.raises(ValueError, match=r"non-finite scores: \{'de': nan\}"):
        summarize_transfer({"en": 0.9, "de": math.nan})
    with pytest.raises(ValueError, match=r"'avg_target' is reserved"):
        summarize_transfer({"en": 0.9, "avg_target": 0.5})


def test_to_metrics_names_every_value():
    s = summarize_transfer({"en": 0.9, "de": 0.7, "fr": 0.5})
    assert to_metrics(s, "val") == {
        "val/acc/de": 0.7,
        "val/acc/en": 0.9,
        "val/acc/fr": 0.5,
        "val/acc/avg_target": s.avg_target,
        "val/transfer_gap": s.transfer_gap,
    }
    with pytest.raises(ValueError, match=r"split='dev'"):
        to_metrics(s, "dev")


def test_pipeline_from_predictions_to_metrics():
    y_true = np.array([1, 0, 1, 0, 1, 0, 1, 1])
    y_pred = np.array([1, 0, 1, 0, 1, 1, 0, 0])
    langs = np.array(["en"] * 4 + ["de"] * 2 + ["sw"] * 2)
    metrics = to_metrics(summarize_transfer(accuracy_by_language(y_true, y_pred, langs)), "test")
    # en 4/4, de 1/2, sw 0/2 -> avg_target 0.25, gap 0.75
    assert metrics == {
        "test/acc/de": 0.5,
        "test/acc/en": 1.0,
        "test/acc/sw": 0.0,
        "test/acc/avg_target": 0.25,
        "test/transfer_gap": 0.75,
    }
