"""SIB-200 rows for fine-tuning: the train rows of a setting, and the evaluation rows.

Train rows are one per labelled example (``id, text, label, lang, source_id``):

- zero-shot: the source language's train split;
- translate-train: plus, for every target language, the translations of exactly those source
  sentences (SIB-200 rows sharing the FLORES ``index_id``), labelled like their source;
- ``view_langs``: each source row carries its translations into these languages as
  full-translation views (``views`` / ``view_kinds`` / ``view_langs`` list columns, the layout
  of the augmentation UDFs); other rows carry empty lists, so the dataset has one schema.

Everything is read from the train split only; dev and test are only evaluated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence, TypeVar

from ..data import Example, read_sib200
from .config import DataSettings

T = TypeVar("T")
FULL_TRANSLATION = "full"  # the view kind of xlt.data.augment.FullTranslation


def evenly_spaced(items: Sequence[T], n: int) -> list[T]:
    """At most ``n`` items (0 = all), evenly spaced: published splits are often sorted by label."""
    if not n or len(items) <= n:
        return list(items)
    return list(items[:: len(items) // n][:n])


def example_row(example: Example) -> dict[str, Any]:
    return {"id": example.id, "text": example.text, "label": example.label, "lang": example.lang,
            "source_id": example.source_id}


def _translations(root: Path, lang: str, ids: set[str]) -> dict[str, Example]:
    """The train-split rows of ``lang`` whose ``source_id`` is in ``ids``, keyed by it."""
    return {ex.source_id: ex for ex in read_sib200(root, lang, "train") if ex.source_id in ids}


def train_rows(data: DataSettings, root: Path, target_langs: Sequence[str]) -> list[dict[str, Any]]:
    """The train rows of ``data.setting`` (see the module docstring)."""
    source = evenly_spaced(read_sib200(root, data.source_lang, "train"), data.max_examples)
    ids = {ex.source_id for ex in source}
    rows = [example_row(ex) for ex in source]
    if data.view_langs:
        by_lang = {lang: _translations(root, lang, ids) for lang in data.view_langs}
        for row in rows:
            found = [(lang, by_lang[lang][row["source_id"]]) for lang in data.view_langs
                     if row["source_id"] in by_lang[lang]]
            row["views"] = [ex.text for _, ex in found]
            row["view_kinds"] = [FULL_TRANSLATION] * len(found)
            row["view_langs"] = [lang for lang, _ in found]
    if data.setting == "translate-train":
        for lang in target_langs:
            for ex in _translations(root, lang, ids).values():
                row = example_row(ex)
                if data.view_langs:
                    row.update(views=[], view_kinds=[], view_langs=[])
                rows.append(row)
    return rows


def eval_rows(data: DataSettings, root: Path, langs: Sequence[str], split: str) -> list[dict[str, Any]]:
    """``text, label, lang`` of ``split`` for each language (at most ``max_examples`` each)."""
    return [{"text": ex.text, "label": ex.label, "lang": ex.lang}
            for lang in langs for ex in evenly_spaced(read_sib200(root, lang, split), data.max_examples)]
