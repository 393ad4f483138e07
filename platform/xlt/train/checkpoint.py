"""A fine-tuning checkpoint (``xlt.engine.checkpoints``'s layout, a ``FinetuneConfig`` inside) as a classifier."""

from __future__ import annotations

from pathlib import Path

from ..engine import TrainState, read_state
from ..engine.checkpoints import read_config, read_model
from ..inference import ClassifierSpec, build_classifier
from ..models import Classifier, load_trained
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
