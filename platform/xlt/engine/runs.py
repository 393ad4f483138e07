"""Run directories and ``launch``: the one way every job runs a train function on the engine.

A run lives in ``output.dir``; Ray Train identifies it by ``RunConfig(storage_path, name)``, the
directory's parent and last part (Ray Train V2, Ray 2.60: ``TorchTrainer.restore`` and
``resume_from_checkpoint`` are gone). Its controller reads
``<output.dir>/checkpoint_manager_snapshot.json`` and hands the latest checkpoint to
every worker as the context's latest checkpoint. So running the same config again resumes it;
``resume_config(run_dir)`` rebuilds that config from the run's saved ``config.yaml``, optionally
with more epochs. Within one ``fit``, ``FailureConfig(max_failures)`` restarts failed workers
from the latest checkpoint the same way. Because the directory alone decides, ``launch``
refuses to continue a run directory whose saved config trains something else.

Run directories are local paths or URIs (``s3://...``, through ``pyarrow.fs``).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..logs import train_logging_level
from ..record import RUNNING
from ..storage import OutputSettings, fetched, is_uri, staged
from ..config import ConfigError, apply_overrides, from_dict, read_yaml, save_config
from .loop import Workload, train_workload
from .checkpoints import CONFIG_FILE, final_metrics
from .record import recorder_class
from .context import InProcessContext, RayTrainContext, RunContext
from .rows import LocalRows, held_here
from ..resume import incompatible_changes

if TYPE_CHECKING:
    import ray.data
    from ray.train import Checkpoint

TrainFn = Callable[[RunContext, Any], None]  # (the run's context, its resolved config)

RESULTS_FILE = "results.json"
C = TypeVar("C")


def run_dir(cfg: Any) -> str:
    """``output.dir``: where Ray Train keeps the run's checkpoints and we its config."""
    return cfg.output.dir.rstrip("/")


def absolute_storage(output: OutputSettings) -> OutputSettings:
    """``output`` with a local ``dir`` made absolute (Ray Train needs an absolute storage path); URIs as they are."""
    return dataclasses.replace(output, dir=output.dir if is_uri(output.dir) else os.path.abspath(output.dir))


def read_run_config(directory: str, config_cls: type[C]) -> C | None:
    """The ``config.yaml`` of a run directory (local or URI) as ``config_cls``, or ``None`` if there is none."""
    with fetched(f"{directory.rstrip('/')}/{CONFIG_FILE}") as path:
        return None if path is None else from_dict(config_cls, read_yaml(path))


def write_run_config(cfg: Any) -> None:
    """Save ``cfg`` as ``config.yaml`` in its run directory (local or URI)."""
    with staged(run_dir(cfg)) as directory:
        save_config(cfg, directory / CONFIG_FILE)


def resume_config(directory: str, overrides: Iterable[str], config_cls: type[C]) -> C:
    """The saved config (a ``config_cls``) of run ``directory`` with ``--set``-style ``overrides``
    (e.g. ``optim.epochs=5``), pointed at that directory wherever it now lives."""
    saved = read_run_config(directory, config_cls)
    if saved is None:
        raise FileNotFoundError(f"{directory} has no {CONFIG_FILE}: not a run directory of an xlt training job "
                                "(expected the output.dir of a run, with config.yaml and checkpoints)")
    data = apply_overrides(dataclasses.asdict(saved), overrides)
    data["output"] = {**data["output"], "dir": directory.rstrip("/")}
    return from_dict(config_cls, data)


def check_resumable(cfg: Any, directory: str | None = None,
                    instead: str = "choose another output.dir, or resume it unchanged (the job's --resume RUN_DIR)",
                    ) -> None:
    """The one resume guard of every job: refuse (``ConfigError``) a run directory (``directory``,
    else ``run_dir(cfg)``; local or URI) that holds a run whose ``config.yaml`` differs from ``cfg``
    in a key its config class declares fixed (``xlt.resume``), which would resume what is there under
    the new config.
    ``instead`` tells the user what to do. ``launch`` checks; a workload whose datasets take
    time to build checks first as well, and co-training before its first iteration."""
    directory = run_dir(cfg) if directory is None else directory
    previous = read_run_config(directory, type(cfg))
    changed = incompatible_changes(previous, cfg) if previous is not None else []
    if changed:
        raise ConfigError(f"{directory} holds a run whose config differs in {', '.join(changed)}, which it would "
                          f"resume under the new config; {instead}")


def run_state(cfg: Any, directory: str | None = None) -> str:
    """What a training job would do with its run directory (``directory``, else ``run_dir(cfg)``), as its
    ``--dry-run`` says it; a directory holding a run of another config is refused as ``check_resumable`` refuses it."""
    directory = run_dir(cfg) if directory is None else directory
    check_resumable(cfg, directory)
    if read_run_config(directory, type(cfg)) is None:
        return "a new run"
    return "holds a run of this config, which the command continues (a finished one prints its results)"


