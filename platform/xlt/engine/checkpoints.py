"""What a checkpoint is, and the one module that reports and reads them, through the run's
``RunContext`` (Ray Train's ``report`` and ``get_checkpoint`` in a Ray Train worker, the in-process
run's in process).

A checkpoint is a directory:

- ``model.pt``: the trained module's ``state_dict`` (fine-tuning: the classifier, encoder + head;
  never DDP-wrapped names) without its frozen parameters, which are its model source's
  (``xlt.models.trained_state``; ``read_model`` and ``TrainState.from_source`` name them)
- ``train_state.pt``: optimizer and LR-scheduler state, the fp16 gradient scaler's (``None``
  under fp32 and bf16), the weights of the loss's own modules (``Training.loss_modules``: the
  objectives' projection heads; ``None`` without any) and what the workload's training keeps besides
  (``Training.extra_state``: fine-tuning's WiSE-FT probe weights; ``None`` without)
- ``state.json``: ``{"epoch": completed epochs, "global_step": optimizer steps so far,
  "from_source": the names model.pt leaves out}``, and under ``optim.keep: best-dev`` ``"best": {"epoch",
  "score", "file"}`` (the best dev score so far, and which file holds its weights) and ``"stopped": true`` once
  patience ended the run
- ``best_model.pt``: under ``optim.keep: best-dev``, in a run still training after an epoch that was not the
  best, the best epoch's weights (as ``model.pt``), so that a resumed run still ends with them (a run that
  ended holds them in ``model.pt``)
- ``config.yaml``: the run's config (e.g. ``FinetuneConfig``: ``xlt.train.load_classifier`` rebuilds
  the model from it)
- ``metrics.json``: the metrics reported with it (what a fit hands on without asking Ray Train's
  controller: ``xlt.engine.fits``)

and whatever else the workload writes beside them (``Workload.write``: alignment pretraining exports
its encoder there).

Every epoch each worker calls ``report`` once (Ray Train's ``report`` is a barrier: all ranks must
call it equally often). Rank 0 alone writes the checkpoint and attaches the metrics: under DDP
every rank holds the same weights, and Ray Train V2 keeps only rank 0's metrics anyway. Resuming
(``latest_state``) reads the context's latest checkpoint, which Ray Train V2 fills from
``output.dir`` when a run already reported checkpoints there, or after a worker-group restart within
one ``fit``; an in-process context finds the latest the same way in the run directory. Outside a run, ``latest_checkpoint`` reads that record of a finished run directory
(a benchmark's unit, a co-training learner's last fit), rather than listing the directory.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch

from ..config import from_dict, read_yaml, save_config
from ..models import trained_state
from ..storage import is_uri, read_text
from .context import CHECKPOINTS_FILE, RunContext

from .training import BestEpoch, Training, TrainState

if TYPE_CHECKING:
    from ray.train import Checkpoint

MODEL_FILE, TRAIN_STATE_FILE, STATE_FILE, CONFIG_FILE = "model.pt", "train_state.pt", "state.json", "config.yaml"
METRICS_FILE = "metrics.json"
BEST_MODEL_FILE = "best_model.pt"  # optim.keep: best-dev, after an epoch that was not the best: the best's weights


def checkpoint_name(epoch: int, global_step: int) -> str:
    return f"epoch{epoch:03d}-step{global_step:07d}"


def write_state(directory: str | Path, training: Training, cfg: Any) -> Path:
    """Write ``training``'s state (module, optimizer, schedule, counters) and ``cfg`` into
    ``directory`` (created if needed)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model, from_source = trained_state(training.module)
    torch.save(model, directory / MODEL_FILE)
    scaler = training.scaler.state_dict() if training.scaler is not None else None
    loss_modules = training.loss_modules.state_dict() if training.loss_modules is not None else None
    torch.save({"optimizer": training.optimizer.state_dict(), "scheduler": training.scheduler.state_dict(),
                "scaler": scaler, "loss_modules": loss_modules, "extra": training.extra_state()}, directory / TRAIN_STATE_FILE)
    best, kept = training.best, None
    if best is not None:
        # A run that ended has put the best weights back into its module (model.pt); one still training keeps them
        # beside it unless this epoch is the best.
        ended = training.stopped or training.epoch >= cfg.optim.epochs
        kept = MODEL_FILE if ended or best.epoch == training.epoch else BEST_MODEL_FILE
        if kept == BEST_MODEL_FILE:
            torch.save(best.model, directory / BEST_MODEL_FILE)
    (directory / STATE_FILE).write_text(json.dumps({
        "epoch": training.epoch, "global_step": training.global_step, "from_source": from_source,
        **({"best": {"epoch": best.epoch, "score": best.score, "file": kept}} if best is not None else {}),
        **({"stopped": True} if training.stopped else {})}))
    save_config(cfg, directory / CONFIG_FILE)
    return directory


def read_state(directory: str | Path, config_cls: type) -> TrainState:
    """Load a checkpoint directory written by ``write_state`` whose config is a ``config_cls``."""
    directory = check_checkpoint(directory)
    state = json.loads((directory / STATE_FILE).read_text())
    train_state = torch.load(directory / TRAIN_STATE_FILE, map_location="cpu", weights_only=True)
    model, from_source = read_model(directory)
    best = None
    if "best" in state:
        kept = state["best"]["file"]
        weights = model if kept == MODEL_FILE else torch.load(directory / kept, map_location="cpu", weights_only=True)
        best = BestEpoch(int(state["best"]["epoch"]), float(state["best"]["score"]), weights)
    return TrainState(
        model=model,
        optimizer=train_state["optimizer"],
        scheduler=train_state["scheduler"],
        epoch=int(state["epoch"]),
        global_step=int(state["global_step"]),
        config=from_dict(config_cls, read_yaml(directory / CONFIG_FILE)),
        from_source=from_source,
        scaler=train_state.get("scaler"),  # absent in checkpoints written before fp16 training
        loss_modules=train_state.get("loss_modules"),  # absent in checkpoints written before projection heads
        # absent before workloads kept state; fine-tuning's WiSE-FT probe was saved as "anchor" before
        extra=train_state.get("extra", {"anchor": train_state["anchor"]} if train_state.get("anchor") else None),
        best=best,
        stopped=bool(state.get("stopped", False)),
    )


