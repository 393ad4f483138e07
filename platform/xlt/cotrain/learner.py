"""``Learner``: one classifier of co-training — fit on its labelled set, evaluate, hand out its weights.

A plain class (tests call it directly); ``xlt.cotrain.loop`` wraps it as a Ray actor so that
the two learners fit at the same time, each on its own resources (a GPU each on a cluster).

Fitting is the fine-tuning of ``xlt.train``: the same ``build_training`` (encoder + head,
AdamW, linear schedule, word embeddings frozen if configured), ``flatten_batch`` and
``run_epoch`` (CE + Σ λ·aux), over K = ``optim.epochs`` epochs of shuffled batches. Ray Train
is not involved: a learner is one process, and the loop parallelises across learners.

Reading of seed 002 Alg. 1 ("fine-tune f on D" once per iteration): each fit starts again from
the pretrained encoder and a fresh head (seeded), on the original labelled data plus every
pseudo-label received so far — the paper's "merged into the original labeled data D ... to
re-train the model with" (§3.1). So a learner's state between iterations is its labelled set
alone, which is what the loop checkpoints; a resumed run re-fits exactly what an
uninterrupted one would.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Mapping

import numpy as np
import torch

from ..models import Classifier
from ..models.encoder import CachedEncoder
from ..train.config import DataSettings, FinetuneConfig
from ..train.loop import Training, build_training, evaluate, run_epoch
from .config import LearnerConfig

logger = logging.getLogger(__name__)
TRAIN_COLUMNS: tuple[str, ...] = ("id", "text", "label", "lang")


def batches(rows: Sequence[Mapping[str, Any]], batch_size: int, seed: int) -> list[dict[str, list]]:
    """``rows`` shuffled with ``seed``, as column batches of ``batch_size`` (the last one smaller)."""
    order = np.random.default_rng(seed).permutation(len(rows))
    return [{key: [rows[i][key] for i in order[start:start + batch_size]] for key in TRAIN_COLUMNS}
            for start in range(0, len(rows), batch_size)]


class Learner:
    """``name`` ("lm" / "emb"), its ``LearnerConfig``, the class names and the source language."""

    def __init__(self, name: str, cfg: LearnerConfig, labels: Sequence[str], source_lang: str) -> None:
        torch.set_num_threads(cfg.torch_threads)
        self.name, self.cfg, self.labels, self.source_lang = name, cfg, tuple(labels), source_lang
        self._cached: CachedEncoder | None = None  # a frozen encoder's embeddings, kept across fits
        self.training: Training | None = None

    def _finetune_config(self, num_rows: int) -> FinetuneConfig:
        return FinetuneConfig(model=self.cfg.model, objectives=self.cfg.objectives, optim=self.cfg.optim,
                              data=DataSettings(labels=self.labels, train_rows=num_rows))

    def _build(self, cfg: FinetuneConfig, steps_per_epoch: int) -> Training:
        training = build_training(cfg, steps_per_epoch)
        encoder = training.classifier.encoder
        if not encoder.trainable:  # frozen: embed each text once for the learner's lifetime
            if self._cached is None:
                self._cached = CachedEncoder(encoder)
            training.classifier.encoder = self._cached
        return training

    @property
    def classifier(self) -> Classifier:
        if self.training is None:
            raise RuntimeError(f"learner {self.name!r} has not been fitted yet")
        return self.training.classifier

    def fit(self, rows: Sequence[Mapping[str, Any]], iteration: int = 0) -> dict[str, float]:
        """Fine-tune from the pretrained weights on ``rows`` (``id, text, label, lang``) for K
        epochs; returns ``{"train/loss": last epoch's mean, "train/rows": len(rows)}``."""
        if not rows:
            raise ValueError(f"learner {self.name!r}: no labelled rows to fit on")
        cfg = self._finetune_config(len(rows))
        steps = cfg.steps_per_epoch(1)
        self.training = self._build(cfg, steps)
        stats = None
        for epoch in range(cfg.optim.epochs):
            seed = cfg.optim.seed + 1000 * epoch
            torch.manual_seed(seed)  # dropout masks: a function of (seed, epoch) only
            stats, _ = run_epoch(self.training, batches(rows, cfg.optim.batch_size, seed), cfg,
                                 log=False, steps_per_epoch=steps)
            self.training.epoch = epoch + 1
            logger.info("%s iteration %d: epoch %d/%d loss %.4f", self.name, iteration, epoch + 1,
                        cfg.optim.epochs, stats.mean("loss"))
        return {"train/loss": stats.mean("loss"), "train/rows": float(len(rows))}

    def evaluate(self, rows: Mapping[str, Sequence], split: str) -> dict[str, float]:
        """``<split>/acc/<lang>``, ``<split>/acc/avg_target``, ``<split>/transfer_gap`` on ``rows``."""
        return evaluate(self.classifier, rows, self.source_lang, split, self.cfg.optim.eval_batch_size)

    def state(self) -> dict[str, torch.Tensor]:
        """The fitted classifier's ``state_dict`` on CPU (for ``xlt.inference.ClassifierSpec``)."""
        return {k: v.detach().cpu() for k, v in self.classifier.state_dict().items()}
