"""The per-worker fine-tuning loop: encoder → head, loss = CE + Σ λ_k·aux_k, evaluation per language.

Pieces, each usable without Ray (tests, ``benchmarks/train_overhead.py``):

- ``FeaturesAndLogits``: one encoder pass over the N texts of a view batch, returning the
  sentence features (N, D) the alignment objectives read and the head's logits (N, C).
- ``compute_losses``: CE on the labelled originals (``is_anchor``; in translate-train the
  translations are originals too) plus ``WeightedObjectives`` over the batch outputs; the loop
  never asks which objectives are configured.
- ``build_training`` / ``Training.restore`` / ``train_step``: model, AdamW, linear schedule; a step.
- ``evaluate``: accuracy per language, average over targets, transfer gap (``xlt.eval``).

``train_loop_per_worker(config)`` wires them to Ray Train: it rebuilds the config, resumes
from the latest checkpoint if there is one (at its epoch and global step), iterates its shard
of ``"train"``, and reports once per epoch through ``reporting``. Rank 0 evaluates (on the
unsplit ``"val"`` / ``"test"`` datasets) and writes checkpoints; the other ranks wait at the
report barrier. Evaluation runs on the unwrapped module, so it needs no collective calls.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..config import from_dict
from ..eval.classification import ACC, AVG_TARGET, F1, gap_name, metric_name, transfer_metrics
from ..losses import WeightedObjectives, build_objectives
from ..models import Classifier, TransformerEncoder, load_encoder
from ..models.encoder import Item
from .batches import UNKNOWN_LABEL, ViewBatch, flatten_batch, items_of
from .config import FinetuneConfig

if TYPE_CHECKING:
    from .reporting import TrainState

logger = logging.getLogger(__name__)

# Metric names (style.md, convention 7); per-objective losses are train/loss/<objective name>.
TRAIN_LOSS = metric_name("train", "loss")
CE = "ce"
TRAIN_EPOCH = metric_name("train", "epoch")
TRAIN_GLOBAL_STEP = metric_name("train", "global_step")
TRAIN_RESUMED_FROM_STEP = metric_name("train", "resumed_from_step")
TRAIN_LR = metric_name("train", "lr")
TRAIN_SAMPLES_PER_S = metric_name("train", "samples_per_s")
TRAIN_EPOCH_TIME_S = metric_name("train", "epoch_time_s")  # of the epoch's batches, data iteration included
TRAIN_DATA_WAIT_S = metric_name("train", "data_wait_s")  # of it, waiting for batches (mean over workers)


def loss_metric(part: str) -> str:
    """``train/loss/<part>``: ``ce`` or an objective's name."""
    return metric_name("train", "loss", part)


class FeaturesAndLogits(nn.Module):
    """``Classifier.forward`` that also returns the features: ``items -> (features (N, D), logits (N, C))``.

    The alignment objectives need the sentence embeddings that the head reads, from the same
    forward pass (one encoder call per step), and DDP must see that pass through its own
    ``forward`` to synchronise gradients: hence a module rather than a second call.
    """

    def __init__(self, classifier: Classifier) -> None:
        super().__init__()
        self.classifier = classifier

    def forward(self, texts: list[Item]) -> tuple[torch.Tensor, torch.Tensor]:
        encoder, head = self.classifier.encoder, self.classifier.head
        with torch.set_grad_enabled(torch.is_grad_enabled() and encoder.trainable):
            features = encoder.embed(texts)  # (N, D)
        logits = head(self.classifier.dropout(features.to(head.weight.device)))  # (N, C)
        return features, logits


def supervised_ce(logits: torch.Tensor, labels: torch.Tensor, is_anchor: torch.Tensor) -> torch.Tensor:
    """Mean CE over the labelled originals; views carry no CE (Wang et al. 2022, §3: CE on the training
    data, the views enter through the alignment term). Zero (with gradient) if none is labelled."""
    mask = is_anchor & (labels != UNKNOWN_LABEL)  # (N,)
    if not bool(mask.any()):
        return logits.sum() * 0
    return F.cross_entropy(logits[mask].float(), labels[mask])


