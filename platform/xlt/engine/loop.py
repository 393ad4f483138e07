"""The one training loop of every run; a job plugs a model, a batcher and a step into it (a ``Workload``).

``train_workload(context, cfg, workload)`` is the train function of every training job (fine-tuning,
alignment pretraining, sweep trials, study units; co-training's learners reach ``train_epochs`` through
``fits.serve_fits``). ``context`` is the run it is in (``xlt.engine.context``: a Ray Train worker's,
or an in-process run's). On every worker it:

1. seeds ``optim.seed`` and asks the workload for its module and optimiser (``start_training``: new heads
   are initialised the same on every worker and in every run), the module wrapped by the context (DDP);
2. resumes from the context's latest checkpoint if there is one (weights, optimizer, schedule, epoch and
   step counters; ``checkpoints.latest_state``);
3. trains the epochs left (``train_epochs``): on a fresh run the workload first prepares on its rows
   (``workload.begin``: e.g. a head fitted on frozen features); then per epoch it seeds dropout and the
   local shuffle with ``epoch_seed(seed, epoch, rank)``, reads its shard of ``"train"`` in micro-batches
   (``epoch_batches``), groups them into optimizer steps of ``grad_accum_steps`` (``run_epoch``:
   ``workload.batcher`` turns each into the step's input, ahead of the step in a thread of its own
   (``input_depth``, ``xlt.engine.ahead``), ``accumulation_step`` with ``workload.loss`` steps), sums
   the epoch's statistics over the workers, and lets rank 0 evaluate
   (``workload.evaluate``) and write the checkpoint (the state plus ``workload.write``) while the other
   ranks wait at the report barrier. Evaluation runs on the unwrapped module, so it needs no
   collective calls. Under ``optim.keep: best-dev`` (``keep_best``) rank 0 keeps the weights of the epoch of the
   best dev score (``workload.dev_metric``) and, after the last epoch or ``optim.patience`` epochs without a
   better one, puts them back before the final evaluation and checkpoint; whether the run ends is broadcast
   from rank 0 (``rank0_says``), so every rank stops alike.

``run_epoch`` is one epoch without a run (tests, ``benchmarks/train_overhead.py``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from ..progress import progress
from . import checkpoints
from .ahead import ahead
from .context import RunContext
from ..metrics import TRAIN_EPOCH, TRAIN_GLOBAL_STEP, TRAIN_KEPT_EPOCH, TRAIN_LOSS, TRAIN_SAMPLES_PER_S
from ..models import frozen_names, load_trained, trained_state
from .. import placement
from ..hardware import autocast
from .training import (BestEpoch, EpochStats, LossFn, Training, all_reduce_sums, device_of, end_epoch,
                       epoch_metrics, epoch_seed, trained_parameters)

logger = logging.getLogger(__name__)

Batcher = Callable[[Any], tuple[Any, int]]  # a micro-batch as iterated -> (the step's input, examples in it)
EvalRows = Callable[[str, Sequence[str]], "dict[str, list] | None"]  # (dataset, columns) -> its rows, or None


@dataclass(frozen=True)
class Evaluation:
    """What rank 0's evaluation after an epoch gives: metrics to report, and what ``Workload.write``
    keeps beside the checkpoint's state (fine-tuning: each evaluated row's prediction)."""

    metrics: dict[str, float] = field(default_factory=dict)
    outputs: Any = None


class Workload(ABC):
    """What a training job plugs into the engine. Subclasses are stateless (Ray ships the instance
    to every worker); whatever a worker builds lives in ``Training`` or in the batcher it returns.

    ``config_class`` must have ``optim`` (``OptimSettings``), ``scaling``, ``output`` sections and
    ``steps_per_epoch(num_workers)``.
    """

    config_class: ClassVar[type]
    job: ClassVar[str] = "train"  # what a run of it is, in its record (xlt.record): "finetune", "pretrain"
    batch_format: ClassVar[Literal["numpy", "pyarrow"]] = "numpy"
    unit: ClassVar[str] = "examples"  # what ``samples_per_s`` counts, in progress lines

    @abstractmethod
    def build(self, cfg: Any, steps_per_epoch: int, wrap: Callable[[nn.Module], nn.Module]) -> Training:
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
        (``data``: ``epoch_batches``' input), e.g. fit a head on frozen features; nothing by default. Whatever it sets
        must come out the same on every worker (they start from the same weights)."""

    def epoch_ended(self, cfg: Any, training: Training) -> None:
        """What every worker does to the weights once an epoch is counted (``training.epoch``), before it is
        evaluated and saved (e.g. WiSE-FT's mix after the last); nothing by default. Whatever it does must come out
        the same on every worker."""

    def prepares_input(self, cfg: Any) -> bool:
        """Whether ``batcher`` prepares the step's whole input, so that the loop may run it ahead of the step in a
        thread of its own (``xlt.engine.ahead``): it draws from no global generator, and the step uses nothing the
        batcher uses (a tokenizer); no by default."""
        return False

    def unused_parameters(self, cfg: Any) -> bool:
        """Whether some weights of the step module get no gradient (DDP must then look for them each step)."""
        return False

    def evaluate(self, cfg: Any, training: Training, last: bool, rows: EvalRows) -> Evaluation:
        """Rank 0's evaluation after an epoch (``last``: after the final one), reading the run's evaluation
        datasets through ``rows``; none by default."""
        return Evaluation()

    def write(self, directory: Path, training: Training, cfg: Any, evaluation: Evaluation) -> None:
        """What a checkpoint holds beside the training state (e.g. an exported encoder, ``evaluation``'s
        outputs); nothing by default."""

    def classifiers(self, cfg: Any, checkpoint: str, directory: str) -> dict[str, dict[str, Any]]:
        """The classifiers a finished run in ``directory`` produced, its ``checkpoint`` the last (a path, local or
        URI), as its record names them (``xlt.inference.entries``), the default first; none by default."""
        return {}

    def outputs(self, cfg: Any, checkpoint: str) -> dict[str, str]:
        """What else of ``checkpoint`` (a path, local or URI) a run's record names, by name (e.g. the rows'
        predictions its evaluation wrote); nothing by default."""
        return {}

    def dev_metric(self, cfg: Any) -> str | None:
        """The metric of rank 0's evaluation after every epoch that ``optim.keep: best-dev`` keeps the best epoch by
        (higher is better), or ``None`` if the workload reports none (its config refuses best-dev)."""
        return None

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


