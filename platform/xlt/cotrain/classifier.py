"""The one classifier a co-training run ends with: a learner, or the learners combined, at the iteration it keeps.

Co-training leaves two learners; a user wants one classifier. Blum & Mitchell (1998, §4) classify
with both views: the product of the views' class probabilities, renormalised,
p(y | x) ∝ Π_k p_k(y | x_k). Reading chosen: the product, not the mean (under the views'
conditional independence given y the product over the prior is the posterior; the prior is left
out, as their combined classifier leaves it out), computed in log space with every probability
floored (the recorded ones are rounded to 4 decimals, so a 0 may stand for 4e-5): ``xlt.models.combine``,
what the exported ``CombinedClassifier`` predicts with.
With one learner named, the job's classifier is that learner.

Which classifier (``ClassifierSettings.choose``): ``declared``, the ``learners`` named; or ``dev``, at every
iteration whichever of the declared combination and each of its learners alone scores the best source dev
accuracy, ties to the declared one (then the learners in the order named). A product is only as good as its
weaker factor allows: where one learner is far the weaker (NusaX at 50 labels, an LM fine-tuned on 50 rows),
multiplying its probabilities in costs what English dev shows; where the two are level, the product is above
both there too. The choice needs no target label. Each iteration's record says which it is (``combines``).

Every fit scores the source language's dev rows beside the evaluation split (``xlt.cotrain.learner``),
so the classifier has a dev score at each iteration without a target label. Which iteration it is
(``ClassifierSettings.keep``): ``last``, or ``best-dev``, the iteration of the best source dev
accuracy, ties to the earliest (the one trained on fewer pseudo-labels; iteration 0 is fine-tuning
alone), as HF Trainer's ``load_best_model_at_end`` keeps the first best checkpoint. A run keeping ``best-dev``
keeps every fit's model (``xlt.cotrain.learner.fit_model``), so that export and prediction read the learners as
the kept iteration left them.

Each iteration's predictions of every learner and of the classifier (per split, with probabilities) are
written to ``<output.dir>/predictions/iteration<i>.json`` (``write_predictions``): what a study pairs
item by item, iteration 0 included.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..config import check
from ..eval.classification import transfer_metrics
from ..metrics import ACC, metric_name
from ..models.classifier import combine
from ..storage import join, read_text, staged

CLASSIFIER = "classifier"  # the job's classifier, as a learner's name in the history, the tables and the files
PREDICTIONS_DIR = "predictions"
DEV = "val"  # the metric split of the source language's dev rows


@dataclass(frozen=True)
class ClassifierSettings:
    """The job's classifier: the ``learners`` whose probabilities it multiplies (one: that learner), whether
    it is that or ``choose``s on dev among it and its learners alone, and the iteration it ``keep``s (module
    docstring)."""

    learners: tuple[str, ...] = ("lm",)
    keep: Literal["last", "best-dev"] = "last"
    choose: Literal["declared", "dev"] = "declared"

    def __post_init__(self) -> None:
        check(bool(self.learners) and len(set(self.learners)) == len(self.learners)
              and set(self.learners) <= {"lm", "emb"}, "classifier.learners", list(self.learners),
              "[lm], [emb] or [lm, emb]")
        check(self.choose == "declared" or len(self.learners) > 1, "classifier.choose", self.choose,
              "declared where one learner is named (dev chooses among a combination and its learners)")

    @property
    def candidates(self) -> tuple[tuple[str, ...], ...]:
        """The classifiers a run may end with, the declared first (what a tie on dev keeps)."""
        if self.choose == "declared":
            return (self.learners,)
        return (self.learners, *((learner,) for learner in self.learners))


def classifier_name(learners: Sequence[str]) -> str:
    """A classifier's name in records, tables and cards: its learners joined by ``×``."""
    return " × ".join(learners)


def describe(settings: ClassifierSettings, learners: Sequence[str], source_lang: str) -> str:
    """What the job's classifier made of ``learners`` is, in words, and how it was chosen."""
    what = (f"{classifier_name(learners)} (the product of their probabilities)" if len(learners) > 1
            else f"learner {learners[0]} alone")
    if settings.choose == "dev":
        what += (f", chosen on {source_lang} dev among "
                 f"{', '.join(classifier_name(c) for c in settings.candidates)} (ties to the first)")
    return what


def members(record: Mapping[str, Any]) -> tuple[str, ...]:
    """The learners of the job's classifier that an iteration's record describes (its ``combines``)."""
    return tuple(record["combines"].split(" × "))


def combined_predictions(by_learner: Mapping[str, Mapping[str, Any]], learners: Sequence[str]) -> dict[str, Any]:
    """One split's recorded predictions (``id, lang, label, predicted, labels, probabilities``) of the
    classifier made of ``learners``, from each learner's predictions of the same rows."""
    first = by_learner[learners[0]]
    for name in learners[1:]:
        other = by_learner[name]
        if list(other["id"]) != list(first["id"]) or list(other["labels"]) != list(first["labels"]):
            raise ValueError(f"learners {learners[0]!r} and {name!r} predicted different rows or labels: "
                             "a combination needs both on the same rows")
    probabilities = combine([by_learner[name]["probabilities"] for name in learners])
    labels = list(first["labels"])
    return {**{k: list(first[k]) for k in ("id", "lang", "label")}, "labels": labels,
            "predicted": [labels[k] for k in probabilities.argmax(axis=1)],
            "probabilities": np.round(probabilities, 4).tolist()}


