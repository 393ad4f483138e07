"""Shared helpers of the task tests: a ``TaskConfig`` from a mapping, and small files in ``tmp_path``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