def compute_losses(model: nn.Module, objectives: WeightedObjectives | None,
                   batch: ViewBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``loss = CE + Σ λ_k·aux_k`` over one view batch; returns the total and the unweighted parts."""
    features, logits = model(batch.texts)
    outputs = batch.outputs(features, logits)
    ce = supervised_ce(logits, outputs["labels"], outputs["is_anchor"])
    parts = {CE: ce}
    total = ce
    if objectives is not None:
        aux, aux_parts = objectives(outputs)
        total = total + aux
        parts.update(aux_parts)
    return total, parts


def param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """Weight decay on weight matrices only: not on biases and LayerNorm weights (1-D tensors)."""
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


@dataclass
class Training:
    """Everything a step changes. ``model`` is what the step calls (DDP-wrapped under Ray with
    several workers); ``classifier`` is the plain module that is saved and evaluated."""

    classifier: Classifier
    model: nn.Module
    objectives: WeightedObjectives | None
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    epoch: int = 0  # completed epochs
    global_step: int = 0  # optimizer steps so far
    label_index: dict[str, int] = field(default_factory=dict)

    def restore(self, state: TrainState) -> int:
        """Load a checkpoint's state (weights, optimizer, schedule, counters); returns its step."""
        self.classifier.load_state_dict(state.model)
        self.optimizer.load_state_dict(state.optimizer)
        self.scheduler.load_state_dict(state.scheduler)
        self.epoch, self.global_step = state.epoch, state.global_step
        assert self.scheduler.last_epoch == self.global_step, "the LR schedule advances once per optimizer step"
        return self.global_step


def build_classifier(cfg: FinetuneConfig) -> Classifier:
    """Encoder + head over the task's labels (pairs if the task has them); word embeddings frozen if configured."""
    if not cfg.task.labels:
        raise ValueError("cfg.task.labels is empty: resolve the config first (xlt.train.trainer.resolve)")
    encoder = load_encoder(cfg.model)
    if cfg.optim.freeze_word_embeddings:
        if not isinstance(encoder, TransformerEncoder):
            raise ValueError(f"optim.freeze_word_embeddings: {cfg.model.source} has no word embeddings to freeze")
        encoder.backbone.get_input_embeddings().weight.requires_grad_(False)
    return Classifier(encoder, cfg.task.labels, paired=cfg.task.paired)


def build_training(cfg: FinetuneConfig, steps_per_epoch: int,
                   prepare: Callable[[nn.Module], nn.Module] = lambda m: m) -> Training:
    """Classifier, its step module (through ``prepare``, e.g. ``ray.train.torch.prepare_model``),
    the objectives, AdamW and the linear schedule with warmup over ``epochs × steps_per_epoch``."""
    from transformers import get_linear_schedule_with_warmup

    torch.manual_seed(cfg.optim.seed)  # the head's initialisation
    classifier = build_classifier(cfg)
    model = prepare(FeaturesAndLogits(classifier))
    objectives = build_objectives(cfg.objectives) if cfg.objectives else None
    optimizer = torch.optim.AdamW(param_groups(classifier, cfg.optim.weight_decay), lr=cfg.optim.lr)
    total = steps_per_epoch * cfg.optim.epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, round(cfg.optim.warmup_ratio * total), total)
    return Training(classifier, model, objectives, optimizer, scheduler,
                    label_index={label: i for i, label in enumerate(cfg.task.labels)})


def train_step(training: Training, batch: ViewBatch, max_grad_norm: float = 1.0) -> dict[str, float]:
    """One optimizer step on ``batch``; returns ``{"loss": total, "ce": ..., <objective>: ...}`` as floats."""
    training.model.train()
    total, parts = compute_losses(training.model, training.objectives, batch)
    training.optimizer.zero_grad(set_to_none=True)
    total.backward()
    if max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_([p for p in training.classifier.parameters() if p.requires_grad],
                                       max_grad_norm)
    training.optimizer.step()
    training.scheduler.step()
    training.global_step += 1
    return {"loss": float(total.detach()), **{k: float(v.detach()) for k, v in parts.items()}}


