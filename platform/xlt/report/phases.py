"""Where a job's wall time goes: named phases, timed as they run, as a table at the end.

A phase is timed from the driver: ``with phases("fit lm", iteration=0): ...``. Phases may run
at the same time in different threads (the two learners' fits), so each row keeps its start
offset from the job's start as well as its duration; the rows of overlapping phases do not add
up to the job's wall time, the ``start s`` + ``seconds`` of the last row does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

logger = logging.getLogger(__name__)


class Phases:
    """Timed phases of one job run, in the order they finished."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self._rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @contextmanager
    def __call__(self, name: str, **labels: Any) -> Iterator[None]:
        """Time the ``with`` body as phase ``name`` (``labels``, e.g. ``iteration=0``, become
        columns); logged when it ends, recorded even when it raises (not logged then: the job's error says
        why, in one line)."""
        began, failed = time.perf_counter(), True
        try:
            yield
            failed = False
        finally:
            seconds = time.perf_counter() - began
            row = {**labels, "phase": name, "start s": began - self.start, "seconds": seconds}
            with self._lock:
                self._rows.append(row)
            where = " ".join(f"{key} {value}" for key, value in labels.items())
            if not failed:
                logger.info("%s%s: %.1f s", f"{where} " if where else "", name, seconds)

    def rows(self) -> list[dict[str, Any]]:
        """The phases so far, in order of start."""
        with self._lock:
            return sorted(self._rows, key=lambda row: row["start s"])

    def table(self) -> str:
        """The phases as a markdown table: labels first, then phase, start and duration in seconds."""
        from .tables import markdown_table

        times = ("start s", "seconds")
        # Seconds as plain numbers to the hundredth (markdown_table would write a start of 9e-06 in
        # scientific notation).
        rows = [{**row, **{key: f"{row[key]:.2f}" for key in times}} for row in self.rows()]
        labels = list(dict.fromkeys(key for row in rows for key in row if key not in ("phase", *times)))
        return markdown_table(rows, [*labels, "phase", *times])
