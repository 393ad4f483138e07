"""Many fits on one Ray Train run: a worker group kept for a whole job, each fit's rows sent by the driver.

Co-training fits each learner once per iteration, every time from the pretrained model on a new
labelled set. A Ray Train run per fit starts its controller, data actors and worker group again
each time, a fixed cost larger than a small learner's fit (``benchmarks/learner_fit.md``). A
``FitService`` starts one run for the whole job instead, and its workers serve fit requests::

    driver      FitService.fit(index, cfg, rows)
    actor       FitRequests (``xlt.mailbox``): the pending request (index, config, a reference to the rows)
    workers     serve_fits: train it as a run of its own is trained (``loop.train_epochs``: the
                same seeding, steps, evaluation, and a checkpoint per epoch named
                <cfg.output.name>-epoch...), then rank 0 posts the last checkpoint's name
    driver      FitOutcome: metrics and weights read from that checkpoint

A fit's rows are split as Ray Data splits a run's train set (equal shards of ``rows // workers``
rows, in data order) and fed as a run's shard is (``loop.epoch_batches``: Ray Data's local shuffle of
at least ``optim.shuffle_buffer`` rows, 0: data order, seeded per epoch with ``epoch_seed``), each
worker's share held in its process as one block (``rows.LocalRows``). Ray's buffer takes a block whole, so a
served fit draws from its whole shard: the permutation ``numpy.random.default_rng(seed).permutation(rows)``, as a
run's one-block dataset would (``tests/engine/test_fits.py``).

Resuming: every checkpoint carries its fit's config. A worker group that starts (the first time,
after a worker failure under ``FailureConfig``, or in a rerun job on the same run directory, where
the context hands it the run's latest checkpoint) continues the pending fit from that checkpoint if
the checkpoint is that fit's (same config), and starts the fit afresh otherwise. So a fit
interrupted anywhere ends as an uninterrupted one would.

The worker group holds its resources (``scaling``) for the whole run, also while the driver does
other work between fits (co-training's pseudo-labelling): what runs beside it needs the rest.

With ``scaling.num_workers: 0`` the run is in process (``context.InProcessContext``): each fit is served, on the
same mailbox, in the thread that asks for it, by a run of ``serve_fits`` that returns once that fit is done (two
learners in process fit one after the other). Not in a thread of its own: torch's OpenMP threads belong to the
thread that starts them, and where two threads of a process have started them (the driver's pseudo-labelling,
a fit), libgomp counts more threads than cores and stops spinning between parallel regions; each region then
wakes its threads from sleep, and a fit ran at 0.67× its speed (``benchmarks/cotrain_fit_vs_hf_trainer.md``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import from_dict
from ..mailbox import FitRequest, FitRequests
from ..metrics import TRAIN_FIT
from ..placement import this_node
from . import checkpoints
from .context import RunContext
from .rows import LocalRows
from .loop import Workload, start_training, train_epochs
from .training import TrainState
from .runs import launch, run_dir
from ..resume import changed_keys

if TYPE_CHECKING:
    import ray.data
    from ray.train import Checkpoint

logger = logging.getLogger(__name__)
POLL_S = 1.0  # how often the driver checks that the run is alive while a fit trains (one actor call)


def shard(rows: Sequence[Any], rank: int, world: int) -> Sequence[Any]:
    """Worker ``rank``'s equal share of ``rows`` (``len(rows) // world`` rows, in data order)."""
    n = len(rows) // world
    return rows[rank * n:(rank + 1) * n]


