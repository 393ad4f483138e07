"""A fine-tuning checkpoint (``xlt.engine.checkpoints``'s layout, a ``FinetuneConfig`` inside) as a classifier."""

from __future__ import annotations

from pathlib import Path

from ..engine import TrainState, read_state
from ..inference import ClassifierSpec, build_classifier
from ..models import Classifier, load_trained
from .config import FinetuneConfig


def read_checkpoint(directory: str | Path) -> TrainState:
    """Load a fine-tuning checkpoint directory (e.g. ``result.checkpoint.path``)."""
    return read_state(directory, FinetuneConfig)


def load_classifier(directory: str | Path) -> Classifier:
    """The fine-tuned classifier of a checkpoint directory (e.g. ``result.checkpoint.path``), in eval mode."""
    state = read_checkpoint(directory)
    task = state.config.task
    classifier = build_classifier(ClassifierSpec(state.config.model, task.labels, paired=task.paired))
    load_trained(classifier, state.model, state.from_source)
    return classifier
