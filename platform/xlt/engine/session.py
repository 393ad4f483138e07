"""The run a train function is in: the one module the engine's train functions ask about it.

``train_loop_per_worker`` and ``fits.serve_fits`` reach their run through ``world``,
``dataset_shard``, ``latest_checkpoint`` and ``report`` only. Inside a Ray Train worker these are
Ray Train's (``ray.train.get_context()``, ``get_dataset_shard``, ``get_checkpoint``, ``report``).
Inside an ``InProcessTrainer.fit`` (``scaling.num_workers: 0``) they are the calling thread's
``InProcessRun``: one rank, the datasets whole, and checkpoints persisted the way Ray Train's
controller persists them, so that everything that reads a run directory reads both alike:

- a reported checkpoint is copied to ``<run dir>/<checkpoint_dir_name>`` (local or URI);
- the names of the ``num_to_keep`` latest are kept in ``<run dir>/xlt_checkpoints.json`` and older
  ones removed (the latest is always kept);
- a run of the same config finds the latest there and resumes from it.

Why not Ray Train's own local mode (``ScalingConfig(num_workers=0)``, Ray 2.60): it persists no
checkpoint (``report`` keeps the last one in memory), runs no ``UserCallback``, and holds one run per
process in a module global, where co-training fits its two learners at once, each in a thread.
What an in-process run lacks: DDP (one rank), worker restarts (``scaling.max_failures``: an error
ends the fit), and its own resources (it trains on the driver's CPUs, beside whatever Ray runs there).
In-process runs of one process train one at a time (``exclusive``): torch's random generator and
its thread count are the process's, and two runs drawing dropout masks from one generator at once
would not draw what each draws alone.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import torch

from ..storage import put, read_text, remove, staged

if TYPE_CHECKING:
    import ray.data
    from ray.train import Checkpoint

CHECKPOINTS_FILE = "xlt_checkpoints.json"  # an in-process run's checkpoint names, oldest first
_current = threading.local()
_training = threading.Lock()  # held by the in-process run that trains now


@dataclass
class InProcessRun:
    """A run trained in this thread: its directory, datasets and checkpoints."""

    directory: str  # the run's output.dir, local (absolute) or a URI
    num_to_keep: int
    datasets: Mapping[str, ray.data.Dataset]
    callbacks: Sequence[Any] = ()
    metrics: dict[str, Any] | None = field(default=None, init=False)  # of the last report
    checkpoints: list[str] = field(init=False)  # as saved in CHECKPOINTS_FILE, oldest first

    def __post_init__(self) -> None:
        saved = read_text(f"{self.directory}/{CHECKPOINTS_FILE}")
        self.checkpoints = json.loads(saved) if saved else []

    def latest(self) -> Checkpoint | None:
        from ray.train import Checkpoint

        return Checkpoint(f"{self.directory}/{self.checkpoints[-1]}") if self.checkpoints else None

    def report(self, metrics: dict[str, Any], checkpoint: Checkpoint | None, name: str | None) -> None:
        if checkpoint is not None:
            if name is None:
                raise ValueError("an in-process run names each checkpoint (checkpoints.checkpoint_name)")
            # In this order, so that a run killed anywhere here lists only checkpoints that exist:
            # the new one copied, the list naming it saved (whole or not at all), the old ones removed.
            put(checkpoint.path, f"{self.directory}/{name}")
            names = [c for c in self.checkpoints if c != name] + [name]
            self.checkpoints = names[-self.num_to_keep:]
            with staged(self.directory) as directory:
                partial = directory / f".{CHECKPOINTS_FILE}.partial"
                partial.write_text(json.dumps(self.checkpoints))
                partial.replace(directory / CHECKPOINTS_FILE)
            for old in names[:-self.num_to_keep]:
                remove(f"{self.directory}/{old}")
            checkpoint = self.latest()
        self.metrics = metrics
        for callback in self.callbacks:  # as Ray Train's controller calls a UserCallback: rank 0's metrics first
            callback.after_report(None, [metrics], checkpoint)


@dataclass(frozen=True)
class InProcessResult:
    """What ``InProcessTrainer.fit`` returns: as much of Ray Train's ``Result`` as xlt reads."""

    metrics: dict[str, Any] | None
    checkpoint: Checkpoint | None
    path: str


class InProcessTrainer:
    """A ``TorchTrainer`` stand-in that runs ``train_fn(train_loop_config)`` in the calling thread
    (``runs.torch_trainer`` for ``scaling.num_workers: 0``)."""

    def __init__(self, train_fn: Callable[[dict[str, Any]], None], train_loop_config: dict[str, Any], directory: str,
                 num_to_keep: int, datasets: Mapping[str, ray.data.Dataset], callbacks: Sequence[Any] = ()) -> None:
        self.train_fn, self.train_loop_config = train_fn, train_loop_config
        self.directory, self.num_to_keep, self.datasets, self.callbacks = directory, num_to_keep, datasets, callbacks

    def fit(self) -> InProcessResult:
        if in_process():
            raise RuntimeError("an in-process run is already training in this thread")
        run = _current.run = InProcessRun(self.directory, self.num_to_keep, self.datasets, self.callbacks)
        try:
            self.train_fn(self.train_loop_config)
        finally:
            _current.run = None
        return InProcessResult(run.metrics, run.latest(), self.directory)


def in_process() -> bool:
    """Whether the calling thread trains an in-process run (else it is a Ray Train worker's)."""
    return getattr(_current, "run", None) is not None


@contextlib.contextmanager
def exclusive(threads: int) -> Iterator[None]:
    """Train inside this: in process, alone among this process's runs and on ``threads`` torch
    threads; in a Ray Train worker (a process of its own), as it is."""
    if not in_process():
        yield
        return
    with _training:
        torch.set_num_threads(threads)
        yield


def world() -> tuple[int, int]:
    """(this worker's rank, the number of workers)."""
    if in_process():
        return 0, 1
    import ray.train

    context = ray.train.get_context()
    return context.get_world_rank(), context.get_world_size()


def dataset_shard(name: str) -> Any:
    """This worker's part of dataset ``name`` (all of it when unsplit, or in process)."""
    if in_process():
        return _current.run.datasets[name]
    import ray.train

    return ray.train.get_dataset_shard(name)


def has_dataset(name: str) -> bool:
    """Whether the running run was given a dataset ``name``."""
    if in_process():
        return name in _current.run.datasets
    import ray.train

    try:
        ray.train.get_dataset_shard(name)
    except KeyError:
        return False
    return True


def latest_checkpoint() -> Checkpoint | None:
    """The checkpoint to resume from: the run's latest, or ``None`` for a fresh run."""
    if in_process():
        return _current.run.latest()
    import ray.train

    return ray.train.get_checkpoint()


def report(metrics: dict[str, Any], checkpoint: Checkpoint | None = None, checkpoint_dir_name: str | None = None) -> None:
    """Report an epoch's metrics, with rank 0's checkpoint (a directory Ray Train, or the in-process
    run, copies to ``<run dir>/<checkpoint_dir_name>``)."""
    if in_process():
        _current.run.report(metrics, checkpoint, checkpoint_dir_name)
        return
    import ray.train

    ray.train.report(metrics, checkpoint=checkpoint, checkpoint_dir_name=checkpoint_dir_name)

