"""Evaluators by ``type:``: what a run scores while it trains, each under its own prefix.

A training config lists its evaluators (``evals``, as big_vision lists its ``evals``). Each
``EvalSpec`` names its ``type`` (a key of ``EVALUATORS``), the ``split`` its metrics are named
under (``val/acc/de``), the evaluation dataset it reads (``data``, by default the split's name: one
the job's ``prepare`` hands the run — fine-tuning's ``val`` and ``test``, pretraining's
``tatoeba``) and whether it runs after every epoch or after the last one only. ``evaluate_all``
runs a list: the engine's workloads call it, and never name an evaluation themselves.

- ``classification``: a classifier's predictions on labelled rows (``id``, ``text``, ``text_pair``,
  ``label``, ``lang``): accuracy and macro-F1 per language, their target averages and transfer gaps
  (``classification.transfer_metrics``); it keeps each row's prediction and probabilities, which
  fine-tuning writes beside the checkpoint for paired comparisons and combinations (``predictions.json``).
- ``retrieval``: an encoder's top-1 retrieval both ways on parallel rows (``lang``, ``src``,
  ``tgt``), Tatoeba's protocol (XTREME): ``<split>/tatoeba/<lang>``, the mean of both directions,
  and their ``avg``. ``jobs/evaluate.py``'s ``tatoeba`` protocol scores with the same function
  (``retrieval_by_language``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..config import check
from ..metrics import metric_name
from ..progress import progress
from .classification import transfer_metrics
from .retrieval import RetrievalResult, tatoeba_accuracy

Rows = Mapping[str, Sequence[Any]]  # an evaluation dataset's columns, as ``xlt.engine.collect`` gathers them
TATOEBA, AVG = "tatoeba", "avg"
EVAL_CHUNK = 8  # batches per step of a classification's progress bar


@dataclass(frozen=True)
class EvalSpec:
    """One evaluator of a run: ``type`` (``EVALUATORS``), the ``split`` its metrics are named under,
    the evaluation dataset it reads (``data``; empty: the split's name) and when it runs
    (``every_epoch``, else after the last epoch only)."""

    type: str
    split: str = "val"
    data: str = ""
    every_epoch: bool = False

    def __post_init__(self) -> None:
        check(self.type in EVALUATORS, "evals[].type", self.type, " or ".join(EVALUATORS))
        check(bool(self.split) and "/" not in self.split, "evals[].split", self.split, "a name without '/', e.g. val")
        if not self.data:
            object.__setattr__(self, "data", self.split)


@dataclass(frozen=True)
class Evaluation:
    """An evaluator's metrics and, for a classification, the rows with their predictions."""

    metrics: dict[str, float]
    predictions: dict[str, list] | None = None


@dataclass(frozen=True)
class Evaluator:
    """How a type scores: the model it takes from the run (``needs``), the columns it reads, and
    ``score(model, rows, spec, context) -> Evaluation``."""

    needs: Literal["classifier", "encoder"]
    columns: tuple[str, ...]
    score: Callable[[Any, Rows, EvalSpec, "EvalContext"], Evaluation]


@dataclass(frozen=True)
class EvalContext:
    """What every evaluation of a run shares: its source language (transfer gaps), the batch size
    of its forward passes and the label of its progress bars."""

    source_lang: str = "en"
    batch_size: int = 64
    label: str = ""


def predict_rows(classifier: Any, rows: Rows, batch_size: int = 64,
                 label: str = "evaluate") -> tuple[list[str], np.ndarray]:
    """The predicted label of every row (``text``, with ``text_pair`` for a paired classifier) and its
    probabilities (N, C) over the classifier's labels, with a progress bar (``label``) advancing every
    ``EVAL_CHUNK`` batches."""
    texts = [str(t) for t in rows["text"]]
    items = list(zip(texts, (str(p) for p in rows["text_pair"]))) if classifier.paired else texts
    langs = [str(lang) for lang in rows["lang"]]
    predicted: list[str] = []
    probabilities = [np.zeros((0, len(classifier.labels)), dtype=np.float32)]
    bar, chunk = progress(len(items), label, "row"), EVAL_CHUNK * batch_size
    for start in range(0, len(items), chunk):
        out = classifier.predict(items[start:start + chunk], batch_size=batch_size, langs=langs[start:start + chunk])
        predicted.extend(out.labels)
        probabilities.append(np.asarray(out.probabilities, dtype=np.float32))
        bar.update(len(items[start:start + chunk]))
    bar.close()
    return predicted, np.concatenate(probabilities)


def classification(classifier: Any, rows: Rows, spec: EvalSpec, context: EvalContext) -> Evaluation:
    """The ``classification`` evaluator (module docstring)."""
    predicted, probabilities = predict_rows(classifier, rows, context.batch_size,
                                            f"{context.label} evaluate {spec.split}".strip())
    gold = [str(label) for label in rows["label"]]
    metrics = transfer_metrics(np.asarray(gold, dtype=str), np.asarray(predicted, dtype=str),
                               np.asarray(list(rows["lang"]), dtype=str), context.source_lang, spec.split)
    # Probabilities to 4 decimals: what a combination of classifiers reads (xlt.cotrain.classifier), at a
    # tenth of the digits JSON would write.
    return Evaluation(metrics, {"id": list(rows["id"]), "lang": list(rows["lang"]), "label": gold,
                                "predicted": predicted, "labels": list(classifier.labels),
                                "probabilities": np.round(probabilities.astype(np.float64), 4).tolist()})


def retrieval_by_language(encoder: Any, rows: Rows, batch_size: int = 64,
                          **encode: Any) -> dict[str, RetrievalResult]:
    """Top-1 retrieval both ways (``retrieval.tatoeba_accuracy``) of each language of ``rows``
    (``lang``, ``src``, ``tgt``: line i of a language is a sentence and its translation), in the
    rows' order of languages; ``encode``: more arguments of ``encoder.encode``."""
    langs = np.asarray(list(rows["lang"]), dtype=str)
    src, tgt = list(rows["src"]), list(rows["tgt"])
    results = {}
    for lang in dict.fromkeys(langs.tolist()):
        idx = np.flatnonzero(langs == lang)
        results[lang] = tatoeba_accuracy(encoder.encode([src[i] for i in idx], batch_size=batch_size, **encode),
                                         encoder.encode([tgt[i] for i in idx], batch_size=batch_size, **encode))
    return results


def retrieval_metric(split: str, lang: str) -> str:
    """``<split>/tatoeba/<lang>`` (or ``avg``)."""
    return metric_name(split, TATOEBA, lang)


def retrieval(encoder: Any, rows: Rows, spec: EvalSpec, context: EvalContext) -> Evaluation:
    """The ``retrieval`` evaluator (module docstring)."""
    results = retrieval_by_language(encoder, rows, context.batch_size)
    metrics = {retrieval_metric(spec.split, lang): r.mean for lang, r in results.items()}
    if metrics:
        metrics[retrieval_metric(spec.split, AVG)] = float(np.mean(list(metrics.values())))
    return Evaluation(metrics)


# Every evaluator by its ``type:``.
EVALUATORS: dict[str, Evaluator] = {
    "classification": Evaluator("classifier", ("id", "text", "text_pair", "label", "lang"), classification),
    "retrieval": Evaluator("encoder", ("lang", "src", "tgt"), retrieval),
}


def check_evals(key: str, specs: Iterable[EvalSpec], offered: Mapping[str, str]) -> None:
    """Raise ``ConfigError`` unless every evaluator of ``specs`` reads a dataset the job prepares:
    ``offered`` maps each dataset's name to the evaluator type its rows are for."""
    for spec in specs:
        check(offered.get(spec.data) == spec.type, f"{key}[{spec.split}]", f"{spec.type} on {spec.data}",
              "one of " + ", ".join(f"{kind} on {data}" for data, kind in offered.items()) + " (what this job prepares)")


@dataclass
class Evaluations:
    """What ``evaluate_all`` returns: every metric, and the predictions of each classified split."""

    metrics: dict[str, float] = field(default_factory=dict)
    predictions: dict[str, dict[str, list]] = field(default_factory=dict)


def evaluate_all(specs: Iterable[EvalSpec], models: Mapping[str, Any], read: Callable[[str, Sequence[str]], Rows | None],
                 *, last: bool, context: EvalContext) -> Evaluations:
    """Run every evaluator of ``specs`` due now (each epoch's, and after the last epoch the rest)
    on the dataset it names: ``read(data, columns)`` gives its rows, or ``None`` where the run was
    not given that dataset (a co-training learner gets only the split it reports)."""
    out = Evaluations()
    for spec in specs:
        if not (spec.every_epoch or last):
            continue
        evaluator = EVALUATORS[spec.type]
        rows = read(spec.data, evaluator.columns)
        if rows is None:
            continue
        result = evaluator.score(models[evaluator.needs], rows, spec, context)
        out.metrics.update(result.metrics)
        if result.predictions is not None:
            out.predictions[spec.split] = result.predictions
    return out
