"""Shared assertions for the data-layer tests."""

from __future__ import annotations

import re
from pathlib import Path


def at(path: str | Path, line: int | None = None) -> str:
    """Regex for the start of a ``DataError`` message: ``^<path>:<line>: `` (or ``^<path>: ``)."""
    return "^" + re.escape(f"{path}:{line}: " if line is not None else f"{path}: ")
