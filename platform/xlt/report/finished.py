"""``Finished``: what every job's ending returns (each job's room ends it: ``<room>.finish``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# A job's ending where its config scores nothing (``evals: []``): trained, checkpointed and exported all the same.
NOTHING_SCORED = ("Evaluation off (`evals: []`): nothing was scored. The model is trained, checkpointed and exported "
                  "(`output.export`) as with evaluation on.")


def dropped_rows(dropped: Mapping[str, int]) -> str:
    """The ending's line on rows left out for a label outside the task's (``task.unknown_labels: drop``; by
    ``<split>/<lang>``, ``Task.dropped``); empty when none were."""
    if not dropped:
        return ""
    counts = ", ".join(f"{where} {n}" + (" (their gold label only)" if where.startswith("pool/") else "")
                       for where, n in sorted(dropped.items()))
    return f"Rows left out for a label outside the task's (task.unknown_labels: drop): {counts}."


@dataclass(frozen=True)
class Finished:
    """A finished job's printout (markdown) and what it wrote where (``xlt.cli.epilogue``)."""

    text: str
    outputs: dict[str, str]
