"""Which Ray node a piece of work ran on, so that results show where a multi-node job put its
learners' workers, pseudo-labelling actors and sweep trials (``docs/cluster.md``)."""

from __future__ import annotations


def this_node() -> str | None:
    """The id of the Ray node this process runs on (hex, as ``ray.nodes()`` lists it); ``None``
    outside Ray (e.g. a UDF called by hand)."""
    import ray

    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
