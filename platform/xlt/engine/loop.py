"""The one per-worker training loop; a job plugs a model, a batcher and a step into it (a ``Workload``).

``train_loop_per_worker(config, workload)`` is the Ray Train entry point of every training job
(fine-tuning, alignment pretraining, co-training learners, sweep trials). On every worker it:

1. rebuilds the config (``workload.config_class``), sets torch threads and wraps the module for DDP;
2. seeds ``optim.seed`` and asks the workload for its module and optimiser (``start_training``:
   new heads are initialised the same on every worker and in every run);
3. resumes from ``ray.train.get_checkpoint()`` if there is one (weights, optimizer, schedule,
   epoch and step counters; ``checkpoints.latest_state``);
4. on a fresh run, lets the workload prepare on its rows (``workload.begin``: e.g. a head fitted on frozen
   features), then per epoch: seeds dropout and the local shuffle with ``epoch_seed(seed, epoch, rank)``,
   iterates its shard of ``"train"`` in micro-batches (``workload.batcher`` turns each into the
   step's input), groups them into optimizer steps of ``grad_accum_steps`` (``accumulation_step``
   with ``workload.loss``), sums the epoch's statistics over the workers, and lets rank 0 evaluate
   (``workload.evaluate``) and write the checkpoint (the state plus ``workload.write``) while the
   other ranks wait at the report barrier. Evaluation runs on the unwrapped module, so it needs
   no collective calls.

``run_epoch`` is the same epoch without Ray (tests, ``benchmarks/train_overhead.py``).
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from ..config import from_dict
from ..progress import progress
from . import checkpoints, session
from ..metrics import TRAIN_EPOCH, TRAIN_GLOBAL_STEP, TRAIN_LOSS, TRAIN_SAMPLES_PER_S
from .. import placement
from .training import (EpochStats, Training, accumulation_step, all_reduce_sums, end_epoch, epoch_metrics,
                       epoch_seed, grouped, keep_probe)

logger = logging.getLogger(__name__)

Batcher = Callable[[Any], tuple[Any, int]]  # a micro-batch as iterated -> (the step's input, examples in it)


class Workload(ABC):
    """What a training job plugs into the engine. Subclasses are stateless (Ray ships the instance
    to every worker); whatever a worker builds lives in ``Training`` or in the batcher it returns.

    ``config_class`` must have ``optim`` (``OptimSettings``), ``scaling``, ``output`` sections and
    ``steps_per_epoch(num_workers)``.
    """

    config_class: ClassVar[type]
    batch_format: ClassVar[Literal["numpy", "pyarrow"]] = "numpy"
    unit: ClassVar[str] = "examples"  # what ``samples_per_s`` counts, in progress lines

    @abstractmethod
    def build(self, cfg: Any, steps_per_epoch: int, prepare: Callable[[nn.Module], nn.Module]) -> Training:
        """The module to train and its optimiser (``xlt.engine.build_training``); called by
        ``start_training`` after ``torch.manual_seed(cfg.optim.seed)``."""

    @abstractmethod
    def batcher(self, cfg: Any, training: Training, epoch: int, rank: int) -> Batcher:
        """How one epoch turns micro-batches into the step's inputs (its randomness seeded by
        ``epoch_seed``)."""

    @abstractmethod
    def loss(self, training: Training, model: nn.Module, inputs: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``(total, {part: unweighted value})`` of one micro-batch through ``model`` (the step module)."""

    def begin(self, cfg: Any, training: Training, data: Any) -> None:
        """What a fresh run does before its first step, on every worker, given its share of the training rows
        (``data``: ``fit_batches``' input), e.g. fit a head on frozen features; nothing by default. Whatever it sets
        must come out the same on every worker (they start from the same weights)."""

    def evaluate(self, cfg: Any, training: Training, last: bool) -> dict[str, float]:
        """Rank 0's metrics after an epoch (``last``: after the final one); none by default."""
        return {}

    def write(self, directory: Path, training: Training, cfg: Any) -> None:
        """What a checkpoint holds beside the training state (e.g. an exported encoder); nothing by default."""

    def describe(self, cfg: Any, steps_per_epoch: int, world: int) -> str:
        """The first progress line of a fresh run."""
        return f"training {cfg.optim.epochs} epochs × {steps_per_epoch} steps on {world} worker(s)"

    def summary(self, metrics: Mapping[str, float]) -> list[str]:
        """Parts of an epoch's progress line beyond loss and throughput (e.g. dev scores)."""
        return []

    def lengths(self, training: Training, batch: Any) -> Sequence[int] | None:
        """Each row's padded cost (e.g. its tokens), for ``optim.group_by_length``; ``None`` when
        padding costs nothing (the default): rows are not regrouped."""
        return None


