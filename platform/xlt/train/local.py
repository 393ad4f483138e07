"""Fine-tuning in the calling process, without Ray Train: the engine's epoch (``xlt.engine.run_epoch``
with the ``FINETUNE`` workload) over Python rows, for callers that parallelise at another level
(co-training learner actors, Tune trials that each own a slice of the cluster).

Same pieces as a Ray Train run, so a model fitted here is the model ``jobs/finetune.py`` would
fit on the same rows, up to the order of the batches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ..engine import epoch_seed, run_epoch
from ..augment import ALIGNED_VIEW_COLUMNS
from .config import FinetuneConfig
from .loop import FINETUNE, FinetuneTraining, build_training

logger = logging.getLogger(__name__)
TRAIN_COLUMNS: tuple[str, ...] = ("id", "text", "text_pair", "label", "lang")

EpochCallback = Callable[[FinetuneTraining, float], None]  # (training after the epoch, the epoch's mean loss)


def shuffled_batches(rows: Sequence[Mapping[str, Any]], batch_size: int, seed: int) -> list[dict[str, list]]:
    """``rows`` shuffled with ``seed``, as column batches of ``batch_size`` (the last one smaller).
    The view columns of augmented rows travel with their example when present."""
    order = np.random.default_rng(seed).permutation(len(rows))
    columns = [c for c in (*TRAIN_COLUMNS, *ALIGNED_VIEW_COLUMNS) if c in rows[0]]
    return [{key: [rows[i][key] for i in order[start:start + batch_size]] for key in columns}
            for start in range(0, len(rows), batch_size)]


def fit_in_process(cfg: FinetuneConfig, rows: Sequence[Mapping[str, Any]], *,
                   prepare: Callable[[FinetuneTraining], None] | None = None,
                   on_epoch: EpochCallback | None = None) -> FinetuneTraining:
    """Fine-tune from the pretrained weights on ``rows`` for ``cfg.optim.epochs`` epochs.

    ``cfg.task.labels`` must be set (the head's classes). ``prepare`` may adjust the fresh
    ``Training`` before the first step (e.g. cache a frozen encoder); ``on_epoch`` is called
    after every epoch (e.g. to evaluate and report to Tune). Dropout masks and shuffling are
    functions of ``(optim.seed, epoch)`` only.
    """
    if not rows:
        raise ValueError("no rows to fit on")
    import dataclasses

    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, train_rows=len(rows)))
    steps = cfg.steps_per_epoch(1)
    training = build_training(cfg, steps)
    if prepare is not None:
        prepare(training)
    for epoch in range(cfg.optim.epochs):
        seed = epoch_seed(cfg.optim.seed, epoch, 0)
        torch.manual_seed(seed)
        stats, _ = run_epoch(training, FINETUNE, shuffled_batches(rows, cfg.optim.batch_size, seed), cfg,
                             epoch=epoch, steps_per_epoch=steps)
        training.epoch = epoch + 1
        logger.info("epoch %d/%d loss %.4f", epoch + 1, cfg.optim.epochs, stats.mean("loss"))
        if on_epoch is not None:
            on_epoch(training, stats.mean("loss"))
    return training