def train_workload(context: RunContext, cfg: Any, workload: Workload) -> None:
    """The train function of a run of ``workload`` on ``cfg`` (a resolved ``workload.config_class``)."""
    with context.exclusive(cfg.scaling.torch_threads):
        steps_per_epoch = cfg.steps_per_epoch(context.world)
        training = start_training(workload, cfg, steps_per_epoch, context.wrap)
        state = checkpoints.latest_state(context, workload.config_class)
        resumed_from = training.restore(state) if state is not None else 0
        if context.rank == 0:
            if cfg.optim.precision != training.precision:
                logger.info(f"optim.precision {cfg.optim.precision}: steps in {training.precision} on this machine")
            if state is None:
                logger.info(workload.describe(cfg, steps_per_epoch, context.world))
            elif training.stopped:
                logger.info(f"the run is complete: stopped after epoch {training.epoch} of {cfg.optim.epochs}, "
                            f"{cfg.optim.patience} epochs without a better dev score than epoch {training.best.epoch}")
            elif training.epoch >= cfg.optim.epochs:
                logger.info(f"the run is complete: {training.epoch} of {cfg.optim.epochs} epochs done; "
                            "raise optim.epochs to train on")
            else:
                logger.info(f"resuming after epoch {training.epoch} at global step {resumed_from}")
        train_epochs(context, training, workload, cfg, context.dataset("train"), resumed_from=resumed_from)


def start_training(workload: Workload, cfg: Any, steps_per_epoch: int,
                   wrap: Callable[[nn.Module], nn.Module] = lambda m: m) -> Training:
    """``workload.build`` after ``torch.manual_seed(cfg.optim.seed)``: new heads are initialised the
    same on every worker and in every run."""
    torch.manual_seed(cfg.optim.seed)
    return workload.build(cfg, steps_per_epoch, wrap)