def fit_batches(data: Any, workload: Workload, training: Training, cfg: Any, seed: int) -> Iterable[Any]:
    """One epoch's micro-batches of this worker's rows ``data``, whether the fit is a run or served:
    Ray Data's local shuffle — the rows drawn at random from a buffer of at least
    ``optim.shuffle_buffer`` rows (0: in data order), seeded with the epoch's ``seed`` — then
    ``epoch_batches``."""
    return epoch_batches(lambda size: data.iter_batches(
        batch_size=size, batch_format=workload.batch_format,
        local_shuffle_buffer_size=cfg.optim.shuffle_buffer or None, local_shuffle_seed=seed), workload, training, cfg, seed)


def epoch_batches(read: Callable[[int], Iterable[Any]], workload: Workload, training: Training, cfg: Any,
                  seed: int) -> Iterable[Any]:
    """One epoch's micro-batches: ``read(size)`` iterates this worker's shuffled rows in batches of
    ``size`` rows. With ``optim.group_by_length`` = M, it reads mega-batches of M micro-batches,
    sorts each by ``workload.lengths`` and yields its micro-batches in an order drawn from ``seed``:
    as many micro-batches as without grouping (only the last mega-batch is short), each padded
    to rows of similar length."""
    optim = cfg.optim
    if not optim.group_by_length:
        return read(optim.batch_size)
    return _length_grouped(read(optim.batch_size * optim.group_by_length), workload, training, optim.batch_size,
                           np.random.default_rng(seed))


def _length_grouped(megabatches: Iterable[Mapping[str, np.ndarray]], workload: Workload, training: Training,
                    batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, np.ndarray]]:
    for mega in megabatches:
        lengths = workload.lengths(training, mega)
        if lengths is None:
            raise ValueError(f"optim.group_by_length: {type(workload).__name__} has no row lengths to group by; "
                             "set it to 0")
        order = np.argsort(-np.asarray(lengths), kind="stable")
        chunks = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
        for j in rng.permutation(len(chunks)):
            yield {key: np.asarray(column)[chunks[j]] for key, column in mega.items()}


def start_training(workload: Workload, cfg: Any, steps_per_epoch: int,
                   prepare: Callable[[nn.Module], nn.Module] = lambda m: m) -> Training:
    """``workload.build`` after ``torch.manual_seed(cfg.optim.seed)``: new heads are initialised the
    same on every worker and in every run."""
    torch.manual_seed(cfg.optim.seed)
    return workload.build(cfg, steps_per_epoch, prepare)


