"""The probes a co-training run prints beside its tables (``probes:``, ``adapted_probes:``): each encoder's
frozen-linear probe (``xlt.eval.baselines``), adapted to the job's pools or not, fitted and scored on exactly
the rows the learners saw: the labelled draw D and every language's ``data.eval_split``."""

from __future__ import annotations

from typing import Any

from ..eval.baselines import JobRows, job_task_rows, probe_scores
from ..models import EncoderConfig
from ..tasks import Task, load_task
from .config import CotrainConfig
from .loop import labeled_examples


def cotrain_rows(cfg: CotrainConfig, task: Task | None = None) -> JobRows:
    """A ``CotrainConfig``'s rows: its labelled draw D and every language's ``data.eval_split``, with
    the LM learner's encoder (the one it fine-tunes). ``task``: the job's, if already read."""
    task = task or load_task(cfg.task, cfg.data.data_dir)
    return job_task_rows(task, labeled_examples(task, cfg.data), cfg.data.max_examples, cfg.data.eval_split,
                         cfg.lm.model, cfg.lm.optim.freeze_word_embeddings, cfg.data.disjoint)


def probe_table(cfg: CotrainConfig, task: Task) -> dict[str, dict[str, dict[str, float]]]:
    """Each probe of ``cfg.probes`` (frozen) and ``cfg.adapted_probes`` (adapted to the job's pools), by name
    (``frozen probe: <source>``, ``adapted probe: <source>``): ``{score: {lang: value}}``."""
    if not cfg.probes and not cfg.adapted_probes:
        return {}
    rows = cotrain_rows(cfg, task)  # the rows the learners saw, once

    def encoder(source: str) -> EncoderConfig:
        return EncoderConfig(source=source, max_length=cfg.lm.model.max_length)

    probes: dict[str, Any] = {f"frozen probe: {source}": probe_scores(rows, encoder(source)) for source in cfg.probes}
    return probes | {f"adapted probe: {source}": probe_scores(rows, encoder(source), cfg.probe_adapt)
                     for source in cfg.adapted_probes}
