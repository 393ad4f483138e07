"""``ray job submit`` to a real Ray head, as to the cluster of cluster.yaml: every job in ``JOBS``
runs in smoke mode from the uploaded repo and must SUCCEED and print its results table.

The head is ``ray start --head --block`` in a process group of its own, with its own
``--temp-dir``, free ports and auth token; teardown ends that group only. ``ray stop`` is never
used: it stops every Ray process on the machine (it matches by process name), including the
session's in-process ``ray_cluster`` and anything else running Ray here. Everything talks to the
head through the ``ray`` CLI, as a user would: the test process itself never connects to Ray.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO

# Job script -> its smoke-mode arguments ({out}: a per-test output directory) and what its
# output must contain besides a markdown table. Adding a job is one line here.
JOBS = {
    "jobs/finetune.py": (["--smoke", "--set", "output.storage_path={out}", "--set", "output.name=submitted"],
                         ["| avg_target ", "| transfer_gap "]),
    "jobs/cotrain.py": (["--smoke", "--set", "output_dir={out}/cotrain"],
                        ["### Per iteration (test accuracy)", "| emb co-training (iteration 2) |"]),
}
RAY = [sys.executable, "-m", "ray.scripts.scripts"]  # the `ray` CLI of the interpreter running the tests
TABLE_RULE = re.compile(r"^\|(-+\|)+$", re.MULTILINE)  # the |---|---| line of a markdown table
READY_TIMEOUT_S = 120
JOB_TIMEOUT_S = 300


@dataclass(frozen=True)
class Head:
    address: str  # the dashboard's http://host:port, where the job API is
    temp_dir: Path
    token: str
    env: dict[str, str]  # for every `ray` command against this head

    def ray(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """``ray <args>`` from the repo root, as a user submits from their checkout."""
        return subprocess.run([*RAY, *args], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=timeout)

    def get(self, path: str, token: str | None = None) -> int:
        """HTTP status of GET ``path`` on the dashboard, with ``token`` as the bearer token."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        request = urllib.request.Request(self.address + path, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as e:
            return e.code


def _free_ports(n: int) -> list[int]:
    with ExitStack() as stack:  # hold all sockets open so the n ports differ
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def _env(token: str) -> dict[str, str]:
    # A job's entrypoint is a shell command run with the head's environment: this PATH makes its
    # `python` the interpreter running the tests (on a cluster, the image's).
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "RAY_USAGE_STATS_ENABLED": "0",
           # Token auth on, with a token of this head's own: independent of ~/.ray/auth_token.
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token,
           # Stop at once on SIGTERM: no drain wait for serving traffic there is none of.
           "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}
    for name in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "RAY_AUTH_TOKEN_PATH"):
        env.pop(name, None)  # talk to this head only
    return env


def _wait_for_job_api(head: Head, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"ray start exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if head.get("/api/jobs/", head.token) == 200:
                return
        except OSError:
            pass  # not listening yet
        time.sleep(1)
    pytest.fail(f"no job API at {head.address} after {READY_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM ``ray start --block`` (it stops what it started), then SIGKILL whatever is left in
    its process group, which is this head's and nothing else's."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@pytest.fixture(scope="module")
def ray_head():
    """A 2-CPU Ray head with the dashboard, where the job server lives."""
    pytest.importorskip("ray.dashboard.optional_deps", reason="the Ray job server needs ray[default]")
    temp_dir = Path(tempfile.mkdtemp(prefix="xlt-ray-"))  # short: Ray's socket paths must stay < 108 chars
    gcs, dashboard, client, agent_http, agent_grpc, runtime_env_agent, metrics = _free_ports(7)
    token = secrets.token_hex(32)
    head = Head(f"http://127.0.0.1:{dashboard}", temp_dir, token, _env(token))
    command = [*RAY, "start", "--head", "--block", "--num-cpus=2", "--num-gpus=0", "--disable-usage-stats",
               "--node-ip-address=127.0.0.1", f"--port={gcs}", f"--temp-dir={temp_dir}",
               "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}",
               f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent_http}",
               f"--dashboard-agent-grpc-port={agent_grpc}", f"--runtime-env-agent-port={runtime_env_agent}",
               f"--metrics-export-port={metrics}"]
    log = temp_dir / "ray_start.log"
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=head.env,
                                   start_new_session=True)
    try:
        _wait_for_job_api(head, process, log)
        yield head
    finally:
        _stop(process)
        shutil.rmtree(temp_dir, ignore_errors=True)


