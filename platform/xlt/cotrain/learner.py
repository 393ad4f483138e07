"""``Learner``: one classifier of co-training — fit on its labelled set, evaluate, hand out its weights.

A plain class (tests call it directly); ``xlt.cotrain.loop`` wraps it as a Ray actor so that
the two learners fit at the same time, each on its own resources (a GPU each on a cluster).

Fitting is the fine-tuning of ``xlt.train`` run in the actor's process
(``xlt.train.local.fit_in_process``: encoder + head, AdamW, linear schedule, word embeddings
frozen if configured, CE + Σ λ·aux, K = ``optim.epochs`` epochs of shuffled batches). Ray
Train is not involved: a learner is one process, and the loop parallelises across learners.

Reading of Alg. 1 in Yu & Joty 2021 ("fine-tune f on D" once per iteration): each fit starts again from
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

import torch

from ..models import Classifier
from ..models.encoder import CachedEncoder
from ..tasks import TaskConfig
from ..train.config import FinetuneConfig
from ..train.local import fit_in_process
from ..train.loop import FinetuneTraining, evaluate
from .config import LearnerConfig

logger = logging.getLogger(__name__)


class Learner:
    """``name`` ("lm" / "emb"), its ``LearnerConfig`` and the resolved task (labels, languages, pairs)."""

    def __init__(self, name: str, cfg: LearnerConfig, task: TaskConfig) -> None:
        torch.set_num_threads(cfg.torch_threads)
        self.name, self.cfg, self.task = name, cfg, task
        self._cached: CachedEncoder | None = None  # a frozen encoder's embeddings, kept across fits
        self.training: FinetuneTraining | None = None

    def _cache_frozen_encoder(self, training: FinetuneTraining) -> None:
        """A frozen encoder embeds each text once for the learner's lifetime (``CachedEncoder``)."""
        encoder = training.classifier.encoder
        if not encoder.trainable:
            if self._cached is None:
                self._cached = CachedEncoder(encoder)
            training.classifier.encoder = self._cached

    @property
    def classifier(self) -> Classifier:
        if self.training is None:
            raise RuntimeError(f"learner {self.name!r} has not been fitted yet")
        return self.training.classifier

    def fit(self, rows: Sequence[Mapping[str, Any]], iteration: int = 0) -> dict[str, float]:
        """Fine-tune from the pretrained weights on ``rows`` (``id, text, text_pair, label, lang``) for
        K epochs; returns ``{"train/loss": last epoch's mean, "train/rows": len(rows)}``."""
        cfg = FinetuneConfig(task=self.task, model=self.cfg.model, objectives=self.cfg.objectives,
                             optim=self.cfg.optim)
        losses: list[float] = []
        self.training = fit_in_process(cfg, rows, prepare=self._cache_frozen_encoder,
                                       on_epoch=lambda _, loss: losses.append(loss))
        logger.info("%s iteration %d: fitted %d rows, last epoch loss %.4f", self.name, iteration, len(rows), losses[-1])
        return {"train/loss": losses[-1], "train/rows": float(len(rows))}

    def evaluate(self, rows: Mapping[str, Sequence], split: str) -> dict[str, float]:
        """Accuracy and macro-F1 per language, target averages and gaps on ``rows`` (``xlt.train.loop.evaluate``)."""
        return evaluate(self.classifier, rows, self.task.source_lang, split, self.cfg.optim.eval_batch_size)

    def state(self) -> dict[str, torch.Tensor]:
        """The fitted classifier's ``state_dict`` on CPU (for ``xlt.inference.ClassifierSpec``)."""
        return {k: v.detach().cpu() for k, v in self.classifier.state_dict().items()}
