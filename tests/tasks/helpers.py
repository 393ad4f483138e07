"""Shared helpers of the task tests: a ``TaskConfig`` from a mapping, and small files in ``tmp_path``."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from xlt.config import from_dict
from xlt.tasks import TaskConfig


def task_config(**entries: Any) -> TaskConfig:
    """``TaskConfig`` built as a job builds it (``from_dict`` with the ``task.`` prefix)."""
    return from_dict(TaskConfig, entries, prefix="task.")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_tsv(path: Path, header: list[str] | None, rows: list[list[str]]) -> Path:
    lines = ([header] if header is not None else []) + rows
    return write(path, "".join("\t".join(cells) + "\n" for cells in lines))


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    return write(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` in the format the suffix names (``.jsonl``, ``.csv``, ``.tsv``, ``.parquet``), as common tools
    write them: CSV quotes the fields that need it, TSV does not."""
    if path.suffix == ".jsonl":
        return write_jsonl(path, rows)
    if path.suffix == ".tsv":
        return write_tsv(path, list(rows[0]), [[str(value) for value in row.values()] for row in rows])
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    return path
