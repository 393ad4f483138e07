"""The one placement record (``xlt.placement``): how every job says where its workers ran."""

from __future__ import annotations

from xlt import placement


def test_a_placement_is_reported_as_text_and_read_back_by_rank():
    record = {placement.key("train"): placement.as_text(["n0", "n1", None]), "train/loss": 0.5}
    assert record["placement/train"] == "n0,n1,None"  # text: Tune's loggers and MLflow pass it over
    assert placement.nodes(record, "train") == ["n0", "n1", "None"]
    assert placement.nodes(record, "pseudo-label") == []  # a record without that part


def test_without_a_process_group_the_workers_are_this_process_alone():
    import ray

    # Another test of this session may have started Ray in this process: then this is its node.
    here = ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
    assert placement.this_node() == here and placement.this_worker() is None  # a driver is no actor
    assert placement.worker_nodes() == [here]
