"""Evaluators by ``type:`` (``xlt.eval.evaluators``) against naive references of what they score,
and the one loop that runs a config's list of them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from xlt.config import ConfigError
from xlt.eval.evaluators import (EVALUATORS, EvalContext, EvalSpec, check_evals, evaluate_all, retrieval,
                                 retrieval_by_language)
from xlt.models import TextEncoder

LABELS = ("a", "b")


class FirstLetter:
    """A classifier that predicts a text's first letter (``a`` or ``b``); pairs: the first text's."""

    labels = list(LABELS)

    def __init__(self, paired: bool = False) -> None:
        self.paired, self.seen = paired, []

    def predict(self, items, batch_size=64, langs=None):
        self.seen.extend(items)
        texts = [item[0] if self.paired else item for item in items]
        return SimpleNamespace(labels=[t[0] for t in texts],
                               probabilities=np.array([[0.9, 0.1] if t[0] == "a" else [0.2, 0.8] for t in texts]))


def labelled_rows():
    texts = ["a1", "b1", "a2", "b2", "b3", "a3"]
    return {"id": [f"r{i}" for i in range(6)], "text": texts, "text_pair": ["x"] * 6,
            "label": ["a", "b", "b", "b", "a", "a"], "lang": ["en", "en", "de", "de", "sw", "sw"]}


def test_classification_scores_each_language_as_a_naive_count_and_keeps_the_predictions():
    rows = labelled_rows()
    result = EVALUATORS["classification"].score(FirstLetter(), rows, EvalSpec("classification", "val"),
                                                EvalContext(source_lang="en"))
    predicted = [t[0] for t in rows["text"]]
    naive = {}
    for lang in ("en", "de", "sw"):
        hits = [p == g for p, g, lg in zip(predicted, rows["label"], rows["lang"]) if lg == lang]
        naive[lang] = sum(hits) / len(hits)
    assert {lang: result.metrics[f"val/acc/{lang}"] for lang in naive} == pytest.approx(naive)  # 1, 0.5, 0
    assert result.metrics["val/acc/avg_target"] == pytest.approx((naive["de"] + naive["sw"]) / 2)
    assert result.metrics["val/transfer_gap"] == pytest.approx(naive["en"] - (naive["de"] + naive["sw"]) / 2)
    assert result.predictions == {"id": rows["id"], "lang": rows["lang"], "label": rows["label"],
                                  "predicted": predicted, "labels": list(LABELS),
                                  "probabilities": [[0.9, 0.1] if p == "a" else [0.2, 0.8] for p in predicted]}


def test_a_paired_classifier_is_given_text_and_text_pair():
    classifier = FirstLetter(paired=True)
    EVALUATORS["classification"].score(classifier, labelled_rows(), EvalSpec("classification", "test"), EvalContext())
    assert classifier.seen[0] == ("a1", "x")


class Lookup:
    """An encoder whose embedding of a sentence is a fixed random vector per sentence; a
    translation (``tr:<s>``) embeds as its source plus ``noise``."""

    def __init__(self, noise: float) -> None:
        self.noise, self.table = noise, {}

    def encode(self, texts, batch_size=64):
        rng = np.random.default_rng(0)
        out = []
        for text in texts:
            base = text.removeprefix("tr:")
            vector = self.table.setdefault(base, rng.normal(size=16) + len(self.table))
            out.append(vector + (self.noise * np.random.default_rng(len(text)).normal(size=16)
                                 if text.startswith("tr:") else 0))
        return np.stack(out).astype(np.float32)


def naive_top1(src: np.ndarray, tgt: np.ndarray) -> float:
    """Share of rows whose most cosine-similar target is their own."""
    s = src / np.linalg.norm(src, axis=1, keepdims=True)
    t = tgt / np.linalg.norm(tgt, axis=1, keepdims=True)
    return float(np.mean(np.argmax(s @ t.T, axis=1) == np.arange(len(s))))


@pytest.mark.parametrize("noise", [0.0, 3.0])
def test_retrieval_is_top1_both_ways_as_a_naive_argmax(noise):
    sentences = [f"s{i}" for i in range(12)]
    rows = {"lang": ["de"] * 6 + ["sw"] * 6, "src": sentences, "tgt": [f"tr:{s}" for s in sentences]}
    encoder = Lookup(noise)
    result = EVALUATORS["retrieval"].score(encoder, rows, EvalSpec("retrieval", "val", data="tatoeba"), EvalContext())
    for lang, part in (("de", slice(0, 6)), ("sw", slice(6, 12))):
        src, tgt = encoder.encode(rows["src"][part]), encoder.encode(rows["tgt"][part])
        expected = (naive_top1(src, tgt) + naive_top1(tgt, src)) / 2
        assert result.metrics[f"val/tatoeba/{lang}"] == pytest.approx(expected)
    assert result.metrics["val/tatoeba/avg"] == pytest.approx(
        (result.metrics["val/tatoeba/de"] + result.metrics["val/tatoeba/sw"]) / 2)
    assert list(retrieval_by_language(encoder, rows)) == ["de", "sw"]
    if noise == 0.0:
        assert result.metrics["val/tatoeba/avg"] == 1.0


class OneHot(TextEncoder):
    """Embeds ``"<k>..."`` as the one-hot vector of ``k``: the right answer is known."""

    dim, trainable = 8, False

    def embed(self, texts):
        return torch.eye(self.dim)[[int(t.split()[0]) for t in texts]]


def test_retrieval_on_a_known_answer_as_pretraining_reports_it():
    rows = {"lang": ["fr"] * 3 + ["sw"] * 3, "src": ["1 a", "2 b", "3 c", "4 d", "5 e", "6 f"],
            "tgt": ["1 x", "2 y", "3 z", "5 u", "4 v", "6 w"]}
    metrics = retrieval(OneHot(), rows, EvalSpec("retrieval", "val", data="tatoeba"), EvalContext()).metrics
    assert metrics == {"val/tatoeba/fr": 1.0, "val/tatoeba/sw": pytest.approx(1 / 3),
                       "val/tatoeba/avg": pytest.approx(2 / 3)}


def test_evaluate_all_runs_what_is_due_on_the_data_the_run_has():
    specs = (EvalSpec("classification", "val", every_epoch=True), EvalSpec("classification", "test"))
    read = {"val": labelled_rows()}  # no test dataset (a co-training learner's run)
    reads = []

    def reader(name, columns):
        reads.append(name)
        return read.get(name)

    models = {"classifier": FirstLetter()}
    epoch = evaluate_all(specs, models, reader, last=False, context=EvalContext())
    assert reads == ["val"] and set(epoch.predictions) == {"val"} and "val/acc/en" in epoch.metrics
    last = evaluate_all(specs, models, reader, last=True, context=EvalContext())
    assert reads == ["val", "val", "test"] and set(last.predictions) == {"val"}


def test_specs_are_checked_by_type_and_against_the_data_a_job_prepares():
    with pytest.raises(ConfigError, match=r"evals\[\]\.type='regression' is not valid: expected classification or retrieval"):
        EvalSpec("regression")
    assert EvalSpec("retrieval", "val", data="tatoeba").data == "tatoeba" and EvalSpec("classification").data == "val"
    offered = {"val": "classification", "test": "classification"}
    check_evals("evals", [EvalSpec("classification", "test")], offered)
    with pytest.raises(ConfigError, match=r"evals\[val\]='retrieval on val' is not valid: expected one of "
                                          r"classification on val, classification on test"):
        check_evals("evals", [EvalSpec("retrieval", "val")], offered)
