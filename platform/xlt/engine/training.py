"""What a training step changes: module, AdamW, linear schedule, counters, epoch statistics.

Pieces, each usable without Ray (tests, ``benchmarks/train_overhead.py``):

- ``Training``: the module that is saved and evaluated, the module the step calls (DDP-wrapped
  under Ray Train with several workers), AdamW, the schedule, the epoch and step counters;
  ``restore`` loads a ``TrainState`` (what a checkpoint holds, ``engine.checkpoints``) into it.
- ``build_training``: AdamW (fused) over the workload's parameter groups (by default weight decay on matrices
  only) and a linear schedule with warmup over ``epochs × steps_per_epoch`` optimizer steps, each group's from
  the step the workload says (``linear_factor``).
- ``EpochStats`` / ``all_reduce_sums`` / ``epoch_metrics``: an epoch's ``train/`` metrics summed
  over the workers.
"""

from __future__ import annotations

import math
from functools import partial
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..hardware import check_precision, resolve_precision
from ..metrics import (TRAIN_DATA_WAIT_S, TRAIN_EPOCH, TRAIN_EPOCH_TIME_S, TRAIN_GLOBAL_STEP, TRAIN_LOSS, TRAIN_LR,
                       TRAIN_RESUMED_FROM_STEP, TRAIN_SAMPLES_PER_S, loss_metric)
from ..models import load_trained
from .settings import OptimSettings

# A step's loss: the total (to back-propagate) and its named, unweighted parts.
LossFn = Callable[[nn.Module, Any], tuple[torch.Tensor, Mapping[str, torch.Tensor]]]


def epoch_seed(seed: int, epoch: int, rank: int) -> int:
    """The seed of dropout masks, shuffling and sampling in one epoch on one worker: a function of
    (seed, epoch, rank) only, so a resumed run draws what the uninterrupted run would have drawn."""
    return seed + 1000 * epoch + rank


def trained_parameters(*modules: nn.Module | None) -> list[nn.Parameter]:
    """The parameters of ``modules`` that train, in order (``None`` entries have none)."""
    return [p for module in modules if module is not None for p in module.parameters() if p.requires_grad]


def param_groups(weight_decay: float, *modules: nn.Module | None,
                 own_lr: tuple[nn.Module, float] | None = None) -> list[dict[str, Any]]:
    """Weight decay on weight matrices only: not on biases and LayerNorm weights (1-D tensors).
    ``own_lr``: (a submodule, its learning rate): its parameters in groups of their own at that rate."""
    own = {id(p) for p in own_lr[0].parameters()} if own_lr else set()
    trained = trained_parameters(*modules)
    groups = []
    for in_own in (False, True) if own_lr else (False,):
        params = [p for p in trained if (id(p) in own) == in_own]
        for decayed in (True, False):
            group = {"params": [p for p in params if (p.ndim >= 2) == decayed],
                     "weight_decay": weight_decay if decayed else 0.0}
            groups.append({**group, "lr": own_lr[1]} if in_own else group)
    return groups


@dataclass(frozen=True)
class BestEpoch:
    """``optim.keep: best-dev``: the epoch of the best dev score so far, its score and its trained weights (on CPU,
    as ``xlt.models.trained_state`` leaves them: without the frozen parameters, which no epoch changes)."""

    epoch: int
    score: float
    model: dict[str, torch.Tensor]


@dataclass(frozen=True)
class TrainState:
    """What a checkpoint holds, loaded on CPU."""

    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    scheduler: dict[str, Any]
    epoch: int
    global_step: int
    config: Any  # the run's config, e.g. a FinetuneConfig
    from_source: tuple[str, ...] = ()  # the frozen parameters ``model`` leaves out (xlt.models.load_trained)
    scaler: dict[str, Any] | None = None  # the fp16 gradient scaler's state; None for fp32 and bf16
    loss_modules: dict[str, torch.Tensor] | None = None  # Training.loss_modules' weights; None without any
    extra: dict[str, Any] | None = None  # Training.extra_state(): what a workload's training keeps besides
    best: BestEpoch | None = None  # Training.best
    stopped: bool = False  # Training.stopped


