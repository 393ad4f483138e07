"""``Finished``: what every job's ending returns (each job's room ends it: ``<room>.finish``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finished:
    """A finished job's printout (markdown) and what it wrote where (``xlt.cli.epilogue``)."""

    text: str
    outputs: dict[str, str]
