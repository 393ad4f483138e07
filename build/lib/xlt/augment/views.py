"""Rows in, views out: the columns every augmentation UDF adds (``VIEW_COLUMNS``) and their base, ``ViewAugmenter``.

A ``ViewAugmenter`` reads the example rows of a batch (``ExampleRow``), asks its ``generate`` for
the ``Views`` of each, and writes them back as list columns of the example's own row: one row
per example, so that a training batch always holds an example with all of its views. The
randomness of a row comes from its id alone (reading 6 of ``xlt.augment``); the words of each
text are segmented once per batch (``BatchWords``).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from xlt.data.ray_data import batch_column, column_names, object_array, optional_str
from xlt.text.words import Segmenter, Word

if TYPE_CHECKING:
    import pyarrow as pa

# The columns every augmentation UDF adds (one list per row, aligned across the first four):
#   views         list[str]        the view texts (the view of ``text``)
#   view_pairs    list[str] | None the view of ``text_pair`` for each view; None for single texts
#   view_kinds    list[str]        "full" | "partial" | "codeswitch"
#   view_langs    list[str]        the target language of each view
#   view_missing  list[str]        "<kind>:<lang>" for each view that could not be made
ALIGNED_VIEW_COLUMNS: tuple[str, ...] = ("views", "view_pairs", "view_kinds", "view_langs")  # what training reads
VIEW_COLUMNS: tuple[str, ...] = (*ALIGNED_VIEW_COLUMNS, "view_missing")


@dataclass(frozen=True)
class ExampleRow:
    id: str
    text: str
    text_pair: str | None
    lang: str
    source_id: str | None


@dataclass
class Views:
    """The views of one row, in order; ``missing`` lists the views that could not be made."""

    texts: list[str] = field(default_factory=list)
    pairs: list[str | None] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    langs: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def add(self, kind: str, lang: str, text: str | None, pair: str | None, is_pair: bool) -> None:
        if text is None or (is_pair and pair is None):
            self.missing.append(f"{kind}:{lang}")
            return
        self.texts.append(text)
        self.pairs.append(pair)
        self.kinds.append(kind)
        self.langs.append(lang)

    def extend(self, other: Views) -> None:
        for name in ("texts", "pairs", "kinds", "langs", "missing"):
            getattr(self, name).extend(getattr(other, name))


def _read_rows(batch: dict[str, np.ndarray] | pa.Table, source_lang: str) -> list[ExampleRow]:
    columns = {name: batch_column(batch, name) for name in ("id", "text", "text_pair", "lang", "source_id")}
    for name in ("id", "text", "lang"):
        if columns[name] is None:
            raise KeyError(f"the batch has no {name!r} column (columns: {', '.join(column_names(batch))}); "
                           "augmentation needs the Example columns id, text, lang (text_pair, source_id optional)")
    n = len(columns["text"])
    pairs = columns["text_pair"] or [None] * n
    source_ids = columns["source_id"] or [None] * n
    rows = []
    for i in range(n):
        row_id, text, lang = columns["id"][i], columns["text"][i], columns["lang"][i]
        if optional_str(row_id) is None or optional_str(text) is None:
            raise ValueError(f"row {i} of the batch has id={row_id!r}, text={text!r}; every row needs a string id "
                             "(the seed of its views) and a text")
        if lang != source_lang:
            raise ValueError(f"row {row_id!r} is in {lang!r} but the augmentation translates from "
                             f"source_lang={source_lang!r}; augment the source-language examples only")
        rows.append(ExampleRow(row_id, text, optional_str(pairs[i]), lang, optional_str(source_ids[i])))
    return rows


def _as_list(value: Any) -> list[Any]:
    # Existing view columns come back from Ray as numpy arrays (numpy batches) or lists (pyarrow).
    return [] if value is None or (isinstance(value, float) and np.isnan(value)) else list(value)


def _write_views(batch: dict[str, np.ndarray] | pa.Table, rows: list[ExampleRow],
                 produced: list[Views]) -> dict[str, np.ndarray] | pa.Table:
    """``batch`` plus the view columns; views already in the batch (an earlier UDF) come first."""
    import pyarrow as pa

    new = {
        "views": [v.texts for v in produced],
        "view_pairs": [v.pairs if row.text_pair is not None else None for row, v in zip(rows, produced)],
        "view_kinds": [v.kinds for v in produced],
        "view_langs": [v.langs for v in produced],
        "view_missing": [v.missing for v in produced],
    }
    for name, values in new.items():
        before = batch_column(batch, name)
        if before is not None:
            new[name] = [None if value is None else _as_list(old) + value for old, value in zip(before, values)]
    if isinstance(batch, pa.Table):
        for name, values in new.items():
            column = pa.array(values, type=pa.list_(pa.string()))
            if name in batch.column_names:
                batch = batch.set_column(batch.column_names.index(name), name, column)
            else:
                batch = batch.append_column(name, column)
        return batch
    return {**batch, **{name: object_array(values) for name, values in new.items()}}


class BatchWords:
    """The words of each text of one batch, per segmenter, computed once.

    Word segmentation is most of the augmentation's CPU time; code-switching and partial
    translation of a ``CrossLingualAugment`` share one segmenter, so each text is segmented
    once for both. Lives for one batch (no memory of earlier batches).
    """

    def __init__(self) -> None:
        self._memo: dict[tuple[int, str], list[Word]] = {}

    def __call__(self, segmenter: Segmenter, text: str) -> list[Word]:
        key = (id(segmenter), text)
        words = self._memo.get(key)
        if words is None:
            words = self._memo[key] = segmenter(text)
        return words


def _row_rng(seed: int, kind: str, row_id: str) -> random.Random:
    return random.Random(f"{seed}:{kind}:{row_id}")


def draw_languages(rng: random.Random, languages: Sequence[str], n: int) -> list[str]:
    """``n`` target languages: rounds of draws without replacement (reading 1 of ``xlt.augment``)."""
    out: list[str] = []
    while len(out) < n:
        out.extend(rng.sample(list(languages), min(len(languages), n - len(out))))
    return out


class ViewAugmenter(ABC):
    """Base of the augmentation UDFs: a Ray Data batch transform that adds ``VIEW_COLUMNS``.

    ``__call__`` takes a numpy-dict batch (``ds.take_batch()``, callable by hand in tests) or a
    ``pyarrow.Table`` (what ``build_augmented_dataset`` uses, so that input columns pass through
    Ray untouched: a numpy round trip turns an all-null column into float NaN) and returns the
    same kind, one row per input row. UDFs compose: views already in the batch are kept first.
    """

    kind: ClassVar[str]

    def __init__(self, languages: Sequence[str], n_views: int, seed: int, source_lang: str) -> None:
        self.languages, self.n_views, self.seed, self.source_lang = tuple(languages), n_views, seed, source_lang

    @abstractmethod
    def generate(self, rows: list[ExampleRow], words: BatchWords) -> list[Views]:
        """The views of ``rows`` (one ``Views`` per row); ``words`` segments texts once per batch."""

    def __call__(self, batch: dict[str, np.ndarray] | pa.Table) -> dict[str, np.ndarray] | pa.Table:
        rows = _read_rows(batch, self.source_lang)
        return _write_views(batch, rows, self.generate(rows, BatchWords()))

    def _plan(self, row: ExampleRow) -> tuple[random.Random, list[str]]:
        rng = _row_rng(self.seed, self.kind, row.id)
        return rng, draw_languages(rng, self.languages, self.n_views) if self.n_views else []
