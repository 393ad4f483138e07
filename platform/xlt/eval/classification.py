"""Per-language classification metrics and the transfer gap, named as ``xlt.metrics`` says.

Two scores per language: accuracy (``acc``) and macro-averaged F1 (``f1``: the unweighted mean
of the per-class F1 over the classes present in the gold or predicted labels of that language;
the metric of sentiment tasks such as NusaX, whose classes are unbalanced). For each, the mean
over target languages (``<split>/<score>/avg_target``) and the transfer gap: the source-language
score minus that mean (Zhang et al. 2023, §4.6.1, after Hu et al. 2020, XTREME): 0 means perfect transfer,
lower is better. The gap of accuracy is ``<split>/transfer_gap``, that of F1
``<split>/transfer_gap_f1``. Scores are fractions in [0, 1], not percentages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..metrics import ACC, AVG_TARGET, F1, gap_name, metric_name

def accuracy_by_language(
    y_true: Sequence | np.ndarray, y_pred: Sequence | np.ndarray, langs: Sequence[str] | np.ndarray
) -> dict[str, float]:
    """Top-1 accuracy of ``y_pred`` against ``y_true`` within each language of ``langs``.

    The three inputs are aligned 1-D sequences (one entry per example). Labels may be ints or
    strings, but both sides must use the same kind. Returns ``{lang: accuracy}`` in sorted
    language order, computed in one pass with ``np.unique`` + ``np.bincount``.
    """
    y_true, y_pred, langs = np.asarray(y_true), np.asarray(y_pred), np.asarray(langs)
    for name, a in (("y_true", y_true), ("y_pred", y_pred), ("langs", langs)):
        if a.ndim != 1:
            raise ValueError(f"{name} must be 1-D (one entry per example); got shape {a.shape}")
    if not len(y_true) == len(y_pred) == len(langs):
        raise ValueError(
            "y_true, y_pred and langs must have one entry per example; got lengths "
            f"{len(y_true)}, {len(y_pred)} and {len(langs)}"
        )
    if len(y_true) == 0:
        raise ValueError("no examples: y_true, y_pred and langs are empty")
    # numpy compares str with int element-wise as all-False: a silent accuracy of 0 when, say,
    # predictions are class ids but gold labels are names. Refuse the mix instead.
    if _is_text(y_true) != _is_text(y_pred):
        raise TypeError(
            f"y_true ({y_true.dtype}) and y_pred ({y_pred.dtype}) mix text and numeric labels; "
            "map both to the same label space (ids or names) first"
        )
    codes, lang_idx = np.unique(langs, return_inverse=True)  # codes sorted; lang_idx: (N,)
    correct = np.bincount(lang_idx, weights=(y_true == y_pred).astype(np.float64))
    total = np.bincount(lang_idx)
    return {str(code): float(c / t) for code, c, t in zip(codes, correct, total)}


def macro_f1_by_language(y_true: Sequence | np.ndarray, y_pred: Sequence | np.ndarray,
                         langs: Sequence[str] | np.ndarray) -> dict[str, float]:
    """Macro-F1 of ``y_pred`` against ``y_true`` within each language (see the module docstring);
    inputs as :func:`accuracy_by_language`, which checks them."""
    from sklearn.metrics import f1_score

    accuracy_by_language(y_true, y_pred, langs)  # the same checks of shapes and label kinds
    y_true, y_pred, langs = np.asarray(y_true), np.asarray(y_pred), np.asarray(langs)
    return {str(lang): float(f1_score(y_true[langs == lang], y_pred[langs == lang], average="macro",
                                      zero_division=0.0))
            for lang in np.unique(langs)}


def scores_by_language(y_true: Sequence | np.ndarray, y_pred: Sequence | np.ndarray,
                       langs: Sequence[str] | np.ndarray) -> dict[str, dict[str, float]]:
    """``{score: {lang: value}}`` for every score of ``xlt.metrics.SCORES``."""
    return {ACC: accuracy_by_language(y_true, y_pred, langs), F1: macro_f1_by_language(y_true, y_pred, langs)}


def _is_text(a: np.ndarray) -> bool:
    return a.dtype.kind in "US"


@dataclass(frozen=True)
class TransferSummary:
    """Per-language scores summarised for cross-lingual transfer (Zhang et al. 2023, §4.6.1).

    Attributes:
        per_lang: ``{lang: score}`` for every evaluated language, source included.
        source: the source (training) language.
        targets: every other language, sorted; ``avg_target`` averages exactly these.
        avg_target: unweighted mean score over ``targets`` (each language counts once,
            whatever its test-set size, as in XTREME).
        transfer_gap: ``per_lang[source] - avg_target``; 0 is perfect transfer.
    """

    per_lang: dict[str, float]
    source: str
    targets: tuple[str, ...]
    avg_target: float
    transfer_gap: float


def summarize_transfer(per_lang: Mapping[str, float], source_lang: str = "en") -> TransferSummary:
    """Average target-language score and transfer gap from per-language scores.

    ``per_lang`` is typically :func:`accuracy_by_language`'s output. Language codes must match
    ``source_lang`` exactly (normalise codes once, at read time, before evaluating).
    """
    if not per_lang:
        raise ValueError("per_lang is empty: need scores for the source and at least one target language")
    given = ", ".join(sorted(per_lang))
    if source_lang not in per_lang:
        raise ValueError(
            f"source language {source_lang!r} not in per_lang (got: {given}); "
            "pass source_lang= one of these, with the same code style"
        )
    if AVG_TARGET in per_lang:
        raise ValueError(f"{AVG_TARGET!r} is reserved for the target average and cannot be a language code")
    bad = {lang: v for lang, v in per_lang.items() if not np.isfinite(v)}
    if bad:
        raise ValueError(f"per_lang has non-finite scores: {bad}")
    targets = tuple(sorted(lang for lang in per_lang if lang != source_lang))
    if not targets:
        raise ValueError(
            f"per_lang has only the source language {source_lang!r}: the transfer gap needs at "
            "least one target language"
        )
    avg_target = float(np.mean([per_lang[t] for t in targets]))
    return TransferSummary(
        per_lang={lang: float(per_lang[lang]) for lang in sorted(per_lang)},
        source=source_lang,
        targets=targets,
        avg_target=avg_target,
        transfer_gap=float(per_lang[source_lang]) - avg_target,
    )


def to_metrics(summary: TransferSummary, split: str, score: str = ACC) -> dict[str, float]:
    """Flat named metrics: ``<split>/<score>/<lang>`` per language, ``<split>/<score>/avg_target``
    and the gap (:func:`gap_name`)."""
    metrics = {metric_name(split, score, lang): v for lang, v in summary.per_lang.items()}
    metrics[metric_name(split, score, AVG_TARGET)] = summary.avg_target
    metrics[gap_name(split, score)] = summary.transfer_gap
    return metrics


def transfer_metrics(y_true: Sequence | np.ndarray, y_pred: Sequence | np.ndarray, langs: Sequence[str] | np.ndarray,
                     source_lang: str, split: str) -> dict[str, float]:
    """Every score per language, its target average and its gap, as named metrics of ``split``; rows of
    the source language alone (a co-training run's English dev) have no target: their scores only."""
    metrics: dict[str, float] = {}
    for score, per_lang in scores_by_language(y_true, y_pred, langs).items():
        if set(per_lang) == {source_lang}:
            metrics[metric_name(split, score, source_lang)] = float(per_lang[source_lang])
        else:
            metrics.update(to_metrics(summarize_transfer(per_lang, source_lang), split, score))
    return metrics
