"""A trained classifier as a run's record names it (``xlt.record``): an *entry*, and the spec it rebuilds.

An entry is one of:

- ``{"spec": {...}}``: a ``ClassifierSpec`` (its encoder config, labels, the state file relative to the
  record, pair reading, the names the state leaves out, centring);
- ``{"export": DIR}``: a classifier's export (``Classifier.save_pretrained``);
- ``{"members": {name: entry}}``: classifiers predicting as one, the product of their probabilities
  (``Combination``);
- ``{"run": DIR, "classifier": NAME}``: a classifier another run's record names (a sweep's best trial,
  a study's unit); ``NAME`` ``None`` for that run's default.

Beside these keys an entry may say what the classifier is (``what``) and the scores its run recorded for it
(``metrics``), which a model card shows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..models import EncoderConfig
from ..models.classifier import CLASSIFIER_FILE, COMBINATION_FILE, HEAD_FILE, exported
from ..record import located, read_record
from .spec import ClassifierSpec, build_classifier


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
        known = [set(spec.known_languages) for spec in self.members.values() if spec.languages]
        return tuple(sorted(set.intersection(*known))) if known else ()


def entry_spec(entry: Mapping[str, Any], directory: str | Path) -> ClassifierSpec | Combination:
    """The spec an entry (not a ``run`` pointer) of the record in ``directory`` rebuilds."""
    if "spec" in entry:
        fields = dict(entry["spec"])
        return ClassifierSpec(**(fields | {"model": EncoderConfig(**fields["model"]),
                                           "state": located(directory, fields["state"])}))
    if "export" in entry:
        return path_spec(located(directory, entry["export"]))
    if "members" in entry:
        return Combination({name: entry_spec(member, directory) for name, member in entry["members"].items()})
    raise ValueError(f"{directory}: a classifier entry with none of spec, export, members or run: {sorted(entry)}")


def recorded(directory: str | Path, name: str | None = None) -> tuple[str, ClassifierSpec | Combination]:
    """The classifier ``name`` (default: the record's own default) of the run in ``directory``, as its record
    names it (``lookup``); returns where it is and its spec."""
    record, entry, where = lookup(directory, name)
    spec = entry_spec(entry, where)
    if "export" in entry:
        return located(where, entry["export"]), spec
    return (spec.state if isinstance(spec, ClassifierSpec) else where), spec


def lookup(directory: str | Path, name: str | None = None) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The record that holds classifier ``name`` (default: the record's own default) of the run in ``directory``,
    its entry and that record's directory, following a ``run`` entry into that run's record. A name the record
    lacks is looked up in the run its default points at (a sweep's best trial: its other learner)."""
    record = read_record(directory)
    classifiers, default = record["classifiers"], record["default"]
    if not classifiers:
        raise LookupError(f"{directory}: its {record['job']} run ({record['status']}) records no classifier")
    chosen = name or default
    if chosen is None:
        raise LookupError(f"{directory}: its {record['job']} run records {len(classifiers)} classifiers; name one "
                          f"(model.learner=NAME): {', '.join(classifiers)}")
    entry = classifiers.get(chosen)
    if entry is None and default is not None and "run" in classifiers[default]:
        return lookup(located(directory, classifiers[default]["run"]), chosen)
    if entry is None:
        raise LookupError(f"model.learner={chosen!r}: the {record['job']} run in {directory} records no such "
                          f"classifier; it records: {', '.join(classifiers)}")
    if "run" in entry:
        return lookup(located(directory, entry["run"]), entry.get("classifier"))
    return record, dict(entry), str(directory)


def build_model(spec: ClassifierSpec | Combination) -> Any:
    """The classifier ``spec`` rebuilds, on CPU, in eval mode: a ``Classifier``, or a ``CombinedClassifier`` of
    a ``Combination``'s members."""
    from ..models import CombinedClassifier

    if isinstance(spec, Combination):
        return CombinedClassifier({name: build_classifier(member) for name, member in spec.members.items()})
    return build_classifier(spec)


def path_spec(path: str | Path) -> ClassifierSpec | Combination:
    """The spec of an export (``Classifier.save_pretrained``, or ``CombinedClassifier.save_pretrained``: each
    member's)."""
    path = Path(path)
    if (path / COMBINATION_FILE).is_file():
        members = json.loads((path / COMBINATION_FILE).read_text(encoding="utf-8"))["members"]
        return Combination({name: path_spec(path / name) for name in members})
    encoder, settings = exported(path)
    return ClassifierSpec(model=encoder, labels=tuple(settings["labels"]), state=str(path / HEAD_FILE),
                          paired=settings["paired"], from_source=tuple(settings["from_source"]),
                          normalize=settings.get("normalize", False), languages=tuple(settings.get("languages", ())))


def is_export(path: str | Path) -> bool:
    """``path`` is a classifier's export (a directory that is a model path on its own)."""
    return (Path(path) / CLASSIFIER_FILE).is_file() or (Path(path) / COMBINATION_FILE).is_file()
