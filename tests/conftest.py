"""Shared fixtures: the offline data root, a 2-CPU Ray, and an MLflow store per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# A resolved task (labels and languages explicit) for configs whose data is never read.
TINY_TASK = {"type": "files", "name": "tiny", "path": "unused/{lang}/{split}.tsv", "labels": ["a", "b", "c"],
             "target_langs": ["de"]}
TINY_TASK_OVERRIDE = "task={type: files, name: tiny, path: 'unused/{lang}/{split}.tsv', labels: [a, b, c], target_langs: [de]}"


@pytest.fixture(autouse=True)
def mlflow_store(tmp_path_factory, monkeypatch) -> str:
    """Every test (and every job it starts) tracks into its own SQLite MLflow store, never the
    checkout's ``results/mlruns``; the store's URI."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlruns') / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The offline data root (``XLT_DATA_DIR``, else ``../shared/data``); skips if absent."""
    candidates = [os.environ.get("XLT_DATA_DIR"), REPO.parent / "shared" / "data"]
    for c in candidates:
        if c and Path(c, "sib200").is_dir():
            return Path(c)
    pytest.skip("offline data not found: set XLT_DATA_DIR or place ../shared/data beside the repo")


@pytest.fixture(scope="session")
def ray_cluster():
    """A local 2-CPU Ray for the whole session (the machine has 2 cores)."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()
