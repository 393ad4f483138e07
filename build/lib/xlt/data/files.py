"""User files: JSON Lines, CSV, TSV, Parquet and text -> rows, and files of translation pairs -> records.

The format is chosen by suffix. Text formats are decoded line by line so that bad
encoding, bad JSON and bad rows are reported as ``file:line``; Parquet has no lines, so
its rows are reported by 0-based index.

- ``.jsonl``: one JSON object per line; blank lines are skipped (as pandas and datasets do).
- ``.csv``: RFC 4180 (quoted fields may contain commas, quotes and line breaks); header first.
- ``.tsv``: one record per line, header first, no quoting rules except that fields which
  are CSV-quoted as a whole are unquoted (see ``xlt.data.tsv``).
- ``.parquet``: any table readable by pyarrow.
- ``.txt``: one text per line, no header (the column is ``text``); a format for ``load_rows`` only.

``load_rows`` is the one loader: a ``files`` task (``xlt.tasks.files``) reads its rows with it and
validates them as examples (``xlt.data.rows.examples_from_rows``), also for files without a header
line (``columns=``) or in a format that their suffix does not name; ``read_parallel`` reads pairs.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xlt.data.errors import DataError
from xlt.data.records import ParallelPair
from xlt.data.rows import Row, RowSource, check_columns, pairs_from_rows
from xlt.data.textfile import read_lines
from xlt.data.tsv import read_tsv

FORMATS = (".jsonl", ".csv", ".tsv", ".parquet")
Loaded = tuple[RowSource, "int | None", "list[str] | None", "list[tuple[int, Row]]"]


def read_parallel(
    path: str | Path,
    *,
    src_field: str = "src",
    tgt_field: str = "tgt",
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    src_lang_field: str = "src_lang",
    tgt_lang_field: str = "tgt_lang",
    id_field: str = "id",
) -> list[ParallelPair]:
    """Read translation pairs from a file with a source and a target column (any format above).

    Languages come from ``src_lang`` / ``tgt_lang`` for the whole file, or else from the
    per-row ``src_lang_field`` / ``tgt_lang_field`` columns.
    """
    path = Path(path)
    source, header_pos, columns, rows = load_rows(path)
    if columns is not None:
        required = [src_field, tgt_field]
        required += [src_lang_field] if src_lang is None else []
        required += [tgt_lang_field] if tgt_lang is None else []
        check_columns(source, header_pos, columns, required)
    return pairs_from_rows(
        rows,
        source,
        src_field=src_field,
        tgt_field=tgt_field,
        src_lang=src_lang,
        tgt_lang=tgt_lang,
        src_lang_field=src_lang_field,
        tgt_lang_field=tgt_lang_field,
        id_field=id_field,
        id_prefix=path.stem,
    )


def load_rows(path: str | Path, *, format: str | None = None, columns: Sequence[str] | None = None) -> Loaded:
    """``(source, header position, columns or None for JSONL, rows)`` of any supported file.

    ``format`` (``tsv``, ``csv``, ``jsonl``, ``parquet``, ``txt``) overrides the suffix. ``columns``
    names the fields of a TSV or CSV file without a header line (its first line is then data).
    Each row is ``(line number, or row index for Parquet, mapping of column -> value)``.
    """
    path = Path(path)
    suffix = f".{format}" if format else path.suffix.lower()
    if suffix not in (*FORMATS, ".txt"):
        raise ValueError(f"{path}: unsupported file type {suffix!r}; valid: {', '.join(FORMATS)}, .txt")
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    if columns is not None and suffix not in (".tsv", ".csv"):
        raise ValueError(f"{path}: column names for a file without a header apply to .tsv and .csv, not {suffix}")
    if suffix == ".jsonl":
        return RowSource(str(path)), None, None, _jsonl_rows(path)
    if suffix == ".txt":
        # Blank lines stay rows: the line number of an empty text is its error, and a label file
        # beside it (``label_path``) is aligned line by line.
        return RowSource(str(path)), None, ["text"], [(n, {"text": line}) for n, line in
                                                      enumerate(read_lines(path), start=1)]
    if suffix == ".csv":
        header_line, header, rows = _csv_rows(path, columns)
        return RowSource(str(path)), header_line, header, rows
    if suffix == ".tsv":
        header, fields = read_tsv(path, columns)
        return (RowSource(str(path)), 1 if columns is None else None, header,
                [(n, dict(zip(header, row, strict=True))) for n, row in fields])
    names, records = _parquet_rows(path)
    return RowSource(str(path), unit="row"), None, names, list(enumerate(records))


def _jsonl_rows(path: Path) -> list[tuple[int, Row]]:
    rows: list[tuple[int, Row]] = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(
                path, number, f"not valid JSON ({e.msg} at column {e.colno}); expected one JSON object per line"
            ) from e
        if not isinstance(value, dict):
            raise DataError(path, number, f"expected a JSON object per line, got a JSON {type(value).__name__}")
        rows.append((number, value))
    return rows


def _csv_rows(path: Path, columns: Sequence[str] | None = None) -> tuple[int, list[str], list[tuple[int, Row]]]:
    # Lines are decoded first (bad bytes are reported by line); csv then re-joins quoted
    # fields that span lines, and ``line_num`` keeps the physical line numbers right.
    reader = csv.reader((line + "\n" for line in read_lines(path)), strict=True)
    header: list[str] | None = list(columns) if columns is not None else None
    header_line = 1
    rows: list[tuple[int, Row]] = []
    start = 1
    try:
        for cells in reader:
            number, start = start, reader.line_num + 1
            if not cells:
                continue
            if header is None:
                header, header_line = cells, number
                continue
            if len(cells) != len(header):
                raise DataError(
                    path,
                    number,
                    f"expected {len(header)} comma-separated fields ({', '.join(header)}), found {len(cells)}",
                )
            rows.append((number, dict(zip(header, cells, strict=True))))
    except csv.Error as e:
        raise DataError(
            path, start, f"malformed CSV ({e}); quote fields that contain commas, quotes or line breaks"
        ) from e
    if header is None:
        raise DataError(path, 1, "expected a header line of comma-separated column names, found an empty file")
    return header_line, header, rows


def _parquet_rows(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as e:
        raise DataError(path, None, f"not a readable Parquet file: {e}") from e
    return table.column_names, table.to_pylist()