def train_epochs(context: RunContext, training: Training, workload: Workload, cfg: Any, data: Any, *,
                 resumed_from: int, extra: Mapping[str, Any] | None = None, prefix: str = "") -> str | None:
    """Train from ``training.epoch`` to ``cfg.optim.epochs`` on this worker's share of the training rows,
    ``data`` (anything with Ray Data's ``iter_batches``: a run's dataset shard, a served fit's rows), and
    report each epoch (module docstring, 3). ``extra`` metrics go into every report and ``prefix`` before
    every checkpoint's name. Returns the name of the last checkpoint written (rank 0; ``None`` elsewhere
    or if no epoch was left)."""
    rank, world = context.rank, context.world
    steps_per_epoch = cfg.steps_per_epoch(world)
    # Every report names the node of each rank: where the workers trained, also after a restart on
    # other nodes (``xlt.placement``).
    extra = {**(extra or {}), placement.key("train"): placement.as_text(placement.worker_nodes())}
    rows = functools.partial(eval_rows, context, cfg.optim.eval_batch_size)
    name = None
    if training.epoch == 0:  # a fresh run (a checkpoint holds at least one epoch)
        workload.begin(cfg, training, data)
    keeping = cfg.optim.keep == "best-dev"
    end = training.epoch if training.stopped else cfg.optim.epochs  # patience ended it: nothing is left
    for epoch in range(training.epoch, end):
        seed = epoch_seed(cfg.optim.seed, epoch, rank)
        torch.manual_seed(seed)  # dropout masks
        stats, seconds = run_epoch(training, workload, epoch_batches(data, workload, training, cfg, seed), cfg,
                                   epoch=epoch, rank=rank, log=rank == 0, steps_per_epoch=steps_per_epoch)
        end_epoch(training)
        workload.epoch_ended(cfg, training)
        metrics = {**epoch_metrics(all_reduce_sums(stats), seconds, training, resumed_from, world), **extra}
        if rank != 0:
            checkpoints.report(context, metrics)
            if keeping and rank0_says(context, False):
                break
            continue
        last = training.epoch == cfg.optim.epochs
        evaluation = workload.evaluate(cfg, training, last and not keeping, rows)
        if keeping:
            last = keep_best(training, workload, cfg, evaluation.metrics)
            if last:  # the final evaluation (test too) of the weights the run ends with
                evaluation = workload.evaluate(cfg, training, True, rows)
        metrics.update(evaluation.metrics)
        if keeping:
            metrics[TRAIN_KEPT_EPOCH] = float(training.best.epoch)
        # Through logging, not print: Ray Train V2 routes a worker's root logger to the driver's
        # console once, whereas its patched print also tees into Ray's own stream (lines twice).
        logger.info(epoch_line(metrics, workload))
        name = prefix + checkpoints.checkpoint_name(training.epoch, training.global_step)
        checkpoints.report(context, metrics,
                           functools.partial(write_checkpoint, training=training, cfg=cfg, workload=workload,
                                             evaluation=evaluation), name)
        if keeping and rank0_says(context, last):
            break
    return name


def keep_best(training: Training, workload: Workload, cfg: Any, metrics: Mapping[str, float]) -> bool:
    """``optim.keep: best-dev`` after an epoch scored ``metrics``: keep its weights if its dev score beats the best
    so far (ties: the earlier epoch, as HF Trainer's ``load_best_model_at_end``); whether the run ends here (its
    last epoch, or ``optim.patience`` epochs in a row without a better score), and if so the best epoch's weights
    put back in ``training.module``, ``training.stopped`` set where patience ended it."""
    key = workload.dev_metric(cfg)
    if key is None or key not in metrics:
        raise ValueError(f"optim.keep: best-dev needs the dev score {key or 'of a workload that reports one'} after "
                         f"every epoch; the evaluation reported {', '.join(sorted(metrics)) or 'nothing'}")
    score = float(metrics[key])
    if training.best is None or score > training.best.score:
        model, _ = trained_state(training.module)
        training.best = BestEpoch(training.epoch, score, {k: v.detach().to("cpu", copy=True) for k, v in model.items()})
    patience = cfg.optim.patience
    out_of_patience = bool(patience) and training.epoch - training.best.epoch >= patience
    training.stopped = out_of_patience and training.epoch < cfg.optim.epochs
    if training.epoch < cfg.optim.epochs and not out_of_patience:
        return False
    if training.best.epoch != training.epoch:
        device = device_of(training.module)
        load_trained(training.module, {k: v.to(device) for k, v in training.best.model.items()},
                     frozen_names(training.module))
    # The final report scores the kept weights; this line keeps the last epoch's own dev score.
    logger.info(f"epoch {training.epoch} {key} {score:.4f}; keeping epoch {training.best.epoch} ({key} "
                f"{training.best.score:.4f}, the best)" + (f": {patience} epochs without a better one, stopped"
                                                          if training.stopped else ""))
    return True


