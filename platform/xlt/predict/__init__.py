"""Batch prediction with a trained classifier over any input (``jobs/predict.py``).

- ``config``: ``PredictConfig`` (model, input, output, format, shard size, the inference actor pool)
- ``models``: a model path resolved to a checkpoint (a checkpoint, a fine-tuning run, a co-training
  run's learner) and the ``ClassifierSpec`` the actors rebuild it from
- ``inputs``: a user's file or a task's split as validated rows
- ``writer``: shards written by Ray Data's writers, each complete or absent (resumable)
- ``export``: a model as a directory sentence-transformers and ``Classifier.from_pretrained`` load,
  with a model card (``jobs/export.py``)

``prepare`` does everything that can fail on bad input before Ray starts; ``predict`` labels and writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .export import export_checkpoint, model_card
from .config import ModelRef, PredictConfig, PredictData, load_predict_config
from .inputs import InputConfig, read_input
from .models import classifier_spec, model_spec, resolve_checkpoint
from .writer import Written, write_shards


@dataclass(frozen=True)
class Prepared:
    config: PredictConfig
    checkpoint: str
    spec: Any  # xlt.inference.ClassifierSpec
    rows: list[dict[str, Any]]


def prepare(cfg: PredictConfig) -> Prepared:
    """The model resolved and every input row read and checked, before Ray starts."""
    checkpoint, spec = model_spec(cfg.model.path, cfg.model.learner)
    rows, paired = read_input(cfg.input, cfg.data.data_dir)
    if paired != spec.paired:
        reads = "sentence pairs" if spec.paired else "single texts"
        given = "pairs" if paired else "single texts (set input.pair_field for a file's second text)"
        raise ValueError(f"model {checkpoint} reads {reads}; input {cfg.input.path or cfg.input.split} holds {given}")
    return Prepared(cfg, checkpoint, spec, rows)


def predict(prepared: Prepared, done: Callable[[int], None] = lambda n: None) -> Written:
    cfg = prepared.config
    return write_shards(prepared.rows, prepared.spec, cfg.output.dir, cfg.format, cfg.shard_rows, cfg.inference, done)


__all__ = ["InputConfig", "ModelRef", "PredictConfig", "PredictData", "Prepared", "Written", "classifier_spec", "export_checkpoint", "model_card",
           "load_predict_config", "model_spec", "predict", "prepare", "read_input", "resolve_checkpoint", "write_shards"]
