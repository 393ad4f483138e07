"""Alignment pretraining's workload for the engine: pairs → model → Σ objectives, its evaluators after every epoch.

Pieces, each usable without Ray (tests):

- ``build_pretraining``: ``PretrainModel`` (``xlt.pretrain.model``), AdamW, linear schedule (``xlt.engine``).
- ``Pretraining.batcher``: pair rows → the model's tensors (``PretrainBatcher``); MLM masks from one
  generator per epoch and worker, WPS words from (seed, epoch, pair id).
- evaluation: the config's evaluators (``evals``; by default ``retrieval`` on the held-apart pairs,
  ``xlt.eval.evaluators``): ``val/tatoeba/<lang>`` (mean of both retrieval directions) and
  ``val/tatoeba/avg``.

``PRETRAIN`` plugs them into the engine's per-worker loop (``xlt.engine.train_workload``):
micro-batches of ``batch_size`` pairs, ``grad_accum_steps`` per optimizer step (DDP syncs on the
last one), a checkpoint per epoch that holds the training state and, in ``encoder/``, the
encoder as a ``local:`` model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..engine import EvalRows, Evaluation, Training, Workload, epoch_seed, start_training
from ..engine import build_training as build_engine_training
from ..engine.loop import Batcher
from ..eval.evaluators import AVG, TATOEBA, EvalContext, evaluate_all
from ..metrics import per_language
from .alignment import Tokenization
from .batches import PretrainBatcher, as_rows
from .config import PretrainConfig
from .model import PretrainModel, build_model

logger = logging.getLogger(__name__)

ENCODER_DIR = "encoder"  # inside every checkpoint: the encoder as a local: model directory


def build_pretraining(cfg: PretrainConfig, steps_per_epoch: int,
                      wrap: Callable[[nn.Module], nn.Module] = lambda m: m) -> Training:
    """Model, its step module (through ``prepare``), AdamW and the linear schedule
    (``xlt.engine.start_training`` with ``PRETRAIN``)."""
    return start_training(PRETRAIN, cfg, steps_per_epoch, wrap)


class Pretraining(Workload):
    """Alignment pretraining on the engine (see the module docstring)."""

    config_class = PretrainConfig
    job = "pretrain"
    batch_format = "pyarrow"
    unit = "pairs"

    def unused_parameters(self, cfg: PretrainConfig) -> bool:
        return cfg.model.layer != -1  # pooling an intermediate layer leaves the layers above it without gradient

    def build(self, cfg: PretrainConfig, steps_per_epoch: int, wrap: Callable[[nn.Module], nn.Module]) -> Training:
        # The new heads (CCE, LM head transform, soft attention) are initialised after the engine's seed.
        return build_engine_training(build_model(cfg), cfg.optim, steps_per_epoch, wrap)

    def batcher(self, cfg: PretrainConfig, training: Training, epoch: int, rank: int) -> Batcher:
        module: PretrainModel = training.module  # type: ignore[assignment]
        batcher = PretrainBatcher(Tokenization.from_encoder(module.encoder), module.requires,
                                  cfg.batch.features or "pooled", cfg.batch.mlm_input, cfg.batch.mask_probability)
        generator = torch.Generator().manual_seed(epoch_seed(cfg.optim.seed, epoch, rank))
        draw_seed = f"{cfg.optim.seed}:{epoch}"

        def batch(pairs: Any) -> tuple[dict[str, torch.Tensor], int]:
            rows = as_rows(pairs)
            return batcher(rows, generator=generator, draw_seed=draw_seed), len(rows)
        return batch

    def prepares_input(self, cfg: PretrainConfig) -> bool:
        """The batcher tokenises, masks and draws from its own generator: the step reads tensors."""
        return True

    def loss(self, training: Training, model: nn.Module,
             inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return model(inputs)

    def evaluate(self, cfg: PretrainConfig, training: Training, last: bool, rows: EvalRows) -> Evaluation:
        return Evaluation(evaluate_all(cfg.evals, {"encoder": training.module.encoder}, rows, last=last,
                                       context=EvalContext(cfg.data.pivot_lang, cfg.optim.eval_batch_size)).metrics)

    def write(self, directory: Path, training: Training, cfg: PretrainConfig, evaluation: Evaluation) -> None:
        training.module.export(directory / ENCODER_DIR)  # a local: model for fine-tuning and co-training

    def describe(self, cfg: PretrainConfig, steps_per_epoch: int, world: int) -> str:
        return (f"pretraining ({cfg.recipe}: {', '.join(cfg.objective_names)}) {cfg.optim.epochs} epochs × "
                f"{steps_per_epoch} steps of {cfg.optim.grad_accum_steps} micro-batch(es) on {world} worker(s)")

    def summary(self, metrics: Mapping[str, float]) -> list[str]:
        """Retrieval accuracy per held-apart language and its average, when evaluated."""
        scores = per_language(metrics, "val", TATOEBA)
        if AVG not in scores:
            return []
        return ["tatoeba " + " ".join(f"{lang} {value:.3f}" for lang, value in scores.items() if lang != AVG)
                + f" avg {scores[AVG]:.3f}"]


PRETRAIN = Pretraining()
