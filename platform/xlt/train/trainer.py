"""``FinetuneConfig`` -> ``TorchTrainer``; resuming; the per-language results of a finished run.

``resolve(cfg)`` runs on the driver before Ray starts: it loads the task (``xlt.tasks``), fills the
resolved fields (target languages, labels, train size; see ``config``) and reads every row the
run will use, so that bad input fails before any work. ``build_trainer(resolved)`` builds the Ray
datasets (``train`` split across workers; ``val`` = every language's dev split and ``test`` =
every language's test split, unsplit, read by rank 0), writes ``config.yaml`` into the run
directory ``<storage_path>/<name>/`` and returns the trainer; ``.fit()`` runs it.

Resuming, Ray Train V2 (Ray 2.60): ``TorchTrainer.restore`` and ``resume_from_checkpoint`` are
gone (they raise ``DeprecationWarning``). A run is identified by ``RunConfig(storage_path,
name)``: its controller reads ``<storage_path>/<name>/checkpoint_manager_snapshot.json`` and
hands the latest checkpoint to every worker as ``ray.train.get_checkpoint()``. So running the
same config again resumes it; ``resume_trainer(run_dir)`` does that from the run's saved
``config.yaml``, optionally with more epochs. Within one ``fit``, ``FailureConfig(max_failures)``
restarts failed workers from the latest checkpoint the same way. Because the name alone decides,
``build_trainer`` refuses to continue a run directory whose saved config trains something else.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence, TypeVar

from ..config import ConfigError, apply_overrides, from_dict, read_yaml, save_config
from ..eval.classification import AVG_TARGET, SCORES, gap_name, metric_name
from ..tasks import Task, load_task
from .config import RESUMABLE_CHANGES, FinetuneConfig, OutputSettings, incompatible_changes
from .data import check_augment_languages, eval_rows, train_dataset, train_rows
from .reporting import CONFIG_FILE

if TYPE_CHECKING:
    import ray.data
    from ray.train.torch import TorchTrainer

RESULTS_FILE = "results.json"
C = TypeVar("C")


def _is_uri(path: str) -> bool:
    return "://" in path


def run_dir(cfg: Any) -> str:
    """``<storage_path>/<name>``: where Ray Train keeps the run's checkpoints and we its config."""
    return f"{cfg.output.storage_path.rstrip('/')}/{cfg.output.name}"


def results_path(cfg: FinetuneConfig) -> Path:
    """The results JSON: in the run directory when storage is local, else under ``results/finetune/``."""
    if _is_uri(cfg.output.storage_path):
        return Path("results", "finetune", cfg.output.name, RESULTS_FILE)
    return Path(run_dir(cfg), RESULTS_FILE)


@dataclass(frozen=True)
class Resolved:
    """A resolved config, its task and the rows it trains and evaluates on (see ``resolve``)."""

    config: FinetuneConfig
    task: Task
    train: list[dict[str, Any]]
    val: list[dict[str, Any]]
    test: list[dict[str, Any]]


def resolve(cfg: FinetuneConfig) -> Resolved:
    """Load the task and every row of the run; fill the resolved fields (absolute storage path,
    target languages, labels, train size). Bad input fails here, naming file and line."""
    task = load_task(cfg.task, cfg.data.data_dir)
    if cfg.data.augment is not None:
        check_augment_languages(cfg.data.augment, task, cfg.data.translator)
    train = train_rows(cfg.data, task)
    val, test = (eval_rows(task, split, cfg.data.max_examples) for split in ("dev", "test"))
    resolved = dataclasses.replace(cfg, task=task.config, output=absolute_storage(cfg.output),
                                   data=dataclasses.replace(cfg.data, train_rows=len(train)))
    resolved.steps_per_epoch(cfg.scaling.num_workers)  # fails now, not on the workers, if there are too few rows
    return Resolved(resolved, task, train, val, test)


