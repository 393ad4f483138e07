"""The record types every reader produces, and their rows (``as_rows``; ``ray_data`` hands them to Ray Data).

One schema for every source: a classification ``Example`` and a
``ParallelPair``. Records are frozen so that an augmentation cannot edit an example in
place and silently change the data another view was built from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


def _require_text(record: object, name: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{type(record).__name__}.{name} must be a non-empty string, got {value!r}")


@dataclass(frozen=True)
class Example:
    """One text (or text pair) to classify.

    ``lang`` is a canonical code from ``xlt.text.languages.normalize_lang`` (``de``, ``zh``,
    ``zh-Hant``). ``source_id`` links a translation or augmentation to the example it came
    from; for SIB-200 it is the FLORES ``index_id``, shared by all translations of a sentence.
    ``label`` is ``None`` for unlabeled text.
    """

    id: str
    text: str
    lang: str
    label: str | None = None
    text_pair: str | None = None
    source_id: str | None = None

    def __post_init__(self) -> None:
        for name in ("id", "text", "lang"):
            _require_text(self, name, getattr(self, name))
        for name in ("label", "text_pair", "source_id"):
            value = getattr(self, name)
            if value is not None:
                _require_text(self, name, value)


@dataclass(frozen=True)
class ParallelPair:
    """A sentence ``src`` in ``src_lang`` and its translation ``tgt`` in ``tgt_lang``."""

    id: str
    src: str
    tgt: str
    src_lang: str
    tgt_lang: str

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            _require_text(self, field.name, getattr(self, field.name))


Record = Example | ParallelPair


def as_rows(records: Iterable[Record]) -> list[dict[str, Any]]:
    """Records -> plain dicts (one per record), the row format ``ray.data.from_items`` takes.

    All records must be of one type: a Ray Dataset has one schema, and mixing examples with
    pairs would give a table of mostly-null columns.
    """
    rows: list[dict[str, Any]] = []
    kind: type | None = None
    for i, record in enumerate(records):
        if not isinstance(record, (Example, ParallelPair)):
            raise TypeError(f"record {i} is {type(record).__name__}; expected Example or ParallelPair")
        if kind is None:
            kind = type(record)
        elif type(record) is not kind:
            raise TypeError(
                f"record {i} is {type(record).__name__} but record 0 is {kind.__name__}; "
                "a dataset holds one record type"
            )
        rows.append(dataclasses.asdict(record))
    return rows
