"""Records -> Ray Data, and the batch cells every UDF reads and writes. One test starts Ray: a session costs seconds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from presets import bitext, task
from xlt.data.ray_data import batch_column, column_names, object_array, optional_str, to_ray_dataset
from xlt.data.records import as_rows
from xlt.tasks import read_bitext


def test_to_ray_dataset_rejects_empty_before_importing_ray() -> None:
    with pytest.raises(ValueError, match="no records"):
        to_ray_dataset([])


def test_batch_cells_of_numpy_and_pyarrow_batches() -> None:
    numpy_batch = {"id": np.array(["a", "b"], dtype=object), "text_pair": np.array([np.nan, "x"], dtype=object)}
    arrow_batch = pa.table({"id": ["a", "b"], "text_pair": [None, "x"]})
    for batch in (numpy_batch, arrow_batch):
        assert batch_column(batch, "id") == ["a", "b"] and batch_column(batch, "label") is None
        assert [optional_str(x) for x in batch_column(batch, "text_pair")] == [None, "x"]
        assert column_names(batch) == ["id", "text_pair"]
    with pytest.raises(TypeError, match="batch_format='pyarrow'"):
        batch_column([{"id": "a"}], "id")  # type: ignore[arg-type]
    views = object_array([["v1", "v2"], ["w1", "w2"]])  # equal-length lists stay one list per row
    assert views.shape == (2,) and views[1] == ["w1", "w2"]


def test_to_ray_dataset(ray_cluster, data_dir: Path) -> None:
    examples = task("sib200", data_dir).examples("dev", "sw")
    ds = to_ray_dataset(examples)
    assert ds.count() == 99
    assert set(ds.columns()) == {"id", "text", "lang", "label", "text_pair", "source_id"}
    rows = sorted(ds.take_all(), key=lambda r: r["id"])
    assert rows == sorted(as_rows(examples), key=lambda r: r["id"])

    pairs = to_ray_dataset(read_bitext(bitext("tatoeba", langs=("sw",)), data_dir))
    assert pairs.count() == 390
    assert pairs.take(1)[0]["src_lang"] == "sw"