def build_datasets(resolved: Resolved, train: ray.data.Dataset | None = None) -> dict[str, ray.data.Dataset]:
    """``train`` (the resolved rows, through the augmentation UDF if configured, or a ready
    dataset), ``val`` (dev) and ``test`` of the source and target languages."""
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    cfg = resolved.config
    return {"train": train if train is not None else train_dataset(cfg.data, resolved.task, resolved.train),
            "val": ray.data.from_items(resolved.val), "test": ray.data.from_items(resolved.test)}


def read_run_config(directory: str, config_cls: type[C] = FinetuneConfig) -> C | None:
    """The ``config.yaml`` of a run directory (local or URI) as ``config_cls``, or ``None`` if there is none."""
    path = f"{directory.rstrip('/')}/{CONFIG_FILE}"
    if not _is_uri(path):
        return from_dict(config_cls, read_yaml(path)) if Path(path).is_file() else None
    import pyarrow.fs

    fs, fs_path = pyarrow.fs.FileSystem.from_uri(path)
    if fs.get_file_info(fs_path).type == pyarrow.fs.FileType.NotFound:
        return None
    with fs.open_input_stream(fs_path) as f, tempfile.TemporaryDirectory() as tmp:
        Path(tmp, CONFIG_FILE).write_bytes(f.read())
        return from_dict(config_cls, read_yaml(Path(tmp, CONFIG_FILE)))


def write_run_config(cfg: Any) -> None:
    """Save ``cfg`` as ``config.yaml`` in its run directory (local or URI)."""
    path = f"{run_dir(cfg)}/{CONFIG_FILE}"
    if not _is_uri(path):
        save_config(cfg, path)
        return
    import pyarrow.fs

    fs, fs_path = pyarrow.fs.FileSystem.from_uri(path)
    with tempfile.TemporaryDirectory() as tmp:
        save_config(cfg, Path(tmp, CONFIG_FILE))
        fs.create_dir(fs_path.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(fs_path) as f:
            f.write(Path(tmp, CONFIG_FILE).read_bytes())


def build_trainer(cfg: FinetuneConfig | Resolved, train_dataset: ray.data.Dataset | None = None) -> TorchTrainer:
    """The ``TorchTrainer`` of ``cfg`` (resolved here unless it already is); a run directory that
    already holds checkpoints is resumed.

    ``train_dataset``: rows to train on instead of the task's (e.g. the output of an augmentation
    UDF: one row per original with ``views`` list columns); it is counted once for the schedule.
    """
    from .loop import train_loop_per_worker

    resolved = cfg if isinstance(cfg, Resolved) else resolve(cfg)
    if train_dataset is not None:
        config = resolved.config
        config = dataclasses.replace(config, data=dataclasses.replace(config.data, train_rows=train_dataset.count()))
        config.steps_per_epoch(config.scaling.num_workers)
        resolved = dataclasses.replace(resolved, config=config)
    return torch_trainer(train_loop_per_worker, resolved.config, build_datasets(resolved, train_dataset))


def absolute_storage(output: OutputSettings) -> OutputSettings:
    """``output`` with a local ``storage_path`` made absolute (Ray Train needs one); URIs as they are."""
    storage = output.storage_path if _is_uri(output.storage_path) else os.path.abspath(output.storage_path)
    return dataclasses.replace(output, storage_path=storage)


def torch_trainer(loop: Callable[[dict[str, Any]], None], cfg: Any, datasets: dict[str, ray.data.Dataset], *,
                  resumable: Sequence[str] = RESUMABLE_CHANGES) -> TorchTrainer:
    """The ``TorchTrainer`` running ``loop`` on ``cfg`` (a resolved config with ``scaling`` and ``output``
    sections): ``datasets["train"]`` split across the workers, the others whole.

    The run directory ``<storage_path>/<name>/`` gets ``cfg`` as ``config.yaml``; if it already
    holds a run whose config differs in a key outside ``resumable``, this refuses (Ray Train
    would resume that run's checkpoints under the new config).
    """
    import ray.train
    from ray.train.torch import TorchTrainer

    previous = read_run_config(run_dir(cfg), type(cfg))
    if previous is not None:
        changed = incompatible_changes(previous, cfg, resumable)
        if changed:
            raise ConfigError(f"{run_dir(cfg)} holds a run whose config differs in {', '.join(changed)}; "
                              "Ray Train would resume it from its checkpoints. Choose a new output.name, "
                              "or resume it unchanged (the job's --resume RUN_DIR)")
    write_run_config(cfg)
    scaling = cfg.scaling
    resources = {"CPU": scaling.cpus_per_worker, **({"GPU": 1} if scaling.use_gpu else {})}
    return TorchTrainer(
        loop,
        train_loop_config=dataclasses.asdict(cfg),
        scaling_config=ray.train.ScalingConfig(num_workers=scaling.num_workers, use_gpu=scaling.use_gpu,
                                               resources_per_worker=resources),
        run_config=ray.train.RunConfig(
            name=cfg.output.name,
            storage_path=cfg.output.storage_path,
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=cfg.output.num_to_keep),
            failure_config=ray.train.FailureConfig(max_failures=scaling.max_failures),
        ),
        datasets=datasets,
        dataset_config=ray.train.DataConfig(datasets_to_split=["train"]),
    )


