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

import dataclasses
import json
import logging
from pathlib import Path

from ..inference import ClassifierSpec
from ..inference.entries import Combination, is_export, path_spec, recorded
from ..models.classifier import HEAD_FILE
from ..storage import is_uri, join, read_text, staged

ONNX_SOURCE = "source.json"  # beside a predict job's own ONNX export: the model it was written from
log = logging.getLogger(__name__)


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


def on_backend(spec: ClassifierSpec | Combination, checkpoint: str, backend: str,
               out: str) -> ClassifierSpec | Combination:
    """``spec`` with its encoder(s) running on ``backend`` (``model.backend``: ``torch``, ``onnx`` or ``onnx-int8``,
    ``xlt.models.onnx_backbone``): an export's own ONNX files where ``jobs/export.py --onnx`` wrote them, else files
    exported from the classifier into ``<out>/onnx/<name>/`` before any row is labelled (kept: a rerun of the same
    model reads them)."""
    if backend == "torch":
        return spec
    from ..models.onnx_backbone import FILES, ONNX_DIR, onnxruntime

    onnxruntime(f"model.backend={backend}")

    def one(name: str | None, member: ClassifierSpec) -> ClassifierSpec:
        export = own_export(member)
        if export is not None and (export / ONNX_DIR / FILES[backend]).is_file():
            return dataclasses.replace(member, onnx=str(export / ONNX_DIR / FILES[backend]))
        directory = join(out, ONNX_DIR, name or "model")
        source = json.dumps({"model": checkpoint, "member": name})
        if read_text(join(directory, ONNX_SOURCE)) != source:
            from ..inference.spec import build_classifier
            from ..models.onnx_backbone import export_onnx

            log.info("writing %s's encoder as ONNX to %s", checkpoint, directory)
            with staged(directory) as local:
                export_onnx(build_classifier(member).encoder, local)
                (local / ONNX_SOURCE).write_text(source, encoding="utf-8")
        return dataclasses.replace(member, onnx=join(directory, ONNX_DIR, FILES[backend]))

    if isinstance(spec, Combination):
        return Combination({name: one(name, member) for name, member in spec.members.items()})
    return one(None, spec)


def own_export(spec: ClassifierSpec) -> Path | None:
    """The export ``spec`` is (its encoder that export's own and its state the export's head), else ``None``: a
    checkpoint's spec over an export as its base model holds other weights than the export's ONNX files."""
    source = spec.model.source
    if not source.startswith("local:") or not isinstance(spec.state, str):
        return None
    directory = Path(source.removeprefix("local:"))
    return directory if is_export(directory) and Path(spec.state) == directory / HEAD_FILE else None


__all__ = ["Combination", "model_spec", "on_backend"]
