"""Which trained classifier a prediction uses: a path resolved to a checkpoint, and the spec that
inference actors rebuild it from (``xlt.inference.ClassifierSpec``).

A model path is any of:

- a checkpoint directory (``config.yaml``, ``model.pt``, ...: ``xlt.engine.checkpoints``);
- a fine-tuning run's ``output.dir``: its latest checkpoint, as the run records it;
- a co-training run's ``output.dir``: the latest fit of ``learner`` (``lm`` or ``emb``; ``lm`` if
  not given), i.e. the learner as the run last left it (finished or stopped), under ``learners/<learner>``
  (a probe learner: its last probe, ``xlt.cotrain.probe``); ``classifier``: the job's classifier
  (``xlt.cotrain.classifier``) at the iteration it keeps, the learners it combines as that iteration left them
  (a ``Combination``);
- a sweep's directory (``jobs/sweep.py``): its best trial's run, as the sweep's ``results.json`` names
  it (``xlt.sweep.results.best_run``), and of a co-training trial the learner it scored with unless
  ``learner`` names the other;
- an export (``jobs/export.py``, ``Classifier.save_pretrained``): its ``local:`` encoder and its head;
  a combination's export (``CombinedClassifier.save_pretrained``): each member's.
"""

from __future__ import annotations

import json

from dataclasses import dataclass
from pathlib import Path

from ..cotrain import LEARNERS
from ..cotrain.classifier import CLASSIFIER, kept_record, members
from ..cotrain.config import load_cotrain_config
from ..cotrain.learner import LEARNERS_DIR, fit_model, learner_run
from ..cotrain.probe import probe_path
from ..cotrain.state import STATE_FILE, LoopState
from ..engine.checkpoints import CONFIG_FILE, MODEL_FILE, check_checkpoint, latest_checkpoint, left_out, read_config
from ..inference import ClassifierSpec
from ..models.classifier import CLASSIFIER_FILE, COMBINATION_FILE, HEAD_FILE, exported
from ..sweep.results import best_run
from ..train import FinetuneConfig


@dataclass(frozen=True)
class Combination:
    """Classifiers predicting as one (``xlt.models.CombinedClassifier``): the specs of its members, by name, which
    the labellers load together; the rows' prediction is the product of the members' probabilities."""

    members: dict[str, ClassifierSpec]

    @property
    def labels(self) -> tuple[str, ...]:
        return next(iter(self.members.values())).labels

    @property
    def paired(self) -> bool:
        return next(iter(self.members.values())).paired

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages every member can predict (a centred member knows only its own)."""
        known = [set(spec.languages) for spec in self.members.values() if spec.languages]
        return tuple(sorted(set.intersection(*known))) if known else ()


def model_spec(path: str | Path, learner: str | None = None) -> tuple[str, ClassifierSpec | Combination]:
    """What ``path`` names (module docstring) and the spec inference actors rebuild it from."""
    if (Path(path) / COMBINATION_FILE).is_file():
        members = json.loads((Path(path) / COMBINATION_FILE).read_text(encoding="utf-8"))["members"]
        return str(path), Combination({name: export_spec(Path(path) / name) for name in members})
    if (Path(path) / CLASSIFIER_FILE).is_file():
        return str(path), export_spec(path)
    if learner == CLASSIFIER and (Path(path) / LEARNERS_DIR).is_dir():
        return str(path), run_classifier(Path(path))
    if learner in LEARNERS and (Path(path) / LEARNERS_DIR).is_dir() and (probe := probe_learner(Path(path), learner)):
        return probe
    checkpoint = resolve_checkpoint(path, learner)
    return str(checkpoint), classifier_spec(checkpoint)


def export_spec(path: str | Path) -> ClassifierSpec:
    """The spec of a classifier's export (``Classifier.save_pretrained``)."""
    encoder, settings = exported(path)
    return ClassifierSpec(model=encoder, labels=tuple(settings["labels"]), state=str(Path(path) / HEAD_FILE),
                          paired=settings["paired"], from_source=tuple(settings["from_source"]),
                          normalize=settings.get("normalize", False), languages=tuple(settings.get("languages", ())))


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
        return check_checkpoint(path, resumable=False)
    if (swept := best_run(str(path))) is not None:
        run, scored_with = swept
        path, learner = Path(run), learner or scored_with
    if (path / LEARNERS_DIR).is_dir():
        learner = learner or LEARNERS[0]
        if learner not in LEARNERS:
            raise ValueError(f"model.learner={learner!r} is not valid: expected one of "
                             f"{', '.join((*LEARNERS, CLASSIFIER))}")
        path = Path(learner_run(str(path), learner))
    elif learner is not None:
        raise ValueError(f"model.learner={learner!r}: {path} is not a co-training run, whose learners it would name")
    try:
        return check_checkpoint(latest_checkpoint(path).path, resumable=False)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"model {path} is not a classifier: expected a checkpoint directory, a fine-tuning "
                                f"run's output.dir, a co-training run's, a sweep's directory or an export ({e})") from e