def config_of(trainer: TorchTrainer) -> FinetuneConfig:
    """The resolved config a trainer from ``build_trainer`` runs."""
    return from_dict(FinetuneConfig, trainer.train_loop_config)


def resume_config(directory: str, overrides: Iterable[str] = (), config_cls: type[C] = FinetuneConfig) -> C:
    """The saved config (a ``config_cls``) of run ``directory`` with ``--set``-style ``overrides``
    (e.g. ``optim.epochs=5``), pointed at that directory wherever it now lives."""
    saved = read_run_config(directory, config_cls)
    if saved is None:
        raise FileNotFoundError(f"{directory} has no {CONFIG_FILE}: not a run directory of an xlt training job "
                                "(expected <storage_path>/<name>/ with config.yaml and checkpoints)")
    directory = directory.rstrip("/")
    storage, _, name = directory.rpartition("/")
    data = apply_overrides(dataclasses.asdict(saved), overrides)
    data["output"] = {**data["output"], "storage_path": storage or ".", "name": name}
    return from_dict(config_cls, data)


def resume_trainer(directory: str, overrides: Iterable[str] = ()) -> TorchTrainer:
    """A trainer that continues run ``directory`` from its latest checkpoint (see the module docstring)."""
    return build_trainer(resume_config(directory, overrides))


def results_rows(metrics: Mapping[str, float], source_lang: str) -> list[dict[str, Any]]:
    """Per-language rows (``lang``, then ``<split> <score>`` for val/test × acc/f1) from a run's final
    metrics: the source language first, then the targets, then ``avg_target`` and ``transfer_gap``."""
    columns = [(split, score) for split in ("val", "test") for score in SCORES]
    names = [key.split("/") for key in metrics]  # <split>/<score>/<lang>
    langs = sorted({n[2] for n in names if len(n) == 3 and (n[0], n[1]) in columns} - {AVG_TARGET})
    if source_lang not in langs:
        raise ValueError(f"metrics hold no score for the source language {source_lang!r}; "
                         f"keys: {', '.join(sorted(metrics))}")
    order = [source_lang] + [lang for lang in langs if lang != source_lang] + [AVG_TARGET]
    rows = [{"lang": lang, **{f"{split} {score}": metrics.get(metric_name(split, score, lang))
                              for split, score in columns}} for lang in order]
    rows.append({"lang": "transfer_gap", **{f"{split} {score}": metrics.get(gap_name(split, score))
                                            for split, score in columns}})
    return rows
