"""What a co-training run's record (``xlt.record``) says it produced: each learner as the run last left it
(``lm``, ``emb``; the default, as before records, is ``lm``) and the job's classifier (``classifier``) at the
iteration it keeps, the learners it combines as that iteration left them. Written after every iteration and
when the run ends, so that a stopped run's learners are usable as it left them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..inference import ClassifierSpec
from ..record import FAILED, spec_entry, update_record, write_record
from ..storage import is_uri, join, read_text
from ..tasks import Task
from ..train.checkpoint import checkpoint_entry
from .classifier import CLASSIFIER, describe, kept_record, members, predictions_path
from .config import LEARNERS, CotrainConfig
from .learner import fit_model, learner_run
from .probe import probe_path

JOB = "cotrain"


def write_cotrain_record(cfg: CotrainConfig, task: Task, history: Sequence[Mapping[str, Any]], status: str,
                         phase: str | None = None) -> None:
    """The record of the run of ``cfg`` on ``task`` whose loop has recorded ``history``."""
    if not any(h["learner"] == CLASSIFIER for h in history):
        write_record(cfg.output.dir, JOB, cfg, status, phase=phase)
        return
    chosen = kept_record(history, cfg.classifier.keep, task.source_lang)
    # Each iteration's rows as every learner and the job's classifier predicted them (xlt.cotrain.classifier).
    predictions = {predictions_key(h["iteration"]): predictions_path(cfg.output.dir, h["iteration"])
                   for h in history if h["learner"] == CLASSIFIER}
    write_record(cfg.output.dir, JOB, cfg, status, phase=phase, metrics=dict(chosen),
                 classifiers=classifiers(cfg, task, history), default=LEARNERS[0], outputs=predictions)


def predictions_key(iteration: int) -> str:
    """The name under which a run's record keeps where ``iteration``'s predictions are."""
    return f"predictions of iteration {iteration}"


def record_failure(cfg: CotrainConfig, error: BaseException) -> None:
    """The run's record says it failed (what it had recorded stays: its learners as the last iteration left them)."""
    try:
        update_record(cfg.output.dir, status=FAILED, error=f"{type(error).__name__}: {error}")
    except FileNotFoundError:
        write_record(cfg.output.dir, JOB, cfg, FAILED, error=f"{type(error).__name__}: {error}")


def classifiers(cfg: CotrainConfig, task: Task, history: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each learner at its last fit, and the job's classifier at the iteration it keeps, as record entries."""
    last = max(h["iteration"] for h in history if h["learner"] == CLASSIFIER)
    chosen = kept_record(history, cfg.classifier.keep, task.source_lang)
    kept, combined = int(chosen["iteration"]), members(chosen)
    entries = {name: learner_entry(cfg, task, name, last, last) for name in LEARNERS}
    at_kept = {name: entries[name] if kept == last else learner_entry(cfg, task, name, kept, last)
               for name in combined}
    what = describe(cfg.classifier, combined, task.source_lang)
    job = (at_kept[combined[0]] if len(combined) == 1 else {"members": at_kept})
    return {**entries, CLASSIFIER: {**job, "what": f"the co-training job's classifier: {what}", "iteration": kept}}


def learner_entry(cfg: CotrainConfig, task: Task, name: str, iteration: int, last: int) -> dict[str, Any]:
    """Learner ``name`` as its fit of ``iteration`` left it (``last``: the fit its run keeps whole)."""
    learner, out = cfg.learner(name), cfg.output.dir
    about = {"what": f"co-training learner {name} ({'a frozen-encoder probe' if learner.kind == 'probe' else 'fine-tuned'})",
             "iteration": iteration}
    if learner.kind == "probe":
        run = learner_run(out, name)
        settings = json.loads(read_text(probe_path(run, iteration, ".json")) or "{}")
        spec = ClassifierSpec(model=learner.model, labels=task.labels, state=probe_path(run, iteration),
                              paired=task.paired, from_source=tuple(settings.get("from_source", ())), normalize=True,
                              languages=tuple(settings.get("languages", ())))
        return spec_entry(spec, out, **about)
    path = fit_model(out, name, iteration, last).path
    if is_uri(out) and not is_uri(path):  # Ray's result names a store's checkpoint without its scheme
        path = join(learner_run(out, name), Path(path).name)
    return checkpoint_entry(path, out, **about)
