"""Each shim of ``xlt.ray_internals`` against the installed Ray: what it returns, so that a Ray upgrade that
moves a private API fails here."""

from __future__ import annotations

import os

import pyarrow as pa

from xlt.ray_internals import autoscaler_max_resources, dataset_of_blocks, stored_block, train_report_logger


def test_a_dataset_of_stored_blocks_reads_them_in_order(ray_cluster):
    tables = [pa.table({"id": ["a", "b"], "text": ["x", "y"]}), pa.table({"id": ["c"], "text": ["z"]})]
    blocks, metadata = zip(*(stored_block(t) for t in tables))
    assert [m.num_rows for m in metadata] == [2, 1]
    ds = dataset_of_blocks(list(blocks), list(metadata))
    assert ds.count() == 3  # from the metadata, without a task
    assert [row["id"] for row in ds.iter_rows()] == ["a", "b", "c"]


def test_a_cluster_without_an_autoscaler_can_start_nothing_more(ray_cluster):
    assert autoscaler_max_resources() == {}


def test_the_train_report_logger_names_the_module_that_logs_each_report():
    path = train_report_logger()
    assert os.path.isfile(path), path
    with open(path, encoding="utf-8") as source:
        text = source.read()
    assert "Reporting training result" in text and "logging.getLogger(__file__)" in text
