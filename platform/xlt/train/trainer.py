"""``FinetuneConfig`` -> the engine's ``Run``; resuming; the per-language results of a finished run.

``prepare(cfg)`` runs on the driver before Ray starts: it loads the task (``xlt.tasks``), fills the
resolved fields (target languages, labels, train size; see ``config``) and reads every row the
run will use, so that bad input fails before any work. ``build_trainer(resolved)`` builds the Ray
datasets (``train`` split across workers; ``val`` = every language's dev split and ``test`` =
every language's test split, unsplit, read by rank 0), writes ``config.yaml`` into the run
directory ``output.dir`` and returns the trainer; ``.fit()`` runs it.

Training runs on the engine (``xlt.engine``: the ``FINETUNE`` workload of ``xlt.train.workload``).
Resuming is the engine's: running the same config again resumes it from its run directory;
``build_trainer(resume_config(run_dir))`` does that from the run's saved ``config.yaml``, optionally with more
epochs, and a run directory whose saved config trains something else is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engine import Run, absolute_storage, check_device, check_resumable, launch
from ..engine import resume_config as resume_run_config
from ..engine.rows import run_rows
from ..metrics import AVG_TARGET, SCORES, gap_name, metric_name
from ..tasks import Task, load_task
from .config import FinetuneConfig
from .data import check_augment_languages, eval_rows, train_dataset, train_rows
from .workload import FINETUNE

if TYPE_CHECKING:
    import ray.data
    

@dataclass(frozen=True)
class PreparedFinetune:
    """A resolved config, its task and the rows it trains and evaluates on (see ``prepare``)."""

    config: FinetuneConfig
    task: Task
    train: list[dict[str, Any]]
    val: list[dict[str, Any]]
    test: list[dict[str, Any]]


def prepare(cfg: FinetuneConfig) -> PreparedFinetune:
    """Load the task and every row of the run; fill the resolved fields (absolute storage path,
    target languages, labels, train size). Bad input fails here, naming file and line, and a
    precision the device cannot compute in, naming both."""
    check_device(cfg.optim, cfg.scaling)
    task = load_task(cfg.task, cfg.data.data_dir)
    if cfg.data.augment is not None:
        check_augment_languages(cfg.data.augment, task, cfg.data.translator)
    train = train_rows(cfg.data, task)
    val = eval_rows(task, "dev", cfg.data.max_examples)
    test = eval_rows(task, "test", cfg.data.max_examples) if evaluated(cfg, "test") else []
    resolved = dataclasses.replace(cfg, task=task.config, output=absolute_storage(cfg.output),
                                   data=dataclasses.replace(cfg.data, train_rows=len(train)))
    resolved.steps_per_epoch(cfg.scaling.num_workers)  # fails now, not on the workers, if there are too few rows
    return PreparedFinetune(resolved, task, train, val, test)


def build_datasets(prepared: PreparedFinetune, train: ray.data.Dataset | None = None) -> dict[str, Any]:
    """``train`` (the resolved rows, through the augmentation UDF if configured, or a ready
    dataset), ``val`` (dev) and ``test`` of the source and target languages: held in this process for a run in it
    (``xlt.engine.rows``), Ray datasets for Ray Train's workers."""
    cfg = prepared.config
    here = cfg.scaling.num_workers == 0
    if train is None:
        train = (train_dataset(cfg.data, prepared.task, prepared.train) if cfg.data.augment is not None
                 else run_rows(prepared.train, here))
    return {"train": train, "val": run_rows(prepared.val, here),
            **({"test": run_rows(prepared.test, here)} if evaluated(cfg, "test") else {})}


def needs_ray(cfg: FinetuneConfig) -> bool:
    """Whether a run of ``cfg`` needs Ray: Ray Train's workers, or views made by the augmentation UDF. A run in
    the job's process on rows it holds does not (``xlt.engine.rows``)."""
    return cfg.scaling.num_workers > 0 or cfg.data.augment is not None


def evaluated(cfg: FinetuneConfig, data: str) -> bool:
    """Whether an evaluator of ``cfg`` reads the evaluation dataset ``data``."""
    return any(spec.data == data for spec in cfg.evals)


def build_trainer(cfg: FinetuneConfig | PreparedFinetune, train_dataset: ray.data.Dataset | None = None, *,
                  callbacks: Sequence[Any] = ()) -> Run:
    """The run of ``cfg`` (resolved here unless it already is); a run directory that
    already holds checkpoints is resumed.

    ``train_dataset``: rows to train on instead of the task's (e.g. the output of an augmentation
    UDF: one row per original with ``views`` list columns); it is counted once for the schedule.
    ``callbacks``: Ray Train callbacks (a sweep trial passes Tune's ``TuneReportCallback``).
    """
    prepared = cfg if isinstance(cfg, PreparedFinetune) else prepare(cfg)
    if train_dataset is None:  # the views are made below: refuse a changed run before, not after
        check_resumable(prepared.config)
    else:
        config = prepared.config
        config = dataclasses.replace(config, data=dataclasses.replace(config.data, train_rows=train_dataset.count()))
        config.steps_per_epoch(config.scaling.num_workers)
        prepared = dataclasses.replace(prepared, config=config)
    return launch(FINETUNE, prepared.config, build_datasets(prepared, train_dataset), callbacks=callbacks)



def resume_config(directory: str, overrides: Iterable[str] = ()) -> FinetuneConfig:
    """The saved config of fine-tuning run ``directory`` with ``--set``-style ``overrides`` (e.g. ``optim.epochs=5``)."""
    return resume_run_config(directory, overrides, FinetuneConfig)


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