def check_checkpoint(directory: str | Path, resumable: bool = True) -> Path:
    """``directory`` if it holds a training checkpoint's files (a model alone, ``resumable=False``: no
    ``train_state.pt``, as ``keep_model`` copies it), else a ``FileNotFoundError`` naming what is missing."""
    directory = Path(directory)
    needed = (MODEL_FILE, *((TRAIN_STATE_FILE,) if resumable else ()), STATE_FILE, CONFIG_FILE)
    missing = [f for f in needed if not (directory / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{directory} is not an xlt training checkpoint: missing {', '.join(missing)}")
    return directory


def read_config(directory: str | Path, config_cls: type) -> Any:
    """The run config a checkpoint was written with (its ``config.yaml``), without loading tensors."""
    return from_dict(config_cls, read_yaml(check_checkpoint(directory, resumable=False) / CONFIG_FILE))


def keep_model(checkpoint: str | Path, directory: str | Path) -> None:
    """Copy local ``checkpoint``'s files but its optimizer state (``TRAIN_STATE_FILE``, the largest) and a best
    epoch's weights into ``directory``: what loading its model reads (``xlt.train.load_classifier``), not what
    resuming it needs."""
    from ..storage import staged

    with staged(directory) as out:
        for file in sorted(Path(checkpoint).iterdir()):
            if file.is_file() and file.name not in (TRAIN_STATE_FILE, BEST_MODEL_FILE):
                (out / file.name).write_bytes(file.read_bytes())


def left_out(directory: str | Path) -> tuple[str, ...]:
    """The frozen parameter names ``model.pt`` leaves out (its model source holds them)."""
    return tuple(json.loads((Path(directory) / STATE_FILE).read_text()).get("from_source", []))


def read_model(directory: str | Path) -> tuple[dict[str, torch.Tensor], tuple[str, ...]]:
    """A checkpoint's weights without its optimizer state: ``model.pt`` and the names it leaves out
    (``xlt.models.load_trained`` loads the pair into a module built from the run's model source)."""
    return torch.load(Path(directory) / MODEL_FILE, map_location="cpu", weights_only=True), left_out(directory)


def latest_state(context: RunContext, config_cls: type) -> TrainState | None:
    """The state of the checkpoint to resume from, or ``None`` for a fresh run."""
    checkpoint = context.latest_checkpoint()
    if checkpoint is None:
        return None
    with checkpoint.as_directory() as directory:
        return read_state(directory, config_cls)


def read_metrics(directory: str | Path) -> dict[str, float]:
    """The metrics reported with the checkpoint in ``directory``."""
    return json.loads(Path(directory, METRICS_FILE).read_text())


def final_metrics(result: Any) -> dict[str, float]:
    """The metrics a fit (a ``ray.train.Result``) ended with: those it reported or, where it reported none
    (the rerun of a finished run trains nothing), those its last checkpoint was written with."""
    if result.metrics:
        return dict(result.metrics)
    if result.checkpoint is None:
        raise FileNotFoundError("the run reported no metrics and recorded no checkpoint")
    with result.checkpoint.as_directory() as directory:
        return read_metrics(directory)


def report(context: RunContext, metrics: dict[str, float], write: Callable[[Path], object] | None = None,
           checkpoint_dir_name: str | None = None) -> None:
    """Report metrics to the run; with ``write`` (rank 0) also a checkpoint: ``write(directory)`` fills a
    fresh temporary directory, which the run copies to ``<run dir>/<checkpoint_dir_name>``."""
    from ray.train import Checkpoint

    if write is None:
        context.report(metrics)
        return
    with tempfile.TemporaryDirectory(prefix="xlt-checkpoint-") as directory:
        write(Path(directory))
        Path(directory, METRICS_FILE).write_text(json.dumps(metrics, default=float))
        context.report(metrics, Checkpoint.from_directory(directory), checkpoint_dir_name)


def latest_checkpoint(run: str | Path) -> Checkpoint:
    """The latest checkpoint of run directory ``run`` (local or URI), as the run records it: an
    in-process run in ``CHECKPOINTS_FILE``, a Ray Train run in its controller's snapshot
    (``ray.train.Result.from_path``). It is the one a rerun resumes from: a run's last epoch, a
    ``FitService`` run's last fit's last epoch. Raises ``FileNotFoundError`` if ``run`` records none."""
    from ray.train import Checkpoint, Result

    # A local path made absolute: Ray's storage reads a relative one as a URI without a scheme.
    run = str(run).rstrip("/") if is_uri(run) else str(Path(run).resolve())
    saved = read_text(f"{run}/{CHECKPOINTS_FILE}")
    if saved is not None:
        names = json.loads(saved)
        checkpoint = Checkpoint(f"{run}/{names[-1]}") if names else None
    else:
        try:
            checkpoint = Result.from_path(run).checkpoint
        except RuntimeError:  # no such directory, or no Ray Train run in it
            checkpoint = None
    if checkpoint is None:
        raise FileNotFoundError(f"{run} records no checkpoint: expected the output.dir of a run that reported one "
                                f"({CHECKPOINTS_FILE}, or Ray Train's checkpoint_manager_snapshot.json)")
    return checkpoint
