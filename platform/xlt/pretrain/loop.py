"""The per-worker pretraining loop: micro-batches with gradient accumulation, Tatoeba after every epoch.

Pieces, each usable without Ray (tests):

- ``build_pretraining`` / ``Pretraining.restore``: model (``xlt.pretrain.model``), AdamW with
  weight decay on matrices only, linear schedule over ``epochs × steps_per_epoch`` optimizer steps.
- ``accumulation_step``: one optimizer step over ``grad_accum_steps`` micro-batches. Each
  micro-batch's loss is divided by the number of micro-batches of the step, so the gradient is
  their mean; under DDP the gradients are all-reduced once, on the last micro-batch (the others
  run inside ``no_sync``).
- ``tatoeba_metrics``: ``val/tatoeba/<lang>`` (mean of both retrieval directions, ``xlt.eval``)
  and ``val/tatoeba/avg`` on the held-apart languages.

``train_loop_per_worker(config)`` wires them to Ray Train: it rebuilds the config, resumes from
the latest checkpoint (at its epoch), iterates its shard of ``"train"`` in micro-batches of
``batch_size`` pairs, reports once per epoch through ``xlt.train.reporting`` — rank 0 with a
checkpoint that holds the training state and, in ``encoder/``, the encoder as a ``local:`` model.
Fine-tuning's epoch statistics and ``train/`` metric names are reused (``xlt.train.loop``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from ..config import from_dict
from ..eval.classification import metric_name
from ..eval.retrieval import tatoeba_accuracy
from ..models import TextEncoder
from ..train.loop import (TRAIN_EPOCH, TRAIN_GLOBAL_STEP, TRAIN_LOSS, TRAIN_SAMPLES_PER_S, EpochStats, all_reduce_sums,
                          collect, epoch_metrics, param_groups, worker_setup)
from ..train.reporting import checkpoint_name, write_state
from .alignment import Tokenization
from .batches import PretrainBatcher, as_rows
from .config import PretrainConfig
from .model import PretrainModel, build_model

if TYPE_CHECKING:
    from ..train.reporting import TrainState

logger = logging.getLogger(__name__)

ENCODER_DIR = "encoder"  # inside every checkpoint: the encoder as a local: model directory
TATOEBA = "tatoeba"
AVG = "avg"


def tatoeba_metric(lang: str) -> str:
    """``val/tatoeba/<lang>`` (or ``avg``)."""
    return metric_name("val", TATOEBA, lang)


@dataclass
class Pretraining:
    """Everything a step changes. ``model`` is what the step calls (DDP-wrapped under Ray with
    several workers); ``module`` is the plain ``PretrainModel`` that is saved and evaluated."""

    module: PretrainModel
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    epoch: int = 0  # completed epochs
    global_step: int = 0  # optimizer steps so far

    def restore(self, state: TrainState) -> int:
        """Load a checkpoint's state (weights, optimizer, schedule, counters); returns its step."""
        self.module.load_state_dict(state.model)
        self.optimizer.load_state_dict(state.optimizer)
        self.scheduler.load_state_dict(state.scheduler)
        self.epoch, self.global_step = state.epoch, state.global_step
        return self.global_step


def build_pretraining(cfg: PretrainConfig, steps_per_epoch: int,
                      prepare: Callable[[nn.Module], nn.Module] = lambda m: m) -> Pretraining:
    """Model, its step module (through ``prepare``, e.g. ``ray.train.torch.prepare_model``), AdamW
    and the linear schedule with warmup over ``epochs × steps_per_epoch`` optimizer steps."""
    from transformers import get_linear_schedule_with_warmup

    torch.manual_seed(cfg.optim.seed)  # the new heads' initialisation (CCE, LM head transform, soft attention)
    module = build_model(cfg)
    model = prepare(module)
    optimizer = torch.optim.AdamW(param_groups(module, cfg.optim.weight_decay), lr=cfg.optim.lr)
    total = steps_per_epoch * cfg.optim.epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, round(cfg.optim.warmup_ratio * total), total)
    return Pretraining(module, model, optimizer, scheduler)