def run_epoch(training: Training, workload: Workload, batches: Iterable[Any], cfg: Any, *, epoch: int, rank: int = 0,
              log: bool = False, steps_per_epoch: int = 0) -> tuple[EpochStats, float]:
    """Train on every micro-batch of one epoch; returns this worker's statistics and the wall time
    (data iteration included)."""
    stats = EpochStats()
    batcher = workload.batcher(cfg, training, epoch, rank)
    start = time.perf_counter()
    iterator = iter(batches)

    def inputs() -> Iterator[tuple[Any, int]]:
        while True:
            wait = time.perf_counter()
            batch = next(iterator, None)
            stats.data_wait_s += time.perf_counter() - wait
            if batch is None:
                return
            yield batcher(batch)

    def loss(model: nn.Module, batch: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return workload.loss(training, model, batch)

    label = f"{cfg.output.name} epoch {epoch + 1}/{cfg.optim.epochs}"
    bar = progress(steps_per_epoch or None, label, "step") if log else None
    for group in grouped(inputs(), cfg.optim.grad_accum_steps):
        losses = accumulation_step(training, loss, [b for b, _ in group], cfg.optim.max_grad_norm)
        stats.add(losses, sum(n for _, n in group))
        if bar is not None:
            bar.set_description(f"{label} loss {stats.mean('loss'):.4f}")
            bar.update(1)
        every = cfg.optim.log_every_steps
        if log and every and stats.steps % every == 0:
            logger.info(f"epoch {epoch + 1}/{cfg.optim.epochs} step {stats.steps}/{steps_per_epoch} "
                        f"(global {training.global_step}) loss {stats.mean('loss'):.4f} "
                        f"{stats.examples / (time.perf_counter() - start):.1f} {workload.unit}/s")
    if bar is not None:
        bar.close()
    return stats, time.perf_counter() - start


def epoch_line(metrics: Mapping[str, float], workload: Workload) -> str:
    """One progress line per epoch: loss, throughput, and what the workload adds."""
    parts = [f"epoch {int(metrics[TRAIN_EPOCH])}", f"step {int(metrics[TRAIN_GLOBAL_STEP])}",
             f"loss {metrics[TRAIN_LOSS]:.4f}", f"{metrics[TRAIN_SAMPLES_PER_S]:.1f} {workload.unit}/s"]
    return " | ".join(parts + workload.summary(metrics))


def collect(iterator: Any, batch_size: int, columns: Sequence[str]) -> dict[str, list]:
    """``columns`` (those present) of all rows of an (unsplit) evaluation dataset iterator, as lists."""
    out: dict[str, list] = {}
    for batch in iterator.iter_batches(batch_size=batch_size, batch_format="numpy"):
        for key in columns:
            if key in batch:
                out.setdefault(key, []).extend(batch[key].tolist())
    return out


def worker_setup(cfg: Any) -> tuple[int, int, Callable[[nn.Module], nn.Module]]:
    """What every train function does first: Ray Data progress bars off and, in a Ray Train worker,
    torch threads = ``cfg.scaling.torch_threads``; returns (rank, world size, ``prepare``: ``ray.train.torch.prepare_model``
    with the DDP options ``cfg.model`` needs in a Ray Train worker, the module as it is in process).
    In process the threads are the whole driver's: ``session.exclusive`` sets them when a training
    starts, not here, where another in-process run may be training."""
    import ray.data

    rank, world = session.world()
    ray.data.DataContext.get_current().enable_progress_bars = False
    if session.in_process():  # on this process's GPU with scaling.use_gpu (engine.settings.check_device)
        return rank, world, (lambda m: m.to("cuda")) if cfg.scaling.use_gpu else (lambda m: m)
    import ray.train.torch

    torch.set_num_threads(cfg.scaling.torch_threads)
    # Pooling an intermediate layer leaves the layers above it without gradient.
    ddp = {"find_unused_parameters": getattr(getattr(cfg, "model", None), "layer", -1) != -1}
    return rank, world, lambda m: ray.train.torch.prepare_model(m, parallel_strategy_kwargs=ddp)


def train_loop_per_worker(config: dict[str, Any], workload: Workload) -> None:
    """Ray Train entry point (``functools.partial(train_loop_per_worker, workload=...)``), and an
    in-process run's: ``config`` is ``asdict`` of a resolved ``workload.config_class``."""
    cfg = from_dict(workload.config_class, config)
    rank, world, prepare = worker_setup(cfg)
    with session.exclusive(cfg.scaling.torch_threads):
        steps_per_epoch = cfg.steps_per_epoch(world)
        training = start_training(workload, cfg, steps_per_epoch, prepare)
        state = checkpoints.latest_state(workload.config_class)
        resumed_from = training.restore(state) if state is not None else 0
        if rank == 0:
            if cfg.optim.precision != training.precision:
                logger.info(f"optim.precision {cfg.optim.precision}: steps in {training.precision} on this machine")
            if state is None:
                logger.info(workload.describe(cfg, steps_per_epoch, world))
            elif training.epoch >= cfg.optim.epochs:
                logger.info(f"the run is complete: {training.epoch} of {cfg.optim.epochs} epochs done; "
                            "raise optim.epochs to train on")
            else:
                logger.info(f"resuming after epoch {training.epoch} at global step {resumed_from}")
        train_epochs(training, workload, cfg, session.dataset_shard("train"), rank=rank, world=world,
                     resumed_from=resumed_from)


def train_epochs(training: Training, workload: Workload, cfg: Any, data: Any, *,
                 rank: int, world: int, resumed_from: int, extra: Mapping[str, Any] | None = None,
                 prefix: str = "") -> str | None:
    """Step 4 of the module docstring, from ``training.epoch`` to ``cfg.optim.epochs``, on this
    worker's share of the training rows, ``data`` (anything with Ray Data's ``iter_batches``: a run's
    dataset shard, a served fit's rows as a dataset): the one feed of every fit, ``fit_batches``.
    ``extra`` metrics go into every report and ``prefix`` before every checkpoint's name. Returns
    the name of the last checkpoint written (rank 0; ``None`` elsewhere or if no epoch was left)."""
    steps_per_epoch = cfg.steps_per_epoch(world)
    # Every report names the node of each rank: where the workers trained, also after a restart on
    # other nodes (``xlt.placement``).
    extra = {**(extra or {}), placement.key("train"): placement.as_text(placement.worker_nodes())}
    name = None
    if training.epoch == 0:  # a fresh run (a checkpoint holds at least one epoch)
        workload.begin(cfg, training, data)
        keep_probe(training, cfg.optim)
    for epoch in range(training.epoch, cfg.optim.epochs):
        seed = epoch_seed(cfg.optim.seed, epoch, rank)
        torch.manual_seed(seed)  # dropout masks
        stats, seconds = run_epoch(training, workload, fit_batches(data, workload, training, cfg, seed), cfg, epoch=epoch, rank=rank, log=rank == 0,
                                   steps_per_epoch=steps_per_epoch)
        end_epoch(training, cfg.optim)
        metrics = {**epoch_metrics(all_reduce_sums(stats), seconds, training, resumed_from, world), **extra}
        if rank == 0:
            metrics.update(workload.evaluate(cfg, training, last=training.epoch == cfg.optim.epochs))
            # Through logging, not print: Ray Train V2 routes a worker's root logger to the driver's
            # console once, whereas its patched print also tees into Ray's own stream (lines twice).
            logger.info(epoch_line(metrics, workload))
            name = prefix + checkpoints.checkpoint_name(training.epoch, training.global_step)
            checkpoints.report(metrics, lambda directory: write_checkpoint(directory, training, cfg, workload), name)
        else:
            checkpoints.report(metrics)
    return name


def write_checkpoint(directory: Path, training: Training, cfg: Any, workload: Workload) -> Path:
    """The training state (``checkpoints.write_state``) and what the workload adds."""
    checkpoints.write_state(directory, training, cfg)
    workload.write(Path(directory), training, cfg)
    return Path(directory)


def eval_rows_of(batch_size: int) -> Callable[[str, Sequence[str]], dict[str, list] | None]:
    """How a running run's evaluators read their data (``xlt.eval.evaluators.evaluate_all``): an
    unsplit evaluation dataset's ``columns`` (``collect``), or ``None`` where the run was not given
    that dataset."""
    def read(name: str, columns: Sequence[str]) -> dict[str, list] | None:
        return collect(session.dataset_shard(name), batch_size, columns) if session.has_dataset(name) else None
    return read
