"""Raw rows of one split and language -> validated ``Example`` records, for every task type.

The order is fixed and shared by ``files`` and ``hf``: keep the language's rows (a language
column), slice (``splits``), link (``link``), drop placeholder rows (``drop``), relabel
(``label_map``), then validate (``xlt.data.rows.examples_from_rows``: empty text or pair side,
unknown label, duplicate id, each named by file and line or row).

A slice is per language in every layout: ``test[:300]`` is the first 300 rows of each language,
whether each language has a file of its own or one file holds them all (``fields.lang``). Slicing
the whole file first would leave every language but the first with no rows in a one-file release
that lists the source language first. Slices and ``line`` links count positions among the
language's rows of the split as published, so the n-th row of one language stays linked to the
n-th row of another even when a placeholder is dropped from one of them.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from ..data.records import Example
from ..data.rows import ExampleFields, Row, RowSource, check_columns, examples_from_rows
from ..text.languages import normalize_lang

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from .config import SplitRef, TaskConfig

LINK_COLUMN = "__link__"  # the row column carrying the translation link of ``link: line``
ID_COLUMN = "__id__"  # the row column carrying the task-wide id: <task>/<lang>/<split>/<the row's id>


def to_examples(cfg: TaskConfig, source: RowSource, header_pos: int | None, columns: Collection[str] | None,
                rows: list[tuple[int, Row]], split: SplitRef, lang: str, labels: Sequence[str] | None,
                labelled: bool, one_language: bool, dropped: dict[str, int] | None = None) -> list[Example]:
    """Examples of ``lang`` from the rows of ``split``.

    ``labelled=False`` (the unlabelled pool) keeps a label where the data has one (gold, for
    scoring pseudo-labels only) and reads rows without. ``one_language``: every row is in
    ``lang`` (a file per language); otherwise ``fields.lang`` says which rows are. Under
    ``unknown_labels: drop``, the rows left out for a label outside ``labels`` (a pool row: its gold label
    only) are added to ``dropped`` under ``<split>/<lang>`` (``pool/<lang>``).
    """
    fields = cfg.fields
    # JSONL has no header (columns is None): a label counts as present when every row has one.
    present = columns if columns is not None else [fields.label] if rows and all(
        fields.label in row for _, row in rows) else []
    has_label = labelled or fields.label in present
    if columns is not None:
        lang_column = None if one_language else fields.lang
        required = [c for c in (fields.text, fields.text_pair, fields.label if labelled else None, lang_column)
                    if c is not None]
        check_columns(source, header_pos, columns, required)
    if not one_language:
        assert fields.lang is not None
        by_name = {name: code for code, name in cfg.languages.items()}
        rows = [(pos, row) for pos, row in rows if _row_lang(source, pos, row, fields.lang, by_name) == lang]
    total = len(rows)
    rows = rows[split.start:split.stop]
    first = range(total)[split.start:split.stop].start if rows else 0
    prefix = f"{cfg.name}/{lang}/{split.name}"
    if fields.id is None:  # the row's position among its language's, so slices of one split never share ids
        rows = [(pos, {**row, ID_COLUMN: f"{prefix}/{first + i}"}) for i, (pos, row) in enumerate(rows)]
    if cfg.link == "line":
        rows = [(pos, {**row, LINK_COLUMN: f"{split.name}#{first + i}"}) for i, (pos, row) in enumerate(rows)]
    if cfg.drop:
        rows = [(pos, row) for pos, row in rows if not _dropped(row, cfg)]
    if cfg.label_map and has_label:
        rows = [(pos, _relabel(source, pos, row, fields.label, cfg.label_map)) for pos, row in rows]
    unknown = 0
    if cfg.unknown_labels == "drop" and labels is not None and has_label:
        rows, unknown = _without_unknown_labels(rows, fields.label, set(labels), keep_rows=not labelled)
        if unknown:
            where = f"{split.name if labelled else 'pool'}/{lang}"
            if dropped is not None:  # a split read again (a pool too large to keep) counts once
                dropped[where] = unknown
            log.warning("task %s: %d %s of %s with a label outside the task's (task.unknown_labels: drop)", cfg.name,
                        unknown, "rows left out" if labelled else "pool rows without their gold label", where)
    if not rows:
        raise source.error(None, f"no rows for language {lang!r} in split {split} (after the language, the slice "
                                 f"and the dropped values {list(cfg.drop)}); expected at least one")
    # Ids are unique across the task's languages and splits (a co-training pool mixes languages whose
    # rows share the data's own id when they are translations): <task>/<lang>/<split>/<id or position>.
    if fields.id is not None:
        rows = [(pos, {**row, ID_COLUMN: f"{prefix}/{row[fields.id]}"} if row.get(fields.id) not in (None, "") else row)
                for pos, row in rows]
    link = {"id": fields.id, "line": LINK_COLUMN, "source_id": fields.source_id, "none": None}[cfg.link]
    example_fields = ExampleFields(text=fields.text, label=fields.label if has_label else None,
                                   id=ID_COLUMN, text_pair=fields.text_pair, source_id=link)
    return examples_from_rows(rows, source, example_fields, lang=lang, labels=labels if has_label else None,
                              id_prefix=prefix, optional_label=bool(unknown) and not labelled)


def _without_unknown_labels(rows: list[tuple[int, Row]], column: str, labels: set[str],
                            keep_rows: bool) -> tuple[list[tuple[int, Row]], int]:
    """``rows`` without those whose label is outside ``labels`` (``keep_rows``: with their label cleared instead),
    and how many they were."""
    unknown = [row.get(column) not in (None, "") and str(row[column]) not in labels for _, row in rows]
    if keep_rows:
        kept = [(pos, {**row, column: None}) if out else (pos, row) for (pos, row), out in zip(rows, unknown)]
    else:
        kept = [item for item, out in zip(rows, unknown) if not out]
    return kept, sum(unknown)


def _row_lang(source: RowSource, pos: int, row: Row, column: str, by_name: dict[str, str]) -> str:
    """The row's language: a name mapped in ``task.languages``, else a code normalised."""
    if column not in row:
        check_columns(source, pos, list(row), [column])
    if str(row[column]) in by_name:
        return by_name[str(row[column])]
    try:
        return normalize_lang(str(row[column]))
    except ValueError as e:
        raise source.error(pos, f"column {column!r}: {e}") from e


def _dropped(row: Row, cfg: TaskConfig) -> bool:
    fields = (cfg.fields.text, cfg.fields.text_pair)
    return any(isinstance(row.get(f), str) and row[f].strip() in cfg.drop for f in fields if f is not None)


def _relabel(source: RowSource, pos: int, row: Row, column: str, label_map: dict[str, str]) -> Row:
    value = row.get(column)
    if value is None or value == "":
        return row
    key = str(value)
    if key not in label_map:
        raise source.error(pos, f"label {key!r} in column {column!r} is not in task.label_map; "
                                f"mapped values: {', '.join(label_map)}")
    return {**row, column: label_map[key]}