def accumulation_step(training: Pretraining, micro_batches: Sequence[Mapping[str, torch.Tensor]],
                      max_grad_norm: float = 1.0) -> dict[str, float]:
    """One optimizer step over ``micro_batches``; returns the mean of ``{"loss": total, <objective>: ...}``."""
    if not micro_batches:
        raise ValueError("an optimizer step needs at least one micro-batch")
    training.model.train()
    training.optimizer.zero_grad(set_to_none=True)
    k = len(micro_batches)
    sums: dict[str, float] = {}
    for i, batch in enumerate(micro_batches):
        # DDP all-reduces gradients in backward; only the last micro-batch of the step needs it.
        skip_sync = i < k - 1 and hasattr(training.model, "no_sync")
        with training.model.no_sync() if skip_sync else contextlib.nullcontext():
            total, parts = training.model(batch)
            (total / k).backward()
        for key, value in {"loss": total, **parts}.items():
            sums[key] = sums.get(key, 0.0) + float(value.detach())
    if max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_([p for p in training.module.parameters() if p.requires_grad], max_grad_norm)
    training.optimizer.step()
    training.scheduler.step()
    training.global_step += 1
    return {key: value / k for key, value in sums.items()}


def grouped(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive lists of ``size`` items (the last one shorter)."""
    group: list[Any] = []
    for item in items:
        group.append(item)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


def run_epoch(training: Pretraining, batches: Iterable[Any], batcher: PretrainBatcher, cfg: PretrainConfig, *,
              epoch: int, rank: int = 0, log: bool = False, steps_per_epoch: int = 0) -> tuple[EpochStats, float]:
    """Train on every micro-batch of one epoch (``batches``: pair rows as ``PretrainBatcher`` takes
    them); returns this worker's statistics and the wall time (data iteration included).

    Randomness is a function of (seed, epoch, rank): the MLM masks come from one generator per
    epoch, the WPS words from (seed, epoch, pair id).
    """
    stats = EpochStats()
    generator = torch.Generator().manual_seed(cfg.optim.seed + 1000 * epoch + rank)
    draw_seed = f"{cfg.optim.seed}:{epoch}"
    start = time.perf_counter()
    iterator = iter(batches)

    def micro_batches() -> Iterator[tuple[dict[str, torch.Tensor], int]]:
        while True:
            wait = time.perf_counter()
            batch = next(iterator, None)
            stats.data_wait_s += time.perf_counter() - wait
            if batch is None:
                return
            rows = as_rows(batch)
            yield batcher(rows, generator=generator, draw_seed=draw_seed), len(rows)

    for group in grouped(micro_batches(), cfg.optim.grad_accum_steps):
        losses = accumulation_step(training, [b for b, _ in group], cfg.optim.max_grad_norm)
        stats.add(losses, sum(n for _, n in group))
        every = cfg.optim.log_every_steps
        if log and every and stats.steps % every == 0:
            logger.info(f"epoch {epoch + 1}/{cfg.optim.epochs} step {stats.steps}/{steps_per_epoch} "
                        f"(global {training.global_step}) loss {stats.mean('loss'):.4f} "
                        f"{stats.examples / (time.perf_counter() - start):.1f} pairs/s")
    return stats, time.perf_counter() - start


def tatoeba_metrics(encoder: TextEncoder, rows: Mapping[str, Sequence[str]], batch_size: int = 64) -> dict[str, float]:
    """Top-1 retrieval accuracy (mean of xx→en and en→xx) per language of ``rows`` (columns
    ``lang``, ``src``, ``tgt``) and its average over languages."""
    langs = np.asarray(rows["lang"], dtype=str)
    src, tgt = list(rows["src"]), list(rows["tgt"])
    metrics = {}
    for lang in dict.fromkeys(langs.tolist()):
        idx = np.flatnonzero(langs == lang)
        result = tatoeba_accuracy(encoder.encode([src[i] for i in idx], batch_size=batch_size),
                                  encoder.encode([tgt[i] for i in idx], batch_size=batch_size))
        metrics[tatoeba_metric(lang)] = result.mean
    if metrics:
        metrics[tatoeba_metric(AVG)] = float(np.mean(list(metrics.values())))
    return metrics


def write_checkpoint(directory: Path, training: Pretraining, cfg: PretrainConfig) -> Path:
    """The training state (``xlt.train.reporting.write_state``) plus ``encoder/``, a ``local:`` model."""
    write_state(directory, training.module, training.optimizer, training.scheduler, training.epoch,
                training.global_step, cfg)
    training.module.export(directory / ENCODER_DIR)
    return directory


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """Ray Train entry point: ``config`` is ``asdict`` of a resolved ``PretrainConfig``."""
    import ray.train

    from ..train import reporting

    cfg = from_dict(PretrainConfig, config)
    rank, world, prepare = worker_setup(cfg)
    steps_per_epoch = cfg.steps_per_epoch(world)
    training = build_pretraining(cfg, steps_per_epoch, prepare=prepare)
    batcher = PretrainBatcher(Tokenization.from_encoder(training.module.encoder), training.module.requires,
                              cfg.batch.features or "pooled", cfg.batch.mlm_input, cfg.batch.mask_probability)
    state = reporting.latest_state(PretrainConfig)
    resumed_from = training.restore(state) if state is not None else 0
    if rank == 0:
        if state is None:
            logger.info(f"pretraining ({cfg.recipe}: {', '.join(cfg.objective_names)}) {cfg.optim.epochs} epochs × "
                        f"{steps_per_epoch} steps of {cfg.optim.grad_accum_steps} micro-batch(es) on {world} worker(s)")
        elif training.epoch >= cfg.optim.epochs:
            logger.info(f"the run is complete: {training.epoch} of {cfg.optim.epochs} epochs done; "
                        "raise optim.epochs to train on")
        else:
            logger.info(f"resuming after epoch {training.epoch} at global step {resumed_from}")
    shard = ray.train.get_dataset_shard("train")
    for epoch in range(training.epoch, cfg.optim.epochs):
        torch.manual_seed(cfg.optim.seed + 1000 * epoch + rank)  # dropout: a resumed run draws what it would have
        batches = shard.iter_batches(batch_size=cfg.optim.batch_size, batch_format="pyarrow",
                                     local_shuffle_buffer_size=cfg.optim.shuffle_buffer or None,
                                     local_shuffle_seed=cfg.optim.seed + 1000 * epoch + rank)
        stats, seconds = run_epoch(training, batches, batcher, cfg, epoch=epoch, rank=rank, log=rank == 0,
                                   steps_per_epoch=steps_per_epoch)
        training.epoch = epoch + 1
        metrics = epoch_metrics(all_reduce_sums(stats), seconds, training, resumed_from, world)
        if rank == 0:
            if cfg.data.eval_langs:
                rows = collect(ray.train.get_dataset_shard(TATOEBA), cfg.optim.eval_batch_size, ("lang", "src", "tgt"))
                metrics.update(tatoeba_metrics(training.module.encoder, rows, cfg.optim.eval_batch_size))
            logger.info(epoch_line(metrics))
            reporting.report(metrics, lambda directory: write_checkpoint(directory, training, cfg),
                             checkpoint_name(training.epoch, training.global_step))
        else:
            reporting.report(metrics)


def epoch_line(metrics: Mapping[str, float]) -> str:
    """One progress line per epoch: loss, throughput, Tatoeba accuracy when evaluated."""
    parts = [f"epoch {int(metrics[TRAIN_EPOCH])}", f"step {int(metrics[TRAIN_GLOBAL_STEP])}",
             f"loss {metrics[TRAIN_LOSS]:.4f}", f"{metrics[TRAIN_SAMPLES_PER_S]:.1f} pairs/s"]
    avg = tatoeba_metric(AVG)
    if avg in metrics:
        prefix = tatoeba_metric(AVG)[: -len(AVG)]
        langs = [k[len(prefix):] for k in metrics if k.startswith(prefix) and k != avg]
        parts.append("tatoeba " + " ".join(f"{lang} {metrics[tatoeba_metric(lang)]:.3f}" for lang in langs)
                     + f" avg {metrics[avg]:.3f}")
    return " | ".join(parts)
