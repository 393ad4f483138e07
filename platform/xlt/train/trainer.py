"""``FinetuneConfig`` -> ``TorchTrainer``; resuming; the per-language results of a finished run.

``build_trainer(cfg)`` resolves the config on the driver (data root, target languages, labels,
train size; see ``config``), builds the Ray datasets (``train`` split across workers; ``val`` =
every language's dev split and ``test`` = every language's test split, unsplit, read by rank
0), writes ``config.yaml`` into the run directory ``<storage_path>/<name>/`` and returns the
trainer; ``.fit()`` runs it.

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
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence, TypeVar

from ..config import ConfigError, apply_overrides, from_dict, read_yaml, save_config
from ..data import resolve_data_dir, sib200_labels, sib200_languages
from ..eval.classification import ACC, AVG_TARGET, TRANSFER_GAP, metric_name
from .config import RESUMABLE_CHANGES, FinetuneConfig, OutputSettings, incompatible_changes
from .data import eval_rows, train_dataset, train_rows
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


def _resolve_languages(cfg: FinetuneConfig, root: Path) -> tuple[str, ...]:
    on_disk = sib200_languages(root)
    targets = cfg.data.target_langs or tuple(lang for lang in on_disk if lang != cfg.data.source_lang)
    full_views = cfg.data.augment.languages_for("full") if cfg.data.augment and cfg.data.augment.t_f else ()
    for key, langs in (("data.source_lang", (cfg.data.source_lang,)), ("data.target_langs", targets),
                       ("data.augment.languages", full_views)):
        missing = [lang for lang in langs if lang not in on_disk]
        if missing:
            raise ConfigError(f"{key}: {', '.join(missing)} have no SIB-200 data under {root}; "
                              f"available: {', '.join(on_disk)}")
    if not targets:
        raise ConfigError(f"no target language: {root} has SIB-200 data only for the source language "
                          f"{cfg.data.source_lang!r}; the transfer metrics need at least one target")
    return targets


def resolve(cfg: FinetuneConfig) -> tuple[FinetuneConfig, list[dict[str, Any]]]:
    """Fill the resolved fields (absolute data root and storage path, target languages, labels,
    train size) and return the config with the train rows it describes."""
    root = resolve_data_dir(cfg.data.data_dir)
    targets = _resolve_languages(cfg, root)
    labels = tuple(sib200_labels(root))
    if cfg.data.labels and cfg.data.labels != labels:
        raise ConfigError(f"data.labels={list(cfg.data.labels)} differ from the labels of {root}: {list(labels)}; "
                          "leave data.labels empty to read them from the data")
    data = dataclasses.replace(cfg.data, data_dir=str(root), target_langs=targets, labels=labels)
    rows = train_rows(data, root, targets)
    return dataclasses.replace(cfg, data=dataclasses.replace(data, train_rows=len(rows)),
                               output=absolute_storage(cfg.output)), rows


def build_datasets(cfg: FinetuneConfig, rows: list[dict[str, Any]] | ray.data.Dataset) -> dict[str, ray.data.Dataset]:
    """``train`` from ``rows`` (or a ready dataset), ``val`` (dev) and ``test`` of the source and targets."""
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    langs = (cfg.data.source_lang, *cfg.data.target_langs)
    root = Path(cfg.data.data_dir)
    train = rows if isinstance(rows, ray.data.Dataset) else train_dataset(cfg.data, root, rows)
    return {"train": train,
            "val": ray.data.from_items(eval_rows(root, langs, "dev", cfg.data.max_examples)),
            "test": ray.data.from_items(eval_rows(root, langs, "test", cfg.data.max_examples))}


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


def build_trainer(cfg: FinetuneConfig, train_dataset: ray.data.Dataset | None = None) -> TorchTrainer:
    """The ``TorchTrainer`` of ``cfg``; a run directory that already holds checkpoints is resumed.

    ``train_dataset``: rows to train on instead of SIB-200's (e.g. the output of an augmentation
    UDF: one row per original with ``views`` list columns); it is counted once for the schedule.
    """
    from .loop import train_loop_per_worker

    cfg, rows = resolve(cfg)
    if train_dataset is not None:
        cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, train_rows=train_dataset.count()))
    cfg.steps_per_epoch(cfg.scaling.num_workers)  # fails now, not on the workers, if there are too few rows
    return torch_trainer(train_loop_per_worker, cfg, build_datasets(cfg, rows if train_dataset is None else train_dataset))


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
    """Per-language accuracy rows (``lang``, ``val``, ``test``) from a run's final metrics: the
    source language first, then the targets, then ``avg_target`` and ``transfer_gap``."""
    splits = ("val", "test")
    names = [key.split("/") for key in metrics]  # <split>/acc/<lang>
    langs = sorted({n[2] for n in names if len(n) == 3 and n[0] in splits and n[1] == ACC} - {AVG_TARGET})
    if source_lang not in langs:
        raise ValueError(f"metrics hold no accuracy for the source language {source_lang!r}; "
                         f"keys: {', '.join(sorted(metrics))}")
    order = [source_lang] + [lang for lang in langs if lang != source_lang] + [AVG_TARGET]
    rows = [{"lang": lang, **{split: metrics.get(metric_name(split, ACC, lang)) for split in splits}}
            for lang in order]
    rows.append({"lang": TRANSFER_GAP, **{split: metrics.get(metric_name(split, TRANSFER_GAP)) for split in splits}})
    return rows