def classifier_predictions(by_learner: Mapping[str, Mapping[str, Mapping[str, Any]]], settings: ClassifierSettings,
                           source_lang: str) -> tuple[tuple[str, ...], dict[str, dict[str, Any]]]:
    """The job's classifier from the learners' predictions (``{learner: {split: predictions}}``): its learners,
    and per split its predictions. ``choose: dev`` compares the candidates on the ``DEV`` split's
    ``source_lang`` rows."""
    made = {}
    for learners in settings.candidates:
        splits = by_learner[learners[0]]
        made[learners] = {split: combined_predictions({n: by_learner[n][split] for n in learners}, learners)
                          for split in splits}
    if len(made) == 1:
        return next(iter(made.items()))
    dev = metric_name(DEV, ACC, source_lang)
    scored = {learners: scores({DEV: p[DEV]}, source_lang) if DEV in p else {} for learners, p in made.items()}
    if any(dev not in s for s in scored.values()):
        raise ValueError(f"classifier.choose: dev needs every learner's predictions of the {source_lang} dev rows "
                         f"(split {DEV!r}); the run recorded splits {sorted(next(iter(made.values())))}")
    best = max(made, key=lambda learners: scored[learners][dev])  # max keeps the first of equals: the declared
    return best, made[best]


def rescore(output_dir: str, history: list[dict[str, Any]], settings: ClassifierSettings,
            source_lang: str) -> None:
    """Rebuild the job's classifier of every recorded iteration under ``settings``, from the learners'
    recorded predictions: its records in ``history`` (in place) and its predictions files. A finished run's
    classifier can so be changed without training; the same settings give the same records."""
    for k, record in enumerate(history):
        if record["learner"] != CLASSIFIER:
            continue
        recorded = read_predictions(output_dir, record["iteration"])
        learners = {n: p for n, p in recorded.items() if n != CLASSIFIER}
        chosen, predictions = classifier_predictions(learners, settings, source_lang)
        write_predictions(output_dir, record["iteration"], {**learners, CLASSIFIER: predictions})
        history[k] = classifier_record(record, chosen, predictions, source_lang)


def classifier_record(base: Mapping[str, Any], learners: Sequence[str], predictions: Mapping[str, Any],
                      source_lang: str) -> dict[str, Any]:
    """The job's classifier's metrics record of an iteration: ``base``'s keys (iteration, learner, mode), which
    learners it ``combines``, and its scores."""
    keep = {k: base[k] for k in ("iteration", "learner", "mode")}
    return {**keep, "combines": classifier_name(learners), **scores(predictions, source_lang)}


def scores(predictions: Mapping[str, Mapping[str, Any]], source_lang: str) -> dict[str, float]:
    """The named metrics (``<split>/acc/<lang>`` ...) of each split's predictions."""
    out: dict[str, float] = {}
    for split, p in predictions.items():
        out |= transfer_metrics(np.asarray(p["label"], dtype=str), np.asarray(p["predicted"], dtype=str),
                                np.asarray(p["lang"], dtype=str), source_lang, split)
    return out


def kept_record(history: Sequence[Mapping[str, Any]], keep: str, source_lang: str) -> Mapping[str, Any]:
    """The record of the job's classifier at the iteration the run keeps: the last, or the best source dev accuracy
    (ties: the earliest)."""
    records = sorted((h for h in history if h["learner"] == CLASSIFIER), key=lambda h: h["iteration"])
    if not records:
        raise ValueError("the history holds no record of the job's classifier")
    if keep == "last":
        return records[-1]
    dev = metric_name(DEV, ACC, source_lang)
    return max(records, key=lambda h: (h.get(dev, float("-inf")), -h["iteration"]))


def kept_iteration(history: Sequence[Mapping[str, Any]], keep: str, source_lang: str) -> int:
    """The iteration whose classifier the run keeps (``kept_record``)."""
    return int(kept_record(history, keep, source_lang)["iteration"])


def predictions_path(output_dir: str, iteration: int) -> str:
    return join(output_dir, PREDICTIONS_DIR, f"iteration{iteration}.json")


def write_predictions(output_dir: str, iteration: int, predictions: Mapping[str, Any]) -> str:
    """``{learner: {split: predictions}}`` of ``iteration``, whole or not at all."""
    with staged(join(output_dir, PREDICTIONS_DIR)) as local:
        tmp = local / f"iteration{iteration}.json.tmp"
        tmp.write_text(json.dumps(predictions, ensure_ascii=False), encoding="utf-8")
        tmp.replace(local / f"iteration{iteration}.json")
    return predictions_path(output_dir, iteration)


def read_predictions(output_dir: str, iteration: int) -> dict[str, Any]:
    """What ``write_predictions`` wrote for ``iteration``."""
    text = read_text(predictions_path(output_dir, iteration))
    if text is None:
        raise FileNotFoundError(f"{predictions_path(output_dir, iteration)} does not exist: a co-training run "
                                "records each iteration's predictions there")
    return json.loads(text)
