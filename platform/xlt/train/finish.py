"""How ``jobs/finetune.py`` ends: the per-language table, ``results.json`` beside the checkpoints, the export
(``output.export``) and the run's record updated with what it wrote."""

from __future__ import annotations

from dataclasses import asdict
from collections.abc import Mapping
from typing import Any

from ..engine import RESULTS_FILE, final_metrics, run_dir
from ..export import export_recorded
from ..metrics import TRAIN_EPOCH, TRAIN_KEPT_EPOCH
from ..record import EXPORT_DIR, update_record
from ..report import NOTHING_SCORED, Finished, dropped_rows, markdown_table, write_results
from ..storage import join, staged
from ..tracking import Tracker
from .config import FinetuneConfig
from .trainer import results_rows


def finish_finetune(cfg: FinetuneConfig, result: Any, tracker: Tracker,
                    dropped: Mapping[str, int] | None = None) -> Finished:
    """A fine-tuning run's per-language table (of its final metrics: a finished run's rerun reports none, its last
    checkpoint's), ``results.json`` beside the checkpoints, its export. ``result``: the run's ``fit()``;
    ``dropped``: the rows its task left out for a label outside its labels (``Task.dropped``)."""
    metrics = final_metrics(result)
    rows = results_rows(metrics, cfg.task.source_lang) if cfg.evals else []
    text = (f"## {cfg.output.name}: {cfg.task.name}, {cfg.model.source}, {cfg.data.setting}, "
            f"objectives: {', '.join(['ce'] + [o.name for o in cfg.objectives])}\n\n"
            + (markdown_table(rows) if rows else NOTHING_SCORED))
    dropped = dict(dropped or {})
    if dropped:
        text += f"\n\n{dropped_rows(dropped)}"
    if TRAIN_KEPT_EPOCH in metrics:  # optim.keep: best-dev
        text += (f"\n\nThe weights of epoch {int(metrics[TRAIN_KEPT_EPOCH])} (of {int(metrics[TRAIN_EPOCH])} trained, "
                 f"{cfg.optim.epochs} set), the best {cfg.task.source_lang} dev accuracy (optim.keep: best-dev"
                 + (f", patience {cfg.optim.patience}" if cfg.optim.patience else "") + "): the scores above are theirs.")
    directory = run_dir(cfg)
    with staged(directory) as out:  # beside the checkpoints, local or on a store
        tracker.artifacts(write_results(out / RESULTS_FILE, {
            "rows": rows, "scored": bool(rows), "dropped rows": dropped, "metrics": metrics, "checkpoint": result.checkpoint.path,
            "config": asdict(cfg)}))
    tracker.tag("xlt.checkpoint", result.checkpoint.path)
    outputs = {"results": join(directory, RESULTS_FILE), "checkpoint": result.checkpoint.path}
    if cfg.output.export:  # the classifier for use outside xlt, and the run's MLflow model
        outputs |= export_recorded(directory, {None: join(directory, EXPORT_DIR)}, tracker,
                                   backend=cfg.output.export_backend)
    update_record(directory, outputs=outputs)
    return Finished(text, outputs)
