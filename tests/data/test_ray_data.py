"""Records -> Ray Data. Kept to one test: a Ray session costs seconds."""

from __future__ import annotations

from pathlib import Path

from xlt.data.records import as_rows, to_ray_dataset
from xlt.data.sib200 import read_sib200
from xlt.data.tatoeba import read_tatoeba


def test_to_ray_dataset(ray_cluster, data_dir: Path) -> None:
    examples = read_sib200(data_dir, "sw", "dev")
    ds = to_ray_dataset(examples)
    assert ds.count() == 99
    assert set(ds.columns()) == {"id", "text", "lang", "label", "text_pair", "source_id"}
    rows = sorted(ds.take_all(), key=lambda r: r["id"])
    assert rows == sorted(as_rows(examples), key=lambda r: r["id"])

    pairs = to_ray_dataset(read_tatoeba(data_dir, "sw"))
    assert pairs.count() == 390
    assert pairs.take(1)[0]["src_lang"] == "sw"
