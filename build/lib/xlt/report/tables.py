"""Markdown tables for stdout and benchmark files; JSON results that name their command."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence


def _cell(value: Any, digits: int) -> str:
    if isinstance(value, float):
        if value and abs(value) < 10 ** (1 - digits):  # a learning rate of 6e-05 is not "0.0001"
            return f"{value:.2e}"
        return f"{value:.{digits}f}"
    return "–" if value is None else str(value)


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, digits: int = 3) -> str:
    """A GitHub markdown table; floats to ``digits`` places (in scientific notation when fewer than two
    significant digits would show), missing cells as an en dash."""
    if not rows:
        raise ValueError("markdown_table needs at least one row")
    columns = list(columns or rows[0].keys())
    cells = [[_cell(r.get(c), digits) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    line = lambda values: "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths)) + " |"  # noqa: E731
    return "\n".join([line(columns), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, cells)])


def command_line() -> str:
    """The command that is running, as a shell would accept it."""
    return shlex.join([Path(sys.executable).name, *sys.argv])


def write_results(path: str | Path, payload: Mapping[str, Any]) -> Path:
    """Write ``payload`` as JSON with the command and time that produced it; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"command": command_line(), "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **payload}
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    tmp.replace(path)  # never leave a half-written result behind
    return path