def runtime_env(data_dir: Path) -> dict:
    """As cluster.yaml's submit command: PYTHONPATH is relative to the uploaded working dir; the test's
    MLflow store (else a job would track into results/ of the uploaded working dir)."""
    return {"env_vars": {"PYTHONPATH": "platform", "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1",
                         "MLFLOW_TRACKING_URI": os.environ["MLFLOW_TRACKING_URI"]}}


def submit(head: Head, env: dict, entrypoint: list[str]) -> tuple[str, subprocess.CompletedProcess]:
    """``ray job submit --working-dir .``, waiting for the job; returns its id and the CLI's output."""
    submission_id = f"xlt-test-{uuid.uuid4().hex[:8]}"
    proc = head.ray("job", "submit", "--address", head.address, "--submission-id", submission_id,
                    "--working-dir", ".", "--runtime-env-json", json.dumps(env), "--", *entrypoint,
                    timeout=JOB_TIMEOUT_S)
    return submission_id, proc


def test_job_api_needs_the_token(ray_head):
    assert ray_head.get("/api/jobs/") == 401
    assert ray_head.get("/api/jobs/", ray_head.token) == 200


@pytest.mark.parametrize("script", list(JOBS))
def test_job_succeeds_and_prints_its_table(ray_head, data_dir, tmp_path, script):
    args, expected = JOBS[script]
    submission_id, proc = submit(ray_head, runtime_env(data_dir),
                                 ["python", script, *(a.format(out=tmp_path) for a in args)])
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"

    status = ray_head.ray("job", "status", "--address", ray_head.address, submission_id)
    assert f"Job '{submission_id}' succeeded" in status.stdout + status.stderr
    logs = ray_head.ray("job", "logs", "--address", ray_head.address, submission_id).stdout
    assert TABLE_RULE.search(logs), logs[-3000:]
    for text in expected:
        assert text in logs, logs[-3000:]


def test_job_runs_the_uploaded_code(ray_head, data_dir):
    """The upload leaves out .git and .venv (Ray's default excludes) and results/ (the repo's
    .gitignore); PYTHONPATH=platform makes driver and workers import the uploaded xlt, not the
    installed one, while the stdlib ``platform`` still wins over the platform/ directory."""
    probe = ("import json, platform, ray, xlt; ray.init(); "
             "f = ray.remote(lambda: __import__('xlt').__file__); "
             "print('PROBE', json.dumps([xlt.__file__, ray.get(f.remote()), platform.__file__]))")
    _, proc = submit(ray_head, runtime_env(data_dir), ["python", "-c", probe])
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    driver_xlt, worker_xlt, stdlib_platform = json.loads(proc.stdout.split("PROBE ", 1)[1].splitlines()[0])

    uploads = ray_head.temp_dir.glob("session_*/runtime_resources/working_dir_files/*/")
    (uploaded,) = [d for d in uploads if driver_xlt.startswith(f"{d}/")]
    assert worker_xlt == driver_xlt == str(uploaded / "platform" / "xlt" / "__init__.py")
    assert not stdlib_platform.startswith(str(uploaded))
    assert (uploaded / "jobs" / "finetune.py").is_file() and (uploaded / "cluster.yaml").is_file()
    for left_out in (".venv", ".git", "results"):
        assert not (uploaded / left_out).exists(), f"{left_out}/ was uploaded"
