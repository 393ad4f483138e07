"""The run a train function is in, handed to it as an argument: ``RunContext``.

Every train function of the engine (``loop.train_workload``, ``fits.serve_fits``) has the signature
``train(context, config)`` and asks its run for nothing but what ``RunContext`` offers: its rank and
the number of workers, the module wrapped for them (``wrap``), a dataset, the checkpoint to resume from, and a
report. There are two contexts:

- ``RayTrainContext``: inside a Ray Train worker; each method is Ray Train's (``ray.train.get_context()``,
  ``prepare_model``, ``get_dataset_shard``, ``get_checkpoint``, ``report``).
- ``InProcessContext``: a run in the calling thread (``scaling.num_workers: 0``): one rank, the datasets
  whole and held in this process (``xlt.engine.rows``: Ray need not run), and checkpoints persisted the way Ray Train's controller persists them, so that everything
  that reads a run directory reads both alike:

  - a reported checkpoint is copied to ``<run dir>/<checkpoint_dir_name>`` (local or URI);
  - the names of the ``num_to_keep`` latest are kept in ``<run dir>/xlt_checkpoints.json`` and older
    ones removed (the latest is always kept);
  - a run of the same config finds the latest there and resumes from it.

Why not Ray Train's own local mode (``ScalingConfig(num_workers=0)``): it persists no checkpoint
(``report`` keeps the last one in memory), runs no ``UserCallback``, and holds one run per process in a
module global, where co-training fits its two learners at once, each in a thread. What an in-process
run lacks: DDP (one rank), worker restarts (``scaling.max_failures``: an error ends the fit), and its own
resources (it trains on the driver's CPUs, beside whatever Ray runs there).

In-process runs of one process train one at a time (``InProcessContext.exclusive``): torch's random
generator and its thread count belong to the process, and two runs drawing dropout masks from one
generator at once would not draw what each draws alone. That lock is the one piece of module state
here, and it guards torch's, not a run's (``tests/engine/test_context.py`` keeps it the only one).
"""

from __future__ import annotations

import contextlib
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ..storage import put, read_text, remove, staged

if TYPE_CHECKING:
    from ray.train import Checkpoint

    from .rows import LocalRows

CHECKPOINTS_FILE = "xlt_checkpoints.json"  # an in-process run's checkpoint names, oldest first
TORCH_STATE = threading.Lock()  # torch's generator and threads: held by the in-process run that trains now


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Torch's intra-op threads at ``threads`` inside, as they were after: work in a process whose threads Ray
    set for the task it runs (a Tune trial of no CPU gets 1), under ``TORCH_STATE`` as an in-process run's."""
    with TORCH_STATE:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)


class RunContext(ABC):
    """What a train function may ask of its run (module docstring)."""

    rank: int = 0
    world: int = 1

    @abstractmethod
    def wrap(self, module: nn.Module) -> nn.Module:
        """``module`` ready for this worker's steps (DDP-wrapped, on its device)."""

    @abstractmethod
    def dataset(self, name: str) -> Any | None:
        """This worker's part of dataset ``name`` (all of it when unsplit); ``None`` if the run has none."""

    @abstractmethod
    def latest_checkpoint(self) -> Checkpoint | None:
        """The checkpoint to resume from: the run's latest, or ``None`` for a fresh run."""

    @abstractmethod
    def report(self, metrics: dict[str, Any], checkpoint: Checkpoint | None = None, name: str | None = None) -> None:
        """Report an epoch's metrics, with rank 0's checkpoint, kept as ``<run dir>/<name>``."""

    @contextlib.contextmanager
    def exclusive(self, threads: int) -> Iterator[None]:
        """Train inside this (a Ray Train worker is a process of its own: nothing to take)."""
        yield


class RayTrainContext(RunContext):
    """The context of a Ray Train worker: torch threads set, DDP options from the config's model."""

    def __init__(self, torch_threads: int, find_unused_parameters: bool) -> None:
        import ray.train

        context = ray.train.get_context()
        self.rank, self.world = context.get_world_rank(), context.get_world_size()
        self.find_unused_parameters = find_unused_parameters
        torch.set_num_threads(torch_threads)

    def wrap(self, module: nn.Module) -> nn.Module:
        import ray.train.torch

        return ray.train.torch.prepare_model(
            module, parallel_strategy_kwargs={"find_unused_parameters": self.find_unused_parameters})

    def dataset(self, name: str) -> Any | None:
        import ray.train

        try:
            return ray.train.get_dataset_shard(name)
        except KeyError:
            return None

    def latest_checkpoint(self) -> Checkpoint | None:
        import ray.train

        return ray.train.get_checkpoint()

    def report(self, metrics: dict[str, Any], checkpoint: Checkpoint | None = None, name: str | None = None) -> None:
        import ray.train

        ray.train.report(metrics, checkpoint=checkpoint, checkpoint_dir_name=name)


@dataclass
class InProcessContext(RunContext):
    """A run trained in the calling thread: its directory, datasets and checkpoints."""

    directory: str  # the run's output.dir, local (absolute) or a URI
    num_to_keep: int
    datasets: Mapping[str, LocalRows]
    callbacks: Sequence[Any] = ()
    use_gpu: bool = False  # the module on this process's GPU (engine.settings.check_device)
    metrics: dict[str, Any] | None = field(default=None, init=False)  # of the last report
    checkpoints: list[str] = field(init=False)  # as saved in CHECKPOINTS_FILE, oldest first

    def __post_init__(self) -> None:
        saved = read_text(f"{self.directory}/{CHECKPOINTS_FILE}")
        self.checkpoints = json.loads(saved) if saved else []

    def wrap(self, module: nn.Module) -> nn.Module:
        return module.to("cuda") if self.use_gpu else module

    def dataset(self, name: str) -> Any | None:
        return self.datasets.get(name)

    def latest_checkpoint(self) -> Checkpoint | None:
        from ray.train import Checkpoint

        return Checkpoint(f"{self.directory}/{self.checkpoints[-1]}") if self.checkpoints else None

    @contextlib.contextmanager
    def exclusive(self, threads: int) -> Iterator[None]:
        with torch_threads(threads):
            yield

    def report(self, metrics: dict[str, Any], checkpoint: Checkpoint | None = None, name: str | None = None) -> None:
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
            checkpoint = self.latest_checkpoint()
        self.metrics = metrics
        for callback in self.callbacks:  # as Ray Train's controller calls a UserCallback: rank 0's metrics first
            callback.after_report(None, [metrics], checkpoint)
