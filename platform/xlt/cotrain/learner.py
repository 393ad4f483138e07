"""One co-training learner's fit: a Ray Train run of the engine's fine-tuning on its labelled set.

``learner_trainer`` builds the ``TorchTrainer`` of learner ``name`` in iteration i: the
fine-tuning workload (``xlt.train``: encoder + head, AdamW, linear schedule, word embeddings
frozen if configured, CE + Σ λ·aux, K = ``optim.epochs`` epochs) on the learner's labelled rows,
with the learner's own ``scaling`` (workers, CPUs, GPUs, restarts), and an evaluation of every
language's evaluation rows after the last epoch, on rank 0. Its run directory is
``<output_dir>/learners/<name>-iteration<i>``; the fitted weights go to pseudo-labelling through
the object store (``Fit.state``: read from the run's last checkpoint, wherever its storage is).

Reading of Yu & Joty 2021, Alg. 1 ("fine-tune f on D" once per iteration): each fit starts again
from the pretrained encoder and a fresh head (seeded), on the original labelled data plus every
pseudo-label received so far — the paper's "merged into the original labeled data D ... to
re-train the model with" (§3.1). So a learner's state between iterations is its labelled set
alone, which is what the loop checkpoints. A job killed during a fit re-runs the same
iteration: the run of the same name continues from its latest epoch checkpoint (or, if it had
finished, returns its result), so a resumed job fits exactly what an uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import TRAIN_LOSS, OutputSettings
from ..engine.reporting import MODEL_FILE
from ..tasks import Task
from ..train.config import DataSettings, FinetuneConfig
from ..train.trainer import Resolved, build_trainer
from .config import LearnerConfig

if TYPE_CHECKING:
    from ray.train import Result
    from ray.train.torch import TorchTrainer

LEARNERS_DIR = "learners"


@dataclass(frozen=True)
class Fit:
    """What one fit hands on: its metrics (``train/loss`` of the last epoch, ``train/rows``, and
    ``<split>/acc|f1/<lang>`` etc. on the evaluation rows) and the path of its weights."""

    metrics: dict[str, float]
    state: Any  # an ObjectRef to the classifier's state dict (xlt.inference.ClassifierSpec.state)


def learner_config(name: str, cfg: LearnerConfig, task: Task, storage: str | Path, iteration: int,
                   rows: int) -> FinetuneConfig:
    """The fine-tuning config of learner ``name``'s fit in ``iteration`` on ``rows`` labelled rows."""
    return FinetuneConfig(task=task.config, model=cfg.model, objectives=cfg.objectives, optim=cfg.optim,
                          scaling=cfg.scaling, data=DataSettings(train_rows=rows),
                          output=OutputSettings(storage_path=str(Path(storage).resolve()),
                                                name=f"{name}-iteration{iteration}", num_to_keep=1),
                          eval_every_epoch=False, eval_test=False)


def learner_trainer(name: str, cfg: LearnerConfig, task: Task, rows: Sequence[Mapping[str, Any]],
                    evaluation: Sequence[Mapping[str, Any]], iteration: int, output_dir: str | Path,
                    callbacks: Sequence[Any] = ()) -> TorchTrainer:
    """The Ray Train run of one fit: ``rows`` (``id, text, text_pair, label, lang``) to train on,
    ``evaluation`` (``text, text_pair, label, lang``) evaluated after the last epoch; ``callbacks``:
    Ray Train ``UserCallback``s (experiment tracking)."""
    if not rows:
        raise ValueError(f"learner {name!r} has no labelled rows to fit on")
    config = learner_config(name, cfg, task, Path(output_dir, LEARNERS_DIR), iteration, len(rows))
    return build_trainer(Resolved(config, task, [dict(r) for r in rows], [dict(r) for r in evaluation], []),
                         callbacks=callbacks)


def fit_result(result: Result, rows: int, split: str) -> Fit:
    """A finished run's ``Fit``. The engine names the split it evaluates ``val``; co-training
    evaluates its ``data.eval_split`` there, named ``split`` (``val`` or ``test``)."""
    import ray
    import torch

    metrics = {(f"{split}/{key[len('val/'):]}" if key.startswith("val/") else key): value
               for key, value in result.metrics.items()}
    with result.checkpoint.as_directory() as directory:
        state = torch.load(Path(directory, MODEL_FILE), map_location="cpu", weights_only=True)
    return Fit({"train/loss": metrics[TRAIN_LOSS], "train/rows": float(rows),
                **{k: v for k, v in metrics.items() if k.startswith(f"{split}/")}}, ray.put(state))
