"""A fine-tuning checkpoint (``xlt.engine.checkpoints``'s layout, a ``FinetuneConfig`` inside) as a classifier:
loaded (``load_classifier``), or as the entry a run's record names it by (``checkpoint_entry``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ..config import from_dict
from ..engine import TrainState, read_state
from ..engine.checkpoints import CONFIG_FILE, MODEL_FILE, STATE_FILE, read_config, read_model
from ..inference import ClassifierSpec, build_classifier
from ..models import Classifier, load_trained
from ..record import spec_entry
from ..storage import join, read_text
from .config import FinetuneConfig


def read_checkpoint(directory: str | Path) -> TrainState:
    """Load a fine-tuning checkpoint directory (e.g. ``result.checkpoint.path``)."""
    return read_state(directory, FinetuneConfig)


def load_classifier(directory: str | Path) -> Classifier:
    """The fine-tuned classifier of a checkpoint directory (e.g. ``result.checkpoint.path``, or a model kept
    without its optimizer state: ``xlt.engine.checkpoints.keep_model``), in eval mode."""
    cfg = read_config(directory, FinetuneConfig)
    classifier = build_classifier(ClassifierSpec(cfg.model, cfg.task.labels, paired=cfg.task.paired))
    load_trained(classifier, *read_model(directory))
    return classifier


def checkpoint_spec(checkpoint: str) -> ClassifierSpec:
    """How every inference actor rebuilds the classifier of ``checkpoint`` (local or URI): its encoder config,
    labels, pair reading, weights file and the frozen names the weights leave out."""
    text = read_text(join(checkpoint, CONFIG_FILE))
    if text is None:
        raise FileNotFoundError(f"{checkpoint} is not a checkpoint: no {CONFIG_FILE}")
    cfg = from_dict(FinetuneConfig, yaml.safe_load(text))
    state = json.loads(read_text(join(checkpoint, STATE_FILE)) or "{}")
    return ClassifierSpec(model=cfg.model, labels=cfg.task.labels, state=join(checkpoint, MODEL_FILE),
                          paired=cfg.task.paired, from_source=tuple(state.get("from_source", ())))


def checkpoint_entry(checkpoint: str, directory: str, **about: Any) -> dict[str, Any]:
    """The entry (``xlt.inference.entries``) of ``checkpoint``'s classifier in the record of ``directory``."""
    return spec_entry(checkpoint_spec(checkpoint), directory, **about)
