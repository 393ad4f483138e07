"""Rows (mappings of column -> value) to validated records: shared by the file and HF readers.

A row source is anything that yields ``(position, row)``: a file with 1-based line numbers
or a table with 0-based row indices. Every check names the source and the position, says
what was found and what was expected, so that a bad row can be found and fixed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from xlt.data.errors import DataError
from xlt.text.languages import normalize_lang
from xlt.data.records import Example, ParallelPair

Row = Mapping[str, Any]


@dataclass(frozen=True)
class RowSource:
    """Where rows come from: ``name`` (a path or dataset name) and how positions are counted."""

    name: str
    unit: Literal["line", "row"] = "line"

    def error(self, pos: int | None, message: str) -> DataError:
        """A ``DataError`` at ``pos``: ``name:pos: ...`` for lines, ``name: row pos: ...`` for rows."""
        if pos is None or self.unit == "line":
            return DataError(self.name, pos, message)
        return DataError(self.name, None, f"row {pos}: {message}")


@dataclass(frozen=True)
class ExampleFields:
    """Which column holds which ``Example`` field. ``label=None`` reads unlabeled text. ``id`` is
    optional: rows without it get a generated id. (The language is the source's: the task layer
    keeps one language's rows of a file that holds several before they become examples.)
    """

    text: str = "text"
    label: str | None = "label"
    id: str = "id"
    text_pair: str | None = None
    source_id: str | None = None


def check_columns(source: RowSource, pos: int | None, columns: Collection[str], required: Iterable[str]) -> None:
    """Raise ``DataError`` at ``pos`` (e.g. the header line) naming the missing and the present columns.
    Columns named ``__x__`` are the readers' own (the task layer's ids and links), not the data's:
    they are not listed."""
    missing = [c for c in required if c not in columns]
    if missing:
        present = [c for c in columns if not (c.startswith("__") and c.endswith("__"))]
        raise source.error(
            pos,
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}; "
            f"columns present: {', '.join(map(repr, present)) or 'none'}",
        )


class Cells:
    """Typed access to the cells of one row, raising ``DataError`` at the row's position."""

    def __init__(self, source: RowSource, pos: int, row: Row) -> None:
        self.source, self.pos, self.row = source, pos, row

    def fail(self, message: str) -> DataError:
        return self.source.error(self.pos, message)

    def get(self, column: str) -> Any:
        if column not in self.row:
            check_columns(self.source, self.pos, list(self.row), [column])
        return self.row[column]

    def text(self, column: str) -> str:
        value = self.get(column)
        if not isinstance(value, str):
            raise self.fail(f"expected a string in column {column!r}, got {type(value).__name__} {value!r}")
        if not value.strip():
            raise self.fail(f"empty text in column {column!r}; expected a non-empty string")
        return value

    def label(self, column: str, valid: Collection[str] | None, optional: bool = False) -> str | None:
        value = self.get(column)
        if optional and value in (None, ""):
            return None
        if value is None:
            raise self.fail(f"no label in column {column!r}; every row of a labelled split needs one (unlabelled text is read as the task's pool split)")
        # bool is an int subclass; True as a label is almost surely a wrong column.
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.fail(
                f"expected a string or integer label in column {column!r}, got {type(value).__name__} {value!r}"
            )
        label = str(value)
        if not label.strip():
            raise self.fail(f"empty label in column {column!r}; every row of a labelled split needs one (unlabelled text is read as the task's pool split)")
        if valid is not None and label not in valid:
            raise self.fail(f"unknown label {label!r} in column {column!r}; valid labels: {', '.join(valid)} "
                            "(task.unknown_labels: drop leaves such rows out)")
        return label

    def lang(self, column: str) -> str:
        value = self.text(column)
        try:
            return normalize_lang(value)
        except ValueError as e:
            raise self.fail(f"column {column!r}: {e}") from e

    def optional_id(self, column: str | None) -> str | None:
        """A string or integer id, or ``None`` when the column is absent or the cell empty."""
        if column is None or column not in self.row or self.row[column] in (None, ""):
            return None
        value = self.row[column]
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.fail(f"expected a string or integer in column {column!r}, got {type(value).__name__} {value!r}")
        return str(value)


class _Ids:
    """Ids that are unique within a source: the row's own, else ``<prefix>/<index>``."""

    def __init__(self, source: RowSource, prefix: str) -> None:
        self.source, self.prefix = source, prefix
        self.first: dict[str, int] = {}

    def assign(self, cells: Cells, column: str | None, index: int) -> str:
        record_id = cells.optional_id(column) or f"{self.prefix}/{index}"
        if record_id in self.first:
            unit = self.source.unit
            first = self.first[record_id]
            raise cells.fail(f"duplicate id {record_id!r} (first at {unit} {first}); ids must be unique")
        self.first[record_id] = cells.pos
        return record_id


def examples_from_rows(
    rows: Iterable[tuple[int, Row]],
    source: RowSource,
    fields: ExampleFields,
    *,
    lang: str,
    labels: Collection[str] | None = None,
    id_prefix: str,
    optional_label: bool = False,
) -> list[Example]:
    """Validate ``rows`` (at least one: the task layer says which language and split had none) and
    build one ``Example`` each, in ``lang`` (any accepted code). ``labels``, when given, is the
    closed set of valid labels of ``fields.label``; ``optional_label``: a row without one has none (a pool's gold).
    """
    code = normalize_lang(lang)
    ids = _Ids(source, id_prefix)
    examples: list[Example] = []
    for index, (pos, row) in enumerate(rows):
        cells = Cells(source, pos, row)
        examples.append(
            Example(
                id=ids.assign(cells, fields.id, index),
                text=cells.text(fields.text),
                lang=code,
                label=cells.label(fields.label, labels, optional_label) if fields.label is not None else None,
                text_pair=cells.text(fields.text_pair) if fields.text_pair is not None else None,
                source_id=cells.optional_id(fields.source_id),
            )
        )
    return examples


def pairs_from_rows(
    rows: Iterable[tuple[int, Row]],
    source: RowSource,
    *,
    src_field: str,
    tgt_field: str,
    src_lang: str | None,
    tgt_lang: str | None,
    src_lang_field: str,
    tgt_lang_field: str,
    id_field: str,
    id_prefix: str,
) -> list[ParallelPair]:
    """Validate ``rows`` and build one ``ParallelPair`` each; languages fixed or per row."""
    fixed_src = normalize_lang(src_lang) if src_lang is not None else None
    fixed_tgt = normalize_lang(tgt_lang) if tgt_lang is not None else None
    ids = _Ids(source, id_prefix)
    pairs: list[ParallelPair] = []
    for index, (pos, row) in enumerate(rows):
        cells = Cells(source, pos, row)
        pairs.append(
            ParallelPair(
                id=ids.assign(cells, id_field, index),
                src=cells.text(src_field),
                tgt=cells.text(tgt_field),
                src_lang=fixed_src or cells.lang(src_lang_field),
                tgt_lang=fixed_tgt or cells.lang(tgt_lang_field),
            )
        )
    if not pairs:
        raise source.error(None, "no records found; expected at least one row")
    return pairs
