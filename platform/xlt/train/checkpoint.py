"""A fine-tuning checkpoint (``xlt.engine.checkpoints``'s layout, a ``FinetuneConfig`` inside) as a classifier."""

from __future__ import annotations

from pathlib import Path

from ..engine import TrainState, read_state
from ..models import Classifier, load_encoder, load_trained
from .config import FinetuneConfig


def read_checkpoint(directory: str | Path) -> TrainState:
    """Load a fine-tuning checkpoint directory (e.g. ``result.checkpoint.path``)."""
    return read_state(directory, FinetuneConfig)


def load_classifier(directory: str | Path) -> Classifier:
    """The fine-tuned classifier of a checkpoint directory (e.g. ``result.checkpoint.path``), in eval mode."""
    state = read_checkpoint(directory)
    classifier = Classifier(load_encoder(state.config.model), state.config.task.labels,
                            paired=state.config.task.paired)
    load_trained(classifier, state.model, state.from_source)
    return classifier.eval()
