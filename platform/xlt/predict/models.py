"""Which trained classifier a prediction or an export uses, and the spec inference actors rebuild it from
(``xlt.inference.ClassifierSpec``, or a ``Combination`` of them).

A model path is either

- a run's output directory: its record (``run.json``, ``xlt.record``) names the classifiers the run
  produced, and ``learner`` picks one (default: the record's own): a fine-tuning run's ``model``; a
  co-training run's ``lm``, ``emb`` or ``classifier`` (the job's classifier at the iteration it keeps); an
  evaluation's exported probes, by model name; a sweep's best trial (``best``, and the trial's own names); a
  study's units, by unit name;
- or an export (``jobs/export.py``, ``Classifier.save_pretrained``, ``CombinedClassifier.save_pretrained``).

Nothing here knows how any job lays out its directory: the record says where everything is.
"""

from __future__ import annotations

from pathlib import Path

from ..inference import ClassifierSpec
from ..inference.entries import Combination, is_export, path_spec, recorded
from ..storage import is_uri


def model_spec(path: str | Path, learner: str | None = None) -> tuple[str, ClassifierSpec | Combination]:
    """Where the classifier ``path`` names is (module docstring), and the spec inference actors rebuild it from;
    a path that is neither a run with a record nor an export is refused in one line."""
    if is_export(path):
        if learner is not None:
            raise ValueError(f"model.learner={learner!r}: {path} is an export, a single classifier")
        return str(path), path_spec(path)
    if not is_uri(path) and not Path(path).is_dir():
        raise FileNotFoundError(f"model {path}: no such directory")
    return recorded(path, learner)


__all__ = ["Combination", "model_spec"]