def serve_fits(context: RunContext, run_cfg: Any, workload: Workload, requests: Any, last: int | None = None) -> None:
    """The train function of a ``FitService`` run: serve ``requests`` until it closes, or until fit ``last`` is done
    (module docstring). ``run_cfg`` named the run and set its workers (``launch``); each fit brings its own config."""
    import ray

    rank, world = context.rank, context.world
    restored = context.latest_checkpoint()
    after = -1
    while (request := ray.get(requests.next.remote(after))) is not None:
        cfg = from_dict(workload.config_class, request.config)
        with context.exclusive(cfg.scaling.torch_threads):
            training = start_training(workload, cfg, cfg.steps_per_epoch(world), context.wrap)
            state = _state_of(restored, cfg, workload.config_class)
            resumed_from = training.restore(state) if state is not None else 0
            if rank == 0 and state is not None:
                logger.info(f"{cfg.output.name}: resuming after epoch {training.epoch} at global step {resumed_from}")
            # Held here, as one block: the shard is in memory already (xlt.engine.rows).
            rows = LocalRows.from_items(shard(ray.get(request.rows[0]), rank, world), blocks=1)
            name = train_epochs(context, training, workload, cfg, rows, resumed_from=resumed_from,
                                extra={TRAIN_FIT: request.index}, prefix=f"{cfg.output.name}-")
            if rank == 0:
                # A fit found complete in its checkpoint trains no epoch: that checkpoint is its last.
                ray.get(requests.finish.remote(request.index, name or Path(restored.path).name))
        after, restored = request.index, None
        del training, rows
        if last is not None and after >= last:
            return


def _state_of(checkpoint: Checkpoint | None, cfg: Any, config_class: type) -> TrainState | None:
    """The checkpoint's state if it was written by the fit of ``cfg``, else ``None``."""
    if checkpoint is None:
        return None
    with checkpoint.as_directory() as directory:
        state = checkpoints.read_state(directory, config_class)
    return state if not changed_keys(state.config, cfg) else None


@dataclass(frozen=True)
class FitOutcome:
    """A served fit: the metrics of its last report (with the fit's ``placement/train``) and its last
    checkpoint."""

    metrics: dict[str, Any]
    checkpoint: Checkpoint


class FitService:
    """One Ray Train run serving fits of ``workload`` (module docstring); ``cfg`` names the run and
    sets its scaling, each fit brings its own config. A context manager: leaving it ends the run."""

    def __init__(self, workload: Workload, cfg: Any, datasets: dict[str, ray.data.Dataset | LocalRows],
                 callbacks: Sequence[Any] = ()) -> None:
        import ray

        self.run_dir = run_dir(cfg)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        # The mailbox lives on the driver's node: a lost worker node must not take the pending fit with it.
        self.requests = ray.remote(num_cpus=0)(FitRequests).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(this_node(), soft=False)).remote()
        self._served = launch(workload, cfg, datasets, callbacks=callbacks,
                              train=functools.partial(serve_fits, workload=workload, requests=self.requests))
        self.in_process = cfg.scaling.num_workers == 0  # each fit served in the thread asking for it (module docstring)
        self._executor = None if self.in_process else ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"fits-{cfg.output.name}")
        # A run on workers blocks until it ends: in its own thread.
        self._run = None if self.in_process else self._executor.submit(self._served.fit)

    def fit(self, index: int, cfg: Any, rows: list[dict[str, Any]]) -> FitOutcome:
        """Fit ``index`` (numbers increase from fit to fit) of config ``cfg`` on ``rows``; blocks until done."""
        import ray
        from ray.train import Checkpoint

        ray.get(self.requests.post.remote(FitRequest(index, dataclasses.asdict(cfg), [ray.put(rows)])))
        if self.in_process:
            dataclasses.replace(self._served, train=functools.partial(self._served.train, last=index)).fit()
        while (name := ray.get(self.requests.finished.remote(index, POLL_S))) is None:
            if self._run is None:  # in process: the fit was served above, or raised there
                raise RuntimeError(f"the in-process run {self.run_dir} returned without finishing fit {index}")
            if self._run.done():
                self._run.result()  # raises the run's error
                raise RuntimeError(f"the Ray Train run {self.run_dir} ended before fit {index} was done")
        checkpoint = Checkpoint(f"{self.run_dir}/{name}")
        with checkpoint.as_directory() as directory:
            metrics = checkpoints.read_metrics(directory)
        return FitOutcome(metrics, checkpoint)

    def close(self, wait: bool = True) -> None:
        """End the run: its workers leave once their current fit is done. ``wait``: until the run
        has ended, raising its error if it failed (not when the driver is failing already)."""
        import ray

        try:
            ray.get(self.requests.close.remote())
            if wait and self._run is not None:
                self._run.result()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=False)

    def __enter__(self) -> FitService:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: Any) -> None:
        self.close(wait=kind is None)