@dataclass
class Training:
    """Everything a step changes. ``model`` is what the step calls (DDP-wrapped under Ray with
    several workers); ``module`` is the plain module that is saved and evaluated. ``loss_modules``:
    weights only the loss uses, inside ``model`` (so that DDP synchronises them) but not in
    ``module`` (the alignment objectives' projection heads, ``xlt.losses.projection``): trained and
    resumed with it (``train_state.pt``), never saved with it (``model.pt``, exports)."""

    module: nn.Module
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    epoch: int = 0  # completed epochs
    global_step: int = 0  # optimizer steps so far
    precision: str = "fp32"  # of each step's forward pass and loss: optim.precision resolved here
    scaler: torch.amp.GradScaler | None = None  # fp16 only
    loss_modules: nn.Module | None = None
    best: BestEpoch | None = None  # optim.keep: best-dev, once an epoch was scored
    stopped: bool = False  # the run ended before optim.epochs: optim.patience epochs without a better dev score

    def extra_state(self) -> dict[str, Any] | None:
        """What a workload's training keeps besides the weights, optimizer and counters (tensors on CPU), which a
        checkpoint saves (``train_state.pt``) and ``restore`` loads back: nothing here."""
        return None

    def load_extra_state(self, state: dict[str, Any] | None) -> None:
        """Load what ``extra_state`` returned (``None``: a checkpoint that kept nothing)."""

    def restore(self, state: TrainState) -> int:
        """Load a checkpoint's state (weights, optimizer, schedule, counters, fp16 scaler); returns its step."""
        load_trained(self.module, state.model, state.from_source)
        self.optimizer.load_state_dict(state.optimizer)
        self.scheduler.load_state_dict(state.scheduler)
        if self.scaler is not None and state.scaler is not None:
            self.scaler.load_state_dict(state.scaler)
        if (self.loss_modules is None) != (state.loss_modules is None):
            raise ValueError("the checkpoint's projection heads do not match this run's objectives "
                             f"({'none' if state.loss_modules is None else 'some'} saved)")
        if self.loss_modules is not None:
            self.loss_modules.load_state_dict(state.loss_modules)
        self.load_extra_state(state.extra)
        self.epoch, self.global_step = state.epoch, state.global_step
        self.best, self.stopped = state.best, state.stopped
        assert self.scheduler.last_epoch == self.global_step, "the LR schedule advances once per optimizer step"
        return self.global_step


def build_training(module: nn.Module, optim: OptimSettings, steps_per_epoch: int,
                   wrap: Callable[[nn.Module], nn.Module] = lambda m: m, *, step_module: nn.Module | None = None,
                   loss_modules: nn.Module | None = None, training_class: type[Training] = Training,
                   groups: Sequence[dict[str, Any]] | None = None, starts: Sequence[int] | None = None,
                   **extra: Any) -> Training:
    """``module``, its step module (``step_module`` or ``module`` itself, through ``wrap``, e.g.
    ``ray.train.torch.prepare_model``), AdamW and the linear schedule with warmup over ``epochs × steps_per_epoch``
    optimizer steps, as a ``training_class`` (with ``extra`` fields), its steps at ``optim.precision`` as resolved for
    the device the module is on. AdamW's parameter ``groups`` are the workload's to declare (a group may carry its
    own ``lr``), by default ``param_groups`` over ``module`` and ``loss_modules`` (a part of the step module:
    ``Training``); ``starts``: the step each group's schedule starts at (before it, its rate is 0), by default 0."""
    model = wrap(step_module if step_module is not None else module)
    device = device_of(module).type
    if device == "cuda":  # the GPU this worker was given: its driver may have had none to check
        check_precision(optim.precision, device, "optim.precision")
    precision = resolve_precision(optim.precision, device)
    groups = list(groups) if groups is not None else param_groups(optim.weight_decay, module, loss_modules)
    # Fused: one kernel per parameter group and step (CPU and CUDA) instead of a chain of for-each
    # tensor operations, the same weights to float rounding (benchmarks/adamw_step.json).
    optimizer = torch.optim.AdamW(groups, lr=optim.lr, fused=True)
    total = steps_per_epoch * optim.epochs
    # partial, not a function object with state: LambdaLR saves none of it, so a resumed run that changes
    # optim.epochs schedules over its new total.
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, [
        partial(linear_factor, start=start, warmup=round(optim.warmup_ratio * (total - start)), total=total)
        for start in (starts if starts is not None else [0] * len(groups))])
    scaler = torch.amp.GradScaler(device) if precision == "fp16" else None
    return training_class(module, model, optimizer, scheduler, precision=precision, scaler=scaler,
                          loss_modules=loss_modules, **extra)


def end_epoch(training: Training) -> None:
    """Count a finished epoch."""
    training.epoch += 1


def linear_factor(step: int, start: int, warmup: int, total: int) -> float:
    """The learning-rate factor of optimizer step ``step``: 0 before ``start``, then a linear warm-up over
    ``warmup`` steps and a linear decay to 0 at ``total`` (``transformers.get_linear_schedule_with_warmup``'s
    shape, shifted to begin at ``start``: ``optim.probe_epochs``)."""
    step -= start
    if step < 0:
        return 0.0
    if step < warmup:
        return step / max(1, warmup)
    return max(0.0, (total - start - step) / max(1, total - start - warmup))


def device_of(module: nn.Module) -> torch.device:
    """The device of ``module``'s first parameter (CPU for a module without any)."""
    return next(module.parameters(), torch.empty(0)).device


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