@dataclasses.dataclass(frozen=True)
class InProcessResult:
    """What an in-process ``Run.fit`` returns: as much of Ray Train's ``Result`` as xlt reads."""

    metrics: dict[str, Any] | None
    checkpoint: Checkpoint | None
    path: str


@dataclasses.dataclass(frozen=True)
class Run:
    """A train function on a resolved config's run directory, as ``launch`` made it; ``fit`` runs it to the end."""

    train: TrainFn
    config: Any
    datasets: dict[str, ray.data.Dataset | LocalRows]  # rows held here only for a run in this process
    workload: Workload  # what the run's record says it produced (xlt.record)
    callbacks: Sequence[Any] = ()

    def fit(self) -> Any:
        """Train: a Ray Train run (``scaling.num_workers`` ≥ 1; returns its ``ray.train.Result``), or the
        calling thread's (0; an ``InProcessResult``: the same train function, run directory, checkpoints
        and callbacks, without Ray Train's controller and worker group, whose start-up is seconds a
        run: most of a small model's fit; its datasets held in this process, ``xlt.engine.rows``). The run directory's record (``xlt.record``) says the run is
        running, then finished with its metrics and the classifiers of its last checkpoint
        (``Workload.classifiers``), or failed."""
        import ray.data

        ray.data.DataContext.get_current().enable_progress_bars = False
        cfg, directory = self.config, run_dir(self.config)
        recorder = recorder_class()(self.workload, cfg, directory)
        recorder.write(RUNNING)
        callbacks = (*self.callbacks, recorder)
        try:
            if cfg.scaling.num_workers == 0:
                context = InProcessContext(directory, cfg.output.num_to_keep, held_here(self.datasets), callbacks,
                                           use_gpu=cfg.scaling.use_gpu)
                self.train(context, cfg)
                result = InProcessResult(context.metrics, context.latest_checkpoint(), directory)
            else:
                result = self._torch_trainer(callbacks).fit()
        except BaseException as e:
            recorder.failed(e)
            raise
        recorder.finished(result, final_metrics(result) if result.checkpoint is not None else {})
        return result

    def _torch_trainer(self, callbacks: Sequence[Any]) -> Any:
        import ray.train
        from ray.train.torch import TorchTrainer

        cfg, scaling = self.config, self.config.scaling
        return TorchTrainer(
            functools.partial(on_ray_train, train=self.train, config_class=type(cfg),
                              unused=self.workload.unused_parameters(cfg)),
            train_loop_config=dataclasses.asdict(cfg),
            scaling_config=ray.train.ScalingConfig(num_workers=scaling.num_workers, use_gpu=scaling.use_gpu,
                                                   resources_per_worker=scaling.worker_resources()),
            run_config=ray.train.RunConfig(
                name=cfg.output.name,
                storage_path=cfg.output.storage_path,
                checkpoint_config=ray.train.CheckpointConfig(num_to_keep=cfg.output.num_to_keep),
                failure_config=ray.train.FailureConfig(max_failures=scaling.max_failures),
                logging_config=ray.train.LoggingConfig(log_level=train_logging_level()),
                callbacks=list(callbacks) or None,
            ),
            datasets=self.datasets,
            dataset_config=ray.train.DataConfig(datasets_to_split=[n for n in ("train",) if n in self.datasets]),
        )


def on_ray_train(config: dict[str, Any], train: TrainFn, config_class: type, unused: bool = False) -> None:
    """The function every Ray Train worker runs: ``train`` in the worker's ``RayTrainContext`` (``unused``: some
    weights get no gradient, ``Workload.unused_parameters``)."""
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    cfg = from_dict(config_class, config)
    train(RayTrainContext(cfg.scaling.torch_threads, find_unused_parameters=unused), cfg)


def launch(workload: Workload, cfg: Any, datasets: dict[str, ray.data.Dataset | LocalRows], *,
           callbacks: Sequence[Any] = (),
           train: TrainFn | None = None) -> Run:
    """The run of ``workload`` on ``cfg`` (a resolved ``workload.config_class``): ``datasets["train"]``
    split across the workers, the others whole. ``callbacks``: Ray Train ``UserCallback``s (a Tune trial
    passes ``TuneReportCallback``). ``train``: the train function, ``train_workload`` of ``workload``
    unless given (``xlt.engine.fits``).

    The run directory ``output.dir`` gets ``cfg`` as ``config.yaml``; if it already holds a run whose
    config differs in a key declared fixed, this refuses (``check_resumable``)."""
    check_resumable(cfg)
    write_run_config(cfg)
    return Run(train or functools.partial(train_workload, workload=workload), cfg, datasets, workload, tuple(callbacks))