def classifier_spec(checkpoint: str | Path) -> ClassifierSpec:
    """How every inference actor rebuilds the checkpoint's classifier: its encoder config, labels,
    pair reading, weights file and the frozen names the weights leave out."""
    cfg = read_config(checkpoint, FinetuneConfig)
    return ClassifierSpec(model=cfg.model, labels=cfg.task.labels, state=str(Path(checkpoint) / MODEL_FILE),
                          paired=cfg.task.paired, from_source=left_out(checkpoint))


def run_classifier(run: Path) -> ClassifierSpec | Combination:
    """A co-training run's classifier as the run last left it: at the iteration it keeps (``classifier.keep``), the
    one learner it is or the combination (the learners that iteration's record names: ``classifier.choose: dev``
    may have chosen one alone), each learner as that iteration left it."""
    state = LoopState.load(run)
    if state is None or not any(h["learner"] == CLASSIFIER for h in state.history):
        raise FileNotFoundError(f"{run} is a co-training run without a finished iteration ({run / STATE_FILE}): "
                                "it has no classifier yet")
    cfg = load_cotrain_config(run / CONFIG_FILE)
    record = kept_record(state.history, cfg.classifier.keep, cfg.task.source_lang)
    kept = int(record["iteration"])
    last = max(h["iteration"] for h in state.history if h["learner"] == CLASSIFIER)
    specs = {}
    for name in members(record):
        found = probe_learner(run, name, kept)
        specs[name] = found[1] if found is not None else classifier_spec(fit_model(str(run), name, kept, last).path)
    return next(iter(specs.values())) if len(specs) == 1 else Combination(specs)


def probe_learner(run: Path, name: str, iteration: int | None = None) -> tuple[str, ClassifierSpec] | None:
    """A co-training run's probe learner ``name`` as its probe of ``iteration`` (by default its last) left it
    (``xlt.cotrain.probe``), or ``None`` if the learner kept no probe (a fine-tuned learner keeps checkpoints)."""
    directory = learner_run(str(run), name)
    kept = sorted((int(p.stem.removeprefix("probe-iteration")) for p in Path(directory).glob("probe-iteration*.pt")))
    if not kept:
        return None
    at = kept[-1] if iteration is None else iteration
    cfg = load_cotrain_config(run / CONFIG_FILE)
    learner = cfg.learner(name)
    settings = json.loads(Path(probe_path(directory, at, ".json")).read_text(encoding="utf-8"))
    return probe_path(directory, at), ClassifierSpec(
        model=learner.model, labels=cfg.task.labels, state=probe_path(directory, at), paired=cfg.task.paired,
        from_source=tuple(settings["from_source"]), normalize=True, languages=tuple(settings["languages"]))
