"""New languages at prediction (``inference.new_languages: centre-on-input``).

A classifier adapted by centring (``xlt.eval.adaptation``: each language's features minus that language's mean,
a target's the mean of its unlabelled pool) knows the languages it was adapted to and no other. A corpus in
another language is itself unlabelled text of that language, so the classifier centres it on the mean of its rows
in the input, as adaptation centred a target on its pool: centring only, the head unchanged.

- A first pass streams the input through the job's labellers, the rows of the new languages only, adding up each
  one's uncentred features (``Classifier.uncentred``) per centred classifier (each member of a combination
  centres its own): a sum and a count per language, whatever the corpus's size.
- A language with fewer than ``inference.new_language_rows`` rows is refused in one line: its mean would be noise.
- The means go to ``<output.dir>/input_means.json`` before any shard is written; a rerun (after a stop) reads them
  instead of a first pass, so that the shards it keeps and those it writes are centred alike.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..inference import ClassifierSpec
from ..inference.entries import Combination
from ..inference.labellers import Labellers
from ..storage import join, read_text, staged
from .inputs import Input

MEANS_FILE = "input_means.json"
CENTRE_ON_INPUT = "centre-on-input"
log = logging.getLogger(__name__)

Spec = ClassifierSpec | Combination


@dataclass(frozen=True)
class Centred:
    """The spec with the input's languages centred on their rows (``ClassifierSpec.input_means``), by language the
    rows each mean is over, and whether the means were read from an earlier run's ``input_means.json``."""

    spec: Spec
    rows: dict[str, int]
    reused: bool = False


def members(spec: Spec) -> dict[str | None, ClassifierSpec]:
    """The classifiers a spec labels with, by name (``None``: the only one)."""
    return dict(spec.members) if isinstance(spec, Combination) else {None: spec}


def new_languages(spec: Spec, langs: set[str]) -> list[str]:
    """The languages of ``langs`` some centred classifier of ``spec`` has no mean for."""
    return sorted(lang for lang in langs
                  if any(one.languages and lang not in one.known_languages for one in members(spec).values()))


def centre_on_input(spec: Spec, checkpoint: str, source: Input, labellers: Labellers, out: str, shard_rows: int,
                    min_rows: int) -> Centred:
    """``spec`` with every language of ``source`` that a centred classifier of it has no mean for centred on that
    language's rows (module docstring); ``labellers`` hold ``spec`` already."""
    where = join(out, MEANS_FILE)
    saved = read_text(where)
    if saved is not None:
        record = json.loads(saved)
        if record["model"] != checkpoint:
            raise ValueError(f"{where} holds the means of {record['model']}'s new languages, not {checkpoint}'s: "
                             "label with another model into another output.dir")
        means = {(m["member"], m["lang"]): (np.asarray(m["mean"], dtype=np.float32), m["rows"])
                 for m in record["means"]}
        log.info("new languages centred on the means %s holds (an earlier run's)", where)
        return Centred(with_means(spec, means), _rows(means), reused=True)
    sums = labellers.language_sums(_new_rows(spec, source, shard_rows))
    counts = {lang: n for by_lang in sums.values() for lang, (_, n) in by_lang.items()}
    few = {lang: n for lang, n in sorted(counts.items()) if n < min_rows}
    if few:
        raise ValueError(f"input {source.name}: too few rows to centre {', '.join(f'{l} ({n})' for l, n in few.items())} "
                         f"on (inference.new_language_rows: {min_rows}); a mean over so few rows is noise: label a "
                         "larger corpus of each language, or lower inference.new_language_rows")
    means = {(name, lang): ((total / n).astype(np.float32), n) for name, by_lang in sums.items()
             for lang, (total, n) in sorted(by_lang.items())}
    with staged(out) as local:
        (local / MEANS_FILE).write_text(json.dumps({
            "model": checkpoint,
            "means": [{"member": name, "lang": lang, "rows": n, "mean": mean.tolist()}
                      for (name, lang), (mean, n) in means.items()]}), encoding="utf-8")
    return Centred(with_means(spec, means), _rows(means))


def with_means(spec: Spec, means: dict[tuple[str | None, str], tuple[np.ndarray, int]]) -> Spec:
    """``spec`` with ``means`` (by classifier name and language) added to its classifiers' ``input_means``."""
    def added(name: str | None, one: ClassifierSpec) -> ClassifierSpec:
        extra = tuple((lang, tuple(mean.tolist())) for (member, lang), (mean, _) in means.items() if member == name)
        return dataclasses.replace(one, input_means=one.input_means + extra) if extra else one

    if isinstance(spec, Combination):
        return Combination({name: added(name, one) for name, one in spec.members.items()})
    return added(None, spec)


def _rows(means: dict[tuple[str | None, str], tuple[Any, int]]) -> dict[str, int]:
    return {lang: n for (_, lang), (_, n) in sorted(means.items(), key=lambda item: item[0][1])}


def _new_rows(spec: Spec, source: Input, shard_rows: int) -> Iterator[Any]:
    """The input's rows in a language some centred classifier has no mean for, as tables of up to ``shard_rows``."""
    import pyarrow as pa

    known: dict[str, bool] = {}
    rows: list[dict[str, Any]] = []
    for shard in source.shards(shard_rows):
        for row in shard.rows:
            if row["lang"] not in known:
                known[row["lang"]] = not new_languages(spec, {row["lang"]})
            if not known[row["lang"]]:
                rows.append(row)
                if len(rows) == shard_rows:
                    yield pa.Table.from_pylist(rows)
                    rows = []
    if rows:
        yield pa.Table.from_pylist(rows)
