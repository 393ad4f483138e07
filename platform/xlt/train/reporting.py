"""The one module that talks to ``ray.train.report`` and checkpoints (style.md, convention 5).

A checkpoint is a directory:

- ``model.pt``: the trained module's ``state_dict`` (fine-tuning: the classifier, encoder + head;
  never DDP-wrapped names)
- ``train_state.pt``: optimizer and LR-scheduler state
- ``state.json``: ``{"epoch": completed epochs, "global_step": optimizer steps so far}``
- ``config.yaml``: the run's config (``FinetuneConfig``: ``load_classifier`` rebuilds the model from it)

and whatever else the job writes beside them (``write_state`` + the ``write`` callback of
``report``: alignment pretraining exports its encoder there). The core functions take the
module, optimizer and config class explicitly, so every Ray Train job checkpoints through here;
``write_checkpoint`` / ``read_checkpoint`` / ``report_epoch`` are fine-tuning's forms of them.

Every epoch each worker calls ``report_epoch`` once (``ray.train.report`` is a barrier: all
ranks must call it equally often). Rank 0 alone writes the checkpoint and attaches the
metrics: under DDP every rank holds the same weights, and Ray Train V2 keeps only rank 0's
metrics anyway. Resuming (``latest_state``) reads ``ray.train.get_checkpoint()``, which Ray
Train V2 fills from ``<storage_path>/<name>/`` when a run with that name already reported
checkpoints there, or after a worker-group restart within one ``fit``.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch

from ..config import from_dict, read_yaml, save_config
from .config import FinetuneConfig

if TYPE_CHECKING:
    from ..models import Classifier
    from .loop import Training

MODEL_FILE, TRAIN_STATE_FILE, STATE_FILE, CONFIG_FILE = "model.pt", "train_state.pt", "state.json", "config.yaml"


@dataclass(frozen=True)
class TrainState:
    """What a checkpoint holds, loaded on CPU."""

    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    scheduler: dict[str, Any]
    epoch: int
    global_step: int
    config: Any  # the run's config, e.g. a FinetuneConfig


def checkpoint_name(epoch: int, global_step: int) -> str:
    return f"epoch{epoch:03d}-step{global_step:07d}"


def write_state(directory: str | Path, module: torch.nn.Module, optimizer: torch.optim.Optimizer,
                scheduler: torch.optim.lr_scheduler.LRScheduler, epoch: int, global_step: int, cfg: Any) -> Path:
    """Write one training state into ``directory`` (created if needed)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    torch.save(module.state_dict(), directory / MODEL_FILE)
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, directory / TRAIN_STATE_FILE)
    (directory / STATE_FILE).write_text(json.dumps({"epoch": epoch, "global_step": global_step}))
    save_config(cfg, directory / CONFIG_FILE)
    return directory


def write_checkpoint(directory: str | Path, training: Training, cfg: FinetuneConfig) -> Path:
    """Write a fine-tuning ``training``'s state into ``directory`` (created if needed)."""
    return write_state(directory, training.classifier, training.optimizer, training.scheduler, training.epoch,
                       training.global_step, cfg)


def read_checkpoint(directory: str | Path) -> TrainState:
    """Load a fine-tuning checkpoint directory written by ``write_checkpoint``."""
    return read_state(directory, FinetuneConfig)


def read_state(directory: str | Path, config_cls: type) -> TrainState:
    """Load a checkpoint directory written by ``write_state`` whose config is a ``config_cls``."""
    directory = Path(directory)
    missing = [f for f in (MODEL_FILE, TRAIN_STATE_FILE, STATE_FILE, CONFIG_FILE) if not (directory / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{directory} is not an xlt training checkpoint: missing {', '.join(missing)}")
    state = json.loads((directory / STATE_FILE).read_text())
    train_state = torch.load(directory / TRAIN_STATE_FILE, map_location="cpu", weights_only=True)
    return TrainState(
        model=torch.load(directory / MODEL_FILE, map_location="cpu", weights_only=True),
        optimizer=train_state["optimizer"],
        scheduler=train_state["scheduler"],
        epoch=int(state["epoch"]),
        global_step=int(state["global_step"]),
        config=from_dict(config_cls, read_yaml(directory / CONFIG_FILE)),
    )


def load_classifier(directory: str | Path) -> Classifier:
    """The fine-tuned classifier of a checkpoint directory (e.g. ``result.checkpoint.path``), in eval mode."""
    from ..models import Classifier, load_encoder

    state = read_checkpoint(directory)
    classifier = Classifier(load_encoder(state.config.model), state.config.task.labels,
                            paired=state.config.task.paired)
    classifier.load_state_dict(state.model)
    return classifier.eval()


def latest_state(config_cls: type = FinetuneConfig) -> TrainState | None:
    """The state of the checkpoint to resume from, or ``None`` for a fresh run (inside a Ray Train worker)."""
    import ray.train

    checkpoint = ray.train.get_checkpoint()
    if checkpoint is None:
        return None
    with checkpoint.as_directory() as directory:
        return read_state(directory, config_cls)


def report(metrics: dict[str, float], write: Callable[[Path], object] | None = None,
           checkpoint_dir_name: str | None = None) -> None:
    """Report metrics; with ``write`` (rank 0) also a checkpoint: ``write(directory)`` fills a fresh
    temporary directory, which Ray Train copies to ``<run dir>/<checkpoint_dir_name>``."""
    import ray.train

    if write is None:
        ray.train.report(metrics)
        return
    with tempfile.TemporaryDirectory(prefix="xlt-checkpoint-") as directory:
        write(Path(directory))
        ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(directory),
                         checkpoint_dir_name=checkpoint_dir_name)


def report_epoch(metrics: dict[str, float], training: Training | None, cfg: FinetuneConfig) -> None:
    """Report one fine-tuning epoch's metrics; with ``training`` (rank 0) also its checkpoint."""
    if training is None:
        report(metrics)
        return
    report(metrics, lambda directory: write_checkpoint(directory, training, cfg),
           checkpoint_name(training.epoch, training.global_step))
