"""Metric names: one convention for every room, in a leaf module that any of them may import.

``<split>/<metric>[/<lang>]``, e.g. ``val/acc/de``, ``val/acc/avg_target``,
``val/transfer_gap``, ``train/loss/ce``. Build them with :func:`metric_name` or use the constants
below, never by hand, so that a sweep's ``metric=``, a report's column and a tracker's key agree.
The scores themselves are computed in ``xlt.eval.classification``; the training engine's own
names (``train/...``) are here too, so that the engine, tracking and the sweeps name them without
importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SPLITS: tuple[str, ...] = ("train", "val", "test")
ACC = "acc"
F1 = "f1"
SCORES: tuple[str, ...] = (ACC, F1)
TRANSFER_GAP = "transfer_gap"
# Takes the place of a language code in `<split>/acc/<lang>`: the mean over target languages.
AVG_TARGET = "avg_target"


def metric_name(split: str, metric: str, lang: str | None = None) -> str:
    """``<split>/<metric>[/<lang>]``, checked so that a typo cannot create a new metric.

    Args:
        split: one of :data:`SPLITS`.
        metric: e.g. :data:`ACC`, :data:`TRANSFER_GAP`; non-empty, without ``/``.
        lang: a language code or :data:`AVG_TARGET`; omitted for language-free metrics.
    """
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is not valid: expected one of {', '.join(SPLITS)}")
    parts = [("metric", metric)] + ([("lang", lang)] if lang is not None else [])
    for what, part in parts:
        # A '/' inside a part would shift every later field when the name is parsed back.
        if not isinstance(part, str) or not part or "/" in part:
            raise ValueError(f"{what}={part!r} is not valid: expected a non-empty string without '/'")
    return "/".join([split, metric] + ([lang] if lang is not None else []))


def gap_name(split: str, score: str = ACC) -> str:
    """The transfer gap of ``score``: ``<split>/transfer_gap`` (accuracy), ``<split>/transfer_gap_f1``."""
    return metric_name(split, TRANSFER_GAP if score == ACC else f"{TRANSFER_GAP}_{score}")


def per_language(metrics: Mapping[str, Any], split: str, metric: str = ACC) -> dict[str, Any]:
    """``{lang: value}`` of every ``<split>/<metric>/<lang>`` in ``metrics`` (:data:`AVG_TARGET` among
    them), in their order: a run's reported scores read back by language."""
    prefix = f"{metric_name(split, metric)}/"
    return {name.removeprefix(prefix): value for name, value in metrics.items() if name.startswith(prefix)}


# The names a sweep optimises (`tune.run(metric=...)`) and reports sort by.
VAL_AVG_TARGET_ACC = metric_name("val", ACC, AVG_TARGET)
VAL_TRANSFER_GAP = metric_name("val", TRANSFER_GAP)


# The training engine's reports (xlt.engine); per-objective losses are train/loss/<part>.
TRAIN_LOSS = metric_name("train", "loss")
TRAIN_EPOCH = metric_name("train", "epoch")
TRAIN_GLOBAL_STEP = metric_name("train", "global_step")
TRAIN_KEPT_EPOCH = metric_name("train", "kept_epoch")  # optim.keep: best-dev: the epoch whose weights the run holds
TRAIN_RESUMED_FROM_STEP = metric_name("train", "resumed_from_step")
TRAIN_LR = metric_name("train", "lr")
TRAIN_SAMPLES_PER_S = metric_name("train", "samples_per_s")
TRAIN_EPOCH_TIME_S = metric_name("train", "epoch_time_s")  # of the epoch's batches, data iteration included
TRAIN_DATA_WAIT_S = metric_name("train", "data_wait_s")  # of it, waiting for batches (mean over workers)
TRAIN_FIT = metric_name("train", "fit")  # which fit of a run serving many (xlt.engine.fits)


def loss_metric(part: str) -> str:
    """``train/loss/<part>``: ``ce`` or an objective's name."""
    return metric_name("train", "loss", part)
