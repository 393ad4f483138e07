"""xlt.storage on a local directory and on a real S3-compatible server (moto on 127.0.0.1)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from conftest import TINY_TASK
from xlt.config import from_dict
from xlt.cotrain.state import LoopState
from xlt.engine import read_run_config
from xlt.engine.runs import write_run_config
from xlt.storage import fetched, is_uri, join, read_text, staged
from xlt.train.config import FinetuneConfig


def test_join_keeps_a_uri_and_its_query_and_makes_local_paths_absolute(tmp_path, monkeypatch):
    assert join("s3://b/run/", "learners", "lm") == "s3://b/run/learners/lm"
    assert join("s3://b/run?scheme=http", "state.json") == "s3://b/run/state.json?scheme=http"
    monkeypatch.chdir(tmp_path)
    assert join("results/run", "state.json") == str(tmp_path / "results" / "run" / "state.json")
    assert is_uri("gs://b/x") and not is_uri("/tmp/x") and not is_uri(Path("rel"))


def test_local_staging_is_the_directory_itself(tmp_path):
    with staged(tmp_path / "out") as local:
        assert local == tmp_path / "out" and local.is_dir()
        (local / "a.txt").write_text("x")
    with fetched(tmp_path / "out" / "a.txt") as path:
        assert path == tmp_path / "out" / "a.txt"
    with fetched(tmp_path / "out" / "missing.txt") as path:
        assert path is None


@pytest.mark.cluster
def test_files_round_trip_through_the_store(s3):
    with staged(f"{s3}/run") as local:
        assert not is_uri(local)
        (local / "results.md").write_text("| a |\n")
        (local / "plots").mkdir()
        (local / "plots" / "p.png").write_bytes(b"\x89PNG")
        (local / "corpus.jsonl.gz").write_bytes(gzip.compress(b'{"text": "a"}\n'))
    assert read_text(f"{s3}/run/results.md") == "| a |\n"
    with fetched(f"{s3}/run/plots/p.png") as path:
        assert path.read_bytes() == b"\x89PNG"
    # The bytes as written, on the store too (not compressed again for their suffix, as pyarrow's default would).
    import pyarrow.fs

    fs, stored = pyarrow.fs.FileSystem.from_uri(f"{s3}/run/corpus.jsonl.gz")
    with fs.open_input_stream(stored, compression=None) as source:
        assert gzip.decompress(source.read()) == b'{"text": "a"}\n'
    with fetched(f"{s3}/run/corpus.jsonl.gz") as path:
        assert gzip.decompress(path.read_bytes()) == b'{"text": "a"}\n'
    assert read_text(f"{s3}/run/missing.md") is None


@pytest.mark.cluster
def test_nothing_reaches_the_store_from_a_block_that_raises(s3):
    with pytest.raises(RuntimeError), staged(f"{s3}/run") as local:
        (local / "half.json").write_text("{")
        raise RuntimeError("failed mid-write")
    assert read_text(f"{s3}/run/half.json") is None


@pytest.mark.cluster
def test_loop_state_and_run_config_live_on_the_store(s3):
    state = LoopState.fresh(("lm", "emb"))
    state.received["lm"].append({"id": "a", "label": "x", "iteration": 0, "selected_by": "emb"})
    state.iteration = 1
    assert LoopState.load(f"{s3}/cotrain") is None
    assert state.save(f"{s3}/cotrain") == f"{s3}/cotrain/state.json"
    assert LoopState.load(f"{s3}/cotrain") == state

    cfg = from_dict(FinetuneConfig, {"task": TINY_TASK, "output": {"dir": f"{s3}/runs/finetune"}})
    write_run_config(cfg)
    assert read_run_config(f"{s3}/runs/finetune", FinetuneConfig) == cfg
    assert read_run_config(f"{s3}/runs/other", FinetuneConfig) is None


def test_an_output_dir_is_a_directory_or_a_uri_with_a_path_and_splits_for_ray_train():
    from xlt.config import ConfigError
    from xlt.storage import OutputSettings, split

    assert split("results/finetune/x") == ("results/finetune", "x")
    assert split("run/") == (".", "run")
    assert split("s3://bucket/runs/x?endpoint_override=h:1") == ("s3://bucket/runs?endpoint_override=h:1", "x")
    out = OutputSettings("s3://bucket/x")
    assert (out.storage_path, out.name) == ("s3://bucket", "x")
    for bad in ("", "s3://", "s3://bucket", "s3://bucket/?scheme=http"):
        with pytest.raises(ConfigError, match="output.dir"):
            OutputSettings(bad)
