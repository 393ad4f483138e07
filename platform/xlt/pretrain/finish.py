"""How ``jobs/pretrain.py`` ends: the mixture and held-apart retrieval tables, ``results.json`` beside the
checkpoints, the last checkpoint's encoder (a ``local:`` model, local or on a store) tagged and recorded."""

from __future__ import annotations

from pathlib import Path
from dataclasses import asdict
from typing import Any

from ..engine import RESULTS_FILE, final_metrics, run_dir
from ..eval.evaluators import TATOEBA
from ..metrics import per_language
from ..record import update_record
from ..report import NOTHING_SCORED, Finished, markdown_table, write_results
from ..storage import join, staged
from ..tracking import Tracker
from .trainer import PreparedPretrain, encoder_dir


def finish_pretrain(prepared: PreparedPretrain, result: Any, tracker: Tracker) -> Finished:
    """A pretraining run's tables, ``results.json`` and its encoder; ``result``: the run's ``fit()``."""
    cfg = prepared.config
    metrics = final_metrics(result)
    tatoeba = [{"lang": lang, "accuracy": value} for lang, value in per_language(metrics, "val", TATOEBA).items()]
    directory = run_dir(cfg)
    encoder = encoder_dir(join(directory, Path(result.checkpoint.path).name))
    text = (f"## {cfg.output.name}: {cfg.recipe} ({', '.join(cfg.objective_names)}) from {cfg.model.source}\n\n"
            f"### Training pairs (q_i ∝ p_i^{cfg.data.alpha}; {prepared.mixture.excluded} excluded as evaluation "
            f"sentences; {cfg.data.train_rows} annotated)\n\n{markdown_table(prepared.mixture.rows())}\n")
    if tatoeba:
        text += f"\n### Tatoeba accuracy after epoch {cfg.optim.epochs} (held apart)\n\n{markdown_table(tatoeba)}\n"
    elif not cfg.evals:
        text += f"\n{NOTHING_SCORED}\n"
    with staged(directory) as out:  # beside the checkpoints, local or on a store
        tracker.artifacts(write_results(out / RESULTS_FILE, {
            "mixture": prepared.mixture.rows(), "excluded": prepared.mixture.excluded, "tatoeba": tatoeba,
            "metrics": metrics, "checkpoint": result.checkpoint.path, "encoder": str(encoder), "config": asdict(cfg)}))
    tracker.tag("xlt.checkpoint", result.checkpoint.path)
    tracker.tag("xlt.encoder", f"local:{encoder}")
    outputs = {"results": join(directory, RESULTS_FILE), "checkpoint": result.checkpoint.path, "encoder": str(encoder)}
    update_record(directory, outputs=outputs)
    return Finished(text, outputs | {"encoder": f"local:{encoder}"})
