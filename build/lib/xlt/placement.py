"""Where work ran: one record for every job (``docs/cluster.md``).

A *placement* is the Ray node of each worker, by rank:

- ``placement/train``: a Ray Train worker group — a fine-tuning or pretraining run, a served fit
  (co-training's learners) — gathered from every rank (``worker_nodes``, a collective) and put in
  every epoch's report, so that a group restarted on other nodes reports where it trained next;
- ``placement/pseudo-label``: the actors of a pseudo-labelling pass, numbered in the order their
  first rows reached the driver (each predicted row carries its actor's ``worker`` and ``node``);
- ``placement/trial``: a sweep trial's own process.

Every job reports it the same way: under ``placement/<part>`` (``key``), as text — the node ids by
rank, joined by commas (``as_text``: a string, which Tune's loggers pass over where a list would be
taken for a histogram, and which MLflow and TensorBoard skip as not a number); ``nodes`` reads it
back. Outside Ray a worker's node is ``None``, written ``"None"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

Part = Literal["train", "pseudo-label", "trial"]
PREFIX = "placement/"


def key(part: Part) -> str:
    """The report key of ``part``'s placement (``placement/train``)."""
    return PREFIX + part


def as_text(nodes: Iterable[str | None]) -> str:
    """A placement as reported: the node of each rank, comma-separated."""
    return ",".join(str(node) for node in nodes)


def nodes(record: Mapping[str, Any], part: Part) -> list[str]:
    """The node of each rank of ``part`` in a report or results record (``[]`` if it has none)."""
    text = record.get(key(part))
    return text.split(",") if text else []


def this_node() -> str | None:
    """The id of the Ray node this process runs on (hex, as ``ray.nodes()`` lists it); ``None``
    outside Ray (e.g. a UDF called by hand)."""
    import ray

    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None


def this_worker() -> str | None:
    """The id of the Ray actor this process is (``None`` in a driver or a task): what tells two
    actors on one node apart."""
    import ray

    return ray.get_runtime_context().get_actor_id() if ray.is_initialized() else None


def worker_nodes() -> list[str | None]:
    """The node of every worker of this process group, by rank: one all-gather (this process's
    alone without a process group). A collective: every rank calls it."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return [this_node()]
    gathered: list[str | None] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, this_node())
    return gathered
