"""Which trained classifier a prediction uses: a path resolved to a checkpoint, and the spec that
inference actors rebuild it from (``xlt.inference.ClassifierSpec``).

A model path is any of:

- a checkpoint directory (``config.yaml``, ``model.pt``, ...: ``xlt.engine.checkpoints``);
- a fine-tuning run's ``output.dir``: its latest checkpoint, as the run records it;
- a co-training run's ``output.dir``: the latest fit of ``learner`` (``lm`` or ``emb``; ``lm`` if
  not given), i.e. the learner as the run last left it (finished or stopped), under ``learners/<learner>``;
- a sweep's directory (``jobs/sweep.py``): its best trial's run, as the sweep's ``results.json`` names
  it (``xlt.sweep.results.best_run``), and of a co-training trial the learner it scored with unless
  ``learner`` names the other;
- an export (``jobs/export.py``, ``Classifier.save_pretrained``): its ``local:`` encoder and its head.
"""

from __future__ import annotations

from pathlib import Path

from ..cotrain import LEARNERS
from ..cotrain.learner import LEARNERS_DIR, learner_run
from ..engine.checkpoints import MODEL_FILE, check_checkpoint, latest_checkpoint, left_out, read_config
from ..inference import ClassifierSpec
from ..models.classifier import CLASSIFIER_FILE, HEAD_FILE, exported
from ..sweep.results import best_run
from ..train import FinetuneConfig


def model_spec(path: str | Path, learner: str | None = None) -> tuple[str, ClassifierSpec]:
    """What ``path`` names (module docstring) and the spec inference actors rebuild it from."""
    if (Path(path) / CLASSIFIER_FILE).is_file():
        encoder, settings = exported(path)
        return str(path), ClassifierSpec(model=encoder, labels=tuple(settings["labels"]),
                                         state=str(Path(path) / HEAD_FILE), paired=settings["paired"],
                                         from_source=tuple(settings["from_source"]),
                                         normalize=settings.get("normalize", False),
                                         languages=tuple(settings.get("languages", ())))
    checkpoint = resolve_checkpoint(path, learner)
    return str(checkpoint), classifier_spec(checkpoint)


def best_trial_checkpoint(directory: str):
    """The latest checkpoint (a ``ray.train.Checkpoint``, local or on a store) of the best trial of the
    sweep in ``directory``: of a co-training trial, of the learner it scored with."""
    run, learner = best_run(directory)
    return latest_checkpoint(learner_run(run, learner) if learner else run)


def resolve_checkpoint(path: str | Path, learner: str | None = None) -> Path:
    """The checkpoint directory ``path`` names (module docstring); a ``FileNotFoundError`` in one
    line if it names none."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"model {path}: no such directory")
    if (path / MODEL_FILE).is_file():
        return check_checkpoint(path)
    if (swept := best_run(str(path))) is not None:
        run, scored_with = swept
        path, learner = Path(run), learner or scored_with
    if (path / LEARNERS_DIR).is_dir():
        learner = learner or LEARNERS[0]
        if learner not in LEARNERS:
            raise ValueError(f"model.learner={learner!r} is not valid: expected one of {', '.join(LEARNERS)}")
        path = Path(learner_run(str(path), learner))
    elif learner is not None:
        raise ValueError(f"model.learner={learner!r}: {path} is not a co-training run, whose learners it would name")
    try:
        return check_checkpoint(latest_checkpoint(path).path)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"model {path} is not a classifier: expected a checkpoint directory, a fine-tuning "
                                f"run's output.dir, a co-training run's, a sweep's directory or an export ({e})") from e


def classifier_spec(checkpoint: str | Path) -> ClassifierSpec:
    """How every inference actor rebuilds the checkpoint's classifier: its encoder config, labels,
    pair reading, weights file and the frozen names the weights leave out."""
    cfg = read_config(checkpoint, FinetuneConfig)
    return ClassifierSpec(model=cfg.model, labels=cfg.task.labels, state=str(Path(checkpoint) / MODEL_FILE),
                          paired=cfg.task.paired, from_source=left_out(checkpoint))
