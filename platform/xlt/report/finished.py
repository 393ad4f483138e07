"""``Finished``: what every job's ending returns (each job's room ends it: ``<room>.finish``)."""

from __future__ import annotations

from dataclasses import dataclass

# A job's ending where its config scores nothing (``evals: []``): trained, checkpointed and exported all the same.
NOTHING_SCORED = ("Evaluation off (`evals: []`): nothing was scored. The model is trained, checkpointed and exported "
                  "(`output.export`) as with evaluation on.")


@dataclass(frozen=True)
class Finished:
    """A finished job's printout (markdown) and what it wrote where (``xlt.cli.epilogue``)."""

    text: str
    outputs: dict[str, str]