def evaluate(classifier: Classifier, rows: Mapping[str, Iterable], source_lang: str, split: str,
             batch_size: int = 64) -> dict[str, float]:
    """Accuracy and macro-F1 per language, their target averages and transfer gaps
    (``xlt.eval.classification.transfer_metrics``) on ``rows`` (columns ``text``, ``label``,
    ``lang``, and ``text_pair`` for a pair task)."""
    labels, langs = list(rows["label"]), list(rows["lang"])
    predictions = classifier.predict(items_of(rows), batch_size=batch_size)
    return transfer_metrics(np.asarray(labels, dtype=str), np.asarray(predictions.labels, dtype=str),
                            np.asarray(langs, dtype=str), source_lang, split)


@dataclass
class EpochStats:
    """Running sums of one epoch on one worker."""

    sums: dict[str, float] = field(default_factory=dict)
    steps: int = 0
    examples: int = 0
    data_wait_s: float = 0.0  # time spent waiting for the next batch

    def add(self, losses: Mapping[str, float], examples: int) -> None:
        for k, v in losses.items():
            self.sums[k] = self.sums.get(k, 0.0) + v
        self.steps += 1
        self.examples += examples

    def mean(self, key: str) -> float:
        return self.sums[key] / max(self.steps, 1)


def all_reduce_sums(stats: EpochStats) -> EpochStats:
    """Sum the epoch's statistics over the workers (a no-op without a process group)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return stats
    keys = sorted(stats.sums)
    values = torch.tensor([stats.sums[k] for k in keys] + [stats.steps, stats.examples, stats.data_wait_s],
                          dtype=torch.float64)
    dist.all_reduce(values)
    return EpochStats(dict(zip(keys, values[:-3].tolist())), int(values[-3]), int(values[-2]), float(values[-1]))


def _progress(message: str) -> None:
    # Through logging, not print: Ray Train V2 routes a worker's root logger to the driver's
    # console once, whereas its patched print also tees into Ray's own stream (lines twice).
    logger.info(message)


def collect(iterator: Any, batch_size: int, columns: Sequence[str] = ("text", "text_pair", "label", "lang")
            ) -> dict[str, list]:
    """``columns`` (those present) of all rows of an (unsplit) evaluation dataset iterator, as lists."""
    out: dict[str, list] = {}
    for batch in iterator.iter_batches(batch_size=batch_size, batch_format="numpy"):
        for key in columns:
            if key in batch:
                out.setdefault(key, []).extend(batch[key].tolist())
    return out


def run_epoch(training: Training, batches: Iterable[Mapping[str, Any]], cfg: FinetuneConfig, *,
              log: bool, steps_per_epoch: int) -> tuple[EpochStats, float]:
    """Train on every batch of one epoch; returns this worker's statistics and the wall time
    (data iteration included)."""
    stats = EpochStats()
    start = time.perf_counter()
    iterator = iter(batches)
    while True:
        wait = time.perf_counter()
        batch = next(iterator, None)
        stats.data_wait_s += time.perf_counter() - wait
        if batch is None:
            break
        view_batch = flatten_batch(batch, training.label_index)
        stats.add(train_step(training, view_batch, cfg.optim.max_grad_norm), view_batch.num_examples)
        every = cfg.optim.log_every_steps
        if log and every and stats.steps % every == 0:
            _progress(f"epoch {training.epoch + 1}/{cfg.optim.epochs} step {stats.steps}/{steps_per_epoch} "
                      f"(global {training.global_step}) loss {stats.mean('loss'):.4f} "
                      f"{stats.examples / (time.perf_counter() - start):.1f} examples/s")
    return stats, time.perf_counter() - start


def epoch_metrics(stats: EpochStats, seconds: float, training: Training, resumed_from: int,
                  workers: int = 1) -> dict[str, float]:
    """The ``train/`` metrics of one epoch (``stats`` summed over ``workers``)."""
    metrics = {TRAIN_LOSS: stats.mean("loss")}
    metrics.update({loss_metric(k): stats.mean(k) for k in stats.sums if k != "loss"})
    metrics.update({TRAIN_EPOCH: training.epoch, TRAIN_GLOBAL_STEP: training.global_step,
                    TRAIN_RESUMED_FROM_STEP: resumed_from, TRAIN_LR: training.scheduler.get_last_lr()[0],
                    TRAIN_SAMPLES_PER_S: stats.examples / seconds if seconds > 0 else math.nan,
                    TRAIN_EPOCH_TIME_S: seconds, TRAIN_DATA_WAIT_S: stats.data_wait_s / workers})
    return metrics


def worker_setup(cfg: Any) -> tuple[int, int, Callable[[nn.Module], nn.Module]]:
    """What every Ray Train worker of xlt does first (fine-tuning and pretraining): torch threads
    = ``cfg.scaling.cpus_per_worker``, Ray Data progress bars off; returns (rank, world size,
    ``prepare`` = ``ray.train.torch.prepare_model`` with the DDP options ``cfg.model`` needs)."""
    import ray.data
    import ray.train
    import ray.train.torch

    context = ray.train.get_context()
    torch.set_num_threads(cfg.scaling.cpus_per_worker)
    ray.data.DataContext.get_current().enable_progress_bars = False
    # Pooling an intermediate layer leaves the layers above it without gradient.
    ddp = {"find_unused_parameters": cfg.model.layer != -1}
    return (context.get_world_rank(), context.get_world_size(),
            lambda m: ray.train.torch.prepare_model(m, parallel_strategy_kwargs=ddp))


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """Ray Train entry point: ``config`` is ``asdict`` of a resolved ``FinetuneConfig``."""
    import ray.train

    from . import reporting

    cfg = from_dict(FinetuneConfig, config)
    rank, world, prepare = worker_setup(cfg)
    steps_per_epoch = cfg.steps_per_epoch(world)
    training = build_training(cfg, steps_per_epoch, prepare=prepare)
    state = reporting.latest_state()
    resumed_from = training.restore(state) if state is not None else 0
    if rank == 0:
        if state is None:
            _progress(f"training {cfg.optim.epochs} epochs × {steps_per_epoch} steps on {world} worker(s)")
        elif training.epoch >= cfg.optim.epochs:
            _progress(f"the run is complete: {training.epoch} of {cfg.optim.epochs} epochs done; "
                      "raise optim.epochs to train on")
        else:
            _progress(f"resuming after epoch {training.epoch} at global step {resumed_from}")
    shard = ray.train.get_dataset_shard("train")
    for epoch in range(training.epoch, cfg.optim.epochs):
        # Dropout masks and shuffling depend on (seed, epoch, rank) only: a resumed run draws
        # what the uninterrupted run would have drawn.
        torch.manual_seed(cfg.optim.seed + 1000 * epoch + rank)
        batches = shard.iter_batches(batch_size=cfg.optim.batch_size, batch_format="numpy",
                                     local_shuffle_buffer_size=cfg.optim.shuffle_buffer or None,
                                     local_shuffle_seed=cfg.optim.seed + 1000 * epoch + rank)
        stats, seconds = run_epoch(training, batches, cfg, log=rank == 0, steps_per_epoch=steps_per_epoch)
        training.epoch = epoch + 1
        metrics = epoch_metrics(all_reduce_sums(stats), seconds, training, resumed_from, world)
        last = training.epoch == cfg.optim.epochs
        if rank == 0:
            splits = (["val"] if cfg.eval_every_epoch or last else []) + (["test"] if last else [])
            for split in splits:
                rows = collect(ray.train.get_dataset_shard(split), cfg.optim.eval_batch_size)
                metrics.update(evaluate(training.classifier, rows, cfg.task.source_lang, split,
                                        cfg.optim.eval_batch_size))
            _progress(epoch_line(metrics))
        reporting.report_epoch(metrics, training if rank == 0 else None, cfg)


def epoch_line(metrics: Mapping[str, float]) -> str:
    """One progress line per epoch: loss, and the transfer metrics when evaluated."""
    parts = [f"epoch {int(metrics[TRAIN_EPOCH])}", f"step {int(metrics[TRAIN_GLOBAL_STEP])}",
             f"loss {metrics[TRAIN_LOSS]:.4f}", f"{metrics[TRAIN_SAMPLES_PER_S]:.1f} examples/s"]
    for split in ("val", "test"):
        acc, f1 = metric_name(split, ACC, AVG_TARGET), metric_name(split, F1, AVG_TARGET)
        if acc in metrics:
            parts.append(f"{split} avg_target acc {metrics[acc]:.3f} f1 {metrics[f1]:.3f} "
                         f"gap {metrics[gap_name(split)]:.3f}")
    return " | ".join(parts)