def rank0_says(context: RunContext, flag: bool) -> bool:
    """Rank 0's ``flag``, on every rank (a collective: every rank calls it alike)."""
    if context.world == 1:
        return flag
    import torch.distributed as dist

    said = [flag]
    dist.broadcast_object_list(said, src=0)
    return bool(said[0])


def epoch_batches(data: Any, workload: Workload, training: Training, cfg: Any, seed: int) -> Iterator[Any]:
    """One epoch's micro-batches of this worker's rows ``data``, whether the fit is a run or served.
    Ray Data's local shuffle draws the rows at random from a buffer of at least ``optim.shuffle_buffer``
    rows (0: in data order), seeded with the epoch's ``seed``. With ``optim.group_by_length`` = M it reads
    mega-batches of M micro-batches, sorts each by ``workload.lengths`` and yields its micro-batches in an
    order drawn from ``seed``: as many micro-batches as without grouping (only the last mega-batch is
    short), each padded to rows of similar length."""
    optim = cfg.optim
    group = optim.group_by_length
    batches = data.iter_batches(batch_size=optim.batch_size * (group or 1), batch_format=workload.batch_format,
                                local_shuffle_buffer_size=optim.shuffle_buffer or None, local_shuffle_seed=seed)
    if not group:
        yield from batches
        return
    rng = np.random.default_rng(seed)
    for mega in batches:
        lengths = workload.lengths(training, mega)
        if lengths is None:
            raise ValueError(f"optim.group_by_length: {type(workload).__name__} has no row lengths to group by; "
                             "set it to 0")
        order = np.argsort(-np.asarray(lengths), kind="stable")
        chunks = [order[i:i + optim.batch_size] for i in range(0, len(order), optim.batch_size)]
        for j in rng.permutation(len(chunks)):
            yield {key: np.asarray(column)[chunks[j]] for key, column in mega.items()}


def run_epoch(training: Training, workload: Workload, batches: Iterable[Any], cfg: Any, *, epoch: int, rank: int = 0,
              log: bool = False, steps_per_epoch: int = 0) -> tuple[EpochStats, float]:
    """Train on every micro-batch of one epoch, ``grad_accum_steps`` to an optimizer step; returns this
    worker's statistics and the wall time (data iteration included)."""
    stats = EpochStats()
    loss = functools.partial(workload.loss, training)
    inputs = step_inputs(batches, workload.batcher(cfg, training, epoch, rank), stats,
                         input_depth(workload, cfg))
    label = f"{cfg.output.name} epoch {epoch + 1}/{cfg.optim.epochs}"
    bar = progress(steps_per_epoch or None, label, "step") if log else None
    every = cfg.optim.log_every_steps
    start = time.perf_counter()
    for group in grouped(inputs, cfg.optim.grad_accum_steps):
        losses = accumulation_step(training, loss, [batch for batch, _ in group], cfg.optim.max_grad_norm)
        stats.add(losses, sum(n for _, n in group))
        if bar is not None:
            bar.set_description(f"{label} loss {stats.mean('loss'):.4f}")
            bar.update(1)
        if log and every and stats.steps % every == 0:
            logger.info(f"epoch {epoch + 1}/{cfg.optim.epochs} step {stats.steps}/{steps_per_epoch} "
                        f"(global {training.global_step}) loss {stats.mean('loss'):.4f} "
                        f"{stats.examples / (time.perf_counter() - start):.1f} {workload.unit}/s")
    if bar is not None:
        bar.close()
    return stats, time.perf_counter() - start


