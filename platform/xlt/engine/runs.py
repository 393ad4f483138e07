"""Run directories and ``TorchTrainer`` construction, for every job on the engine.

A run lives in ``output.dir``; Ray Train identifies it by ``RunConfig(storage_path, name)``, the
directory's parent and last part (Ray Train V2, Ray 2.60: ``TorchTrainer.restore`` and
``resume_from_checkpoint`` are gone). Its controller reads
``<output.dir>/checkpoint_manager_snapshot.json`` and hands the latest checkpoint to
every worker as ``ray.train.get_checkpoint()``. So running the same config again resumes it;
``resume_config(run_dir)`` rebuilds that config from the run's saved ``config.yaml``, optionally
with more epochs. Within one ``fit``, ``FailureConfig(max_failures)`` restarts failed workers
from the latest checkpoint the same way. Because the directory alone decides, ``torch_trainer``
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
from ..storage import OutputSettings, fetched, is_uri, staged
from ..config import ConfigError, apply_overrides, from_dict, read_yaml, save_config
from .loop import Workload, train_loop_per_worker
from .checkpoints import CONFIG_FILE
from .session import InProcessTrainer
from .settings import RESUMABLE_CHANGES, incompatible_changes

if TYPE_CHECKING:
    import ray.data
    from ray.train.torch import TorchTrainer

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


def check_resumable(cfg: Any, resumable: Sequence[str] = RESUMABLE_CHANGES, directory: str | None = None,
                    instead: str = "choose another output.dir, or resume it unchanged (the job's --resume RUN_DIR)",
                    ) -> None:
    """The one resume guard of every job: refuse (``ConfigError``) a run directory (``directory``,
    else ``run_dir(cfg)``; local or URI) that holds a run whose ``config.yaml`` differs from ``cfg``
    in a key outside ``resumable``, which would resume what is there under the new config.
    ``instead`` tells the user what to do. ``torch_trainer`` checks; a workload whose datasets take
    time to build checks first as well, and co-training before its first iteration."""
    directory = run_dir(cfg) if directory is None else directory
    previous = read_run_config(directory, type(cfg))
    changed = incompatible_changes(previous, cfg, resumable) if previous is not None else []
    if changed:
        raise ConfigError(f"{directory} holds a run whose config differs in {', '.join(changed)}, which it would "
                          f"resume under the new config; {instead}")


def torch_trainer(workload: Workload, cfg: Any, datasets: dict[str, ray.data.Dataset], *,
                  resumable: Sequence[str] = RESUMABLE_CHANGES, callbacks: Sequence[Any] = (),
                  train_fn: Callable[[dict[str, Any]], None] | None = None) -> TorchTrainer | InProcessTrainer:
    """The ``TorchTrainer`` running ``workload`` on ``cfg`` (a resolved ``workload.config_class``):
    ``datasets["train"]`` split across the workers, the others whole. ``callbacks``: Ray Train
    ``UserCallback``s (a Tune trial passes ``TuneReportCallback``). ``train_fn``: the per-worker
    function, ``train_loop_per_worker`` of ``workload`` unless given (``xlt.engine.fits``).

    The run directory ``output.dir`` gets ``cfg`` as ``config.yaml``; if it already
    holds a run whose config differs in a key outside ``resumable``, this refuses (Ray Train
    would resume that run's checkpoints under the new config).

    ``scaling.num_workers: 0`` trains in the calling process instead (``session.InProcessTrainer``:
    the same train function, run directory, checkpoints and callbacks, without Ray Train's
    controller and worker group, whose start-up costs 7-12 s per run on two cores).
    """
    import ray.train
    from ray.train.torch import TorchTrainer

    check_resumable(cfg, resumable)
    write_run_config(cfg)
    scaling = cfg.scaling
    train_fn = train_fn or functools.partial(train_loop_per_worker, workload=workload)
    if scaling.num_workers == 0:
        return InProcessTrainer(train_fn, dataclasses.asdict(cfg), run_dir(cfg), cfg.output.num_to_keep, datasets,
                                callbacks)
    return TorchTrainer(
        train_fn,
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
        datasets=datasets,
        dataset_config=ray.train.DataConfig(datasets_to_split=[name for name in ("train",) if name in datasets]),
    )