def accumulation_step(training: Training, loss: LossFn, micro_batches: Sequence[Any],
                      max_grad_norm: float = 1.0) -> dict[str, float]:
    """One optimizer step over ``micro_batches``: ``loss(training.model, micro_batch)`` each; returns
    the mean over micro-batches of ``{"loss": total, <part>: ...}`` as floats.

    Each micro-batch's loss is divided by the number of micro-batches of the step, so the gradient is
    their mean; under DDP the gradients are all-reduced once, on the last micro-batch (the others
    run inside ``no_sync``). Under ``optim.precision`` bf16 each micro-batch's forward pass and loss
    run in their own ``torch.autocast`` context, backward after it: autocast keeps its bf16 copies of
    the weights until the outermost context exits, so a context held across steps would compute
    every step with the first step's weights (``benchmarks/train_precision.md``). Under fp16 the
    step's losses are scaled before backward by a ``torch.amp.GradScaler`` (float16 gradients
    underflow otherwise), unscaled before clipping; a step whose gradients overflowed is skipped and
    the scale lowered. The scaler's state (scale, growth tracker) is part of ``TrainState``, so a
    resumed run scales as the uninterrupted one would. The schedule advances on a skipped step too:
    one LR step per optimizer step counted, which keeps a checkpoint's schedule and step counter in
    agreement (as PyTorch's AMP examples do).
    """
    if not micro_batches:
        raise ValueError("an optimizer step needs at least one micro-batch")
    training.model.train()
    training.optimizer.zero_grad(set_to_none=True)
    k = len(micro_batches)
    device = device_of(training.module).type
    scaler = training.scaler
    sums: dict[str, torch.Tensor] = {}
    for i, batch in enumerate(micro_batches):
        # DDP all-reduces gradients in backward; only the last micro-batch of the step needs it.
        skip_sync = i < k - 1 and hasattr(training.model, "no_sync")
        with training.model.no_sync() if skip_sync else contextlib.nullcontext():
            with autocast(training.precision, device):
                total, parts = loss(training.model, batch)
            share = total / k
            (share if scaler is None else scaler.scale(share)).backward()
        # Summed as tensors, read once the step is queued: a GPU is not made to wait for the loss before backward.
        for key, value in {"loss": total, **parts}.items():
            value = value.detach().double()
            sums[key] = sums[key] + value if key in sums else value
    if scaler is not None:
        scaler.unscale_(training.optimizer)  # clip the true gradients
    if max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(trained_parameters(training.module, training.loss_modules), max_grad_norm)
    if scaler is None:
        training.optimizer.step()
    else:
        scaler.step(training.optimizer)  # skipped if a gradient is inf or nan
        scaler.update()
    training.scheduler.step()
    training.global_step += 1
    return {key: float(value) / k for key, value in sums.items()}


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


def input_depth(workload: Workload, cfg: Any) -> int:
    """How many micro-batches ``workload``'s batcher runs ahead of the step (``optim.input_ahead``): none where it
    does not prepare the step's whole input (``Workload.prepares_input``)."""
    return cfg.optim.input_ahead if workload.prepares_input(cfg) else 0


def step_inputs(batches: Iterable[Any], batcher: Batcher, stats: EpochStats,
                depth: int = 0) -> Iterator[tuple[Any, int]]:
    """``batcher`` of each micro-batch; with ``depth`` > 0 prepared that many ahead of the step in a thread of its
    own (``xlt.engine.ahead``). The time the step waits for its input (reading, and the batcher where it runs in
    the step's thread) is added to ``stats.data_wait_s``."""
    prepared = ahead((batcher(batch) for batch in batches), depth)
    while True:
        wait = time.perf_counter()
        item = next(prepared, None)
        stats.data_wait_s += time.perf_counter() - wait
        if item is None:
            return
        yield item


def epoch_line(metrics: Mapping[str, float], workload: Workload) -> str:
    """One progress line per epoch: loss, throughput, and what the workload adds."""
    parts = [f"epoch {int(metrics[TRAIN_EPOCH])}", f"step {int(metrics[TRAIN_GLOBAL_STEP])}",
             f"loss {metrics[TRAIN_LOSS]:.4f}", f"{metrics[TRAIN_SAMPLES_PER_S]:.1f} {workload.unit}/s"]
    return " | ".join(parts + workload.summary(metrics))


def write_checkpoint(directory: Path, *, training: Training, cfg: Any, workload: Workload,
                     evaluation: Evaluation) -> Path:
    """The training state (``checkpoints.write_state``) and what the workload adds."""
    checkpoints.write_state(directory, training, cfg)
    workload.write(Path(directory), training, cfg, evaluation)
    return Path(directory)


def eval_rows(context: RunContext, batch_size: int, name: str, columns: Sequence[str]) -> dict[str, list] | None:
    """``columns`` (those present) of every row of the run's unsplit evaluation dataset ``name``, as
    lists; ``None`` where the run was not given that dataset."""
    dataset = context.dataset(name)
    if dataset is None:
        return None
    out: dict[str, list] = {}
    for batch in dataset.iter_batches(batch_size=batch_size, batch_format="numpy"):
        for key in columns:
            if key in batch:
                out.setdefault(key, []).extend(batch[key].tolist())
    return out
