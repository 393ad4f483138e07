"""Real Ray clusters on this one machine, as a user runs them: ``ray start --head`` and
``ray start --address`` (one process group per node), jobs through ``ray job submit``.

Each node is ``ray start --block`` in a process group of its own, with free ports, and the head
with its own ``--temp-dir`` and auth token; stopping a node ends its group only, and killing it
(SIGKILL to the group: raylet, object store, workers) is a node failure as a preempted machine
shows it. ``ray stop`` is never used: it stops every Ray process on the machine (it matches by
process name), including the session's in-process ``ray_cluster`` and anything else running Ray
here. The test process itself never connects to these clusters; it talks to them through the
``ray`` CLI and, for what it polls, the dashboard's HTTP state API. A module shares one head
(``ray_cluster_head`` in a module fixture), each test adding the worker nodes it needs and stopping them
when it ends.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import REPO, free_ports

RAY = [sys.executable, "-m", "ray.scripts.scripts"]
TABLE_RULE = re.compile(r"^\|(-+\|)+$", re.MULTILINE)  # the |---|---| line of a markdown table  # the `ray` CLI of the interpreter running the tests
READY_TIMEOUT_S = 120
AGENT_TIMEOUT_S = 60


def ray_env(token: str) -> dict[str, str]:
    # A job's entrypoint is a shell command run with the head's environment: this PATH makes its
    # `python` the interpreter running the tests (on a cluster, the image's).
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "RAY_USAGE_STATS_ENABLED": "0",
           # Token auth on, with a token of this head's own: independent of ~/.ray/auth_token.
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token,
           # Stop at once on SIGTERM: no drain wait for serving traffic there is none of.
           "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
           # The GCS declares a killed node dead after 3 missed health checks a second apart
           # instead of 5 three seconds apart: the same failure path, 12 s sooner per lost node.
           "RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3"}
    for name in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "RAY_AUTH_TOKEN_PATH"):
        env.pop(name, None)  # talk to this head only
    return env


@dataclass
class Node:
    """One ``ray start --block`` process group."""

    name: str
    process: subprocess.Popen
    log: Path

    def stop(self) -> None:
        """SIGTERM ``ray start --block`` (it stops what it started), then SIGKILL whatever is left
        in its process group, which is this node's and nothing else's."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def kill(self) -> None:
        """The node fails: every process of it dies at once."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


@dataclass
class Head:
    address: str  # the dashboard's http://host:port, where the job API is
    gcs: str  # host:port that other nodes join
    temp_dir: Path
    token: str
    env: dict[str, str]  # for every `ray` command against this cluster
    node: Node | None = None
    workers: list[Node] = field(default_factory=list)
    _started: int = 0  # worker nodes started, stopped ones included: names are never reused

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

    def submit_command(self, env: dict, entrypoint: Sequence[str], submission_id: str,
                       working_dir: bool = True) -> list[str]:
        """``ray job submit`` of ``entrypoint`` with runtime env ``env`` (``--working-dir .``, the
        checkout uploaded, unless not ``working_dir``); run it from the repo root with ``env``."""
        upload = ["--working-dir", "."] if working_dir else []
        return [*RAY, "job", "submit", "--address", self.address, "--submission-id", submission_id, *upload,
                "--runtime-env-json", json.dumps(env), "--", *entrypoint]

    def submit(self, env: dict, entrypoint: Sequence[str], working_dir: bool = True,
               timeout: float = 600) -> tuple[str, subprocess.CompletedProcess]:
        """``ray job submit``, waiting for the job; returns its id and the CLI's output."""
        submission_id = f"xlt-test-{uuid.uuid4().hex[:8]}"
        proc = subprocess.run(self.submit_command(env, entrypoint, submission_id, working_dir), cwd=REPO,
                              env=self.env, capture_output=True, text=True, timeout=timeout)
        return submission_id, proc

    def add_workers(self, *specs: tuple[int, dict[str, float] | None]) -> list[Node]:
        """Worker nodes, one per ``(cpus, resources)``, each joined (listed alive) before the next
        starts: ``ray start`` of two nodes on one IP at once can time out finding its own node in
        the GCS. Each also offers a custom resource named after it (``workerN``: ``node_ids``)."""
        nodes = []
        for cpus, resources in specs:
            before = {n["node_id"] for n in self.alive()}
            self._started += 1
            name = f"worker{self._started}"
            manager, objects, agent_http, agent_grpc, runtime_env_agent, metrics = free_ports(6)
            command = [*RAY, "start", "--block", f"--address={self.gcs}", f"--num-cpus={cpus}", "--num-gpus=0",
                       "--node-ip-address=127.0.0.1", f"--node-manager-port={manager}",
                       f"--object-manager-port={objects}", f"--dashboard-agent-listen-port={agent_http}",
                       f"--dashboard-agent-grpc-port={agent_grpc}", f"--runtime-env-agent-port={runtime_env_agent}",
                       f"--metrics-export-port={metrics}", "--object-store-memory=300000000",
                       # A temp dir of its own: else every node on this machine logs into one
                       # /tmp/ray session, and each node's log monitor sends the driver every
                       # node's worker lines (each line printed once per node).
                       f"--temp-dir={self.temp_dir / name}",
                       f"--resources={json.dumps({name: 1, **(resources or {})})}"]
            node = _start(name, command, self.temp_dir / f"{name}.log", self.env)
            self.workers.append(node)
            nodes.append(node)
            deadline = time.monotonic() + READY_TIMEOUT_S
            while not {n["node_id"] for n in self.alive()} - before:
                if node.process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"worker node {name} did not join:\n{node.log.read_text()[-3000:]}")
                time.sleep(0.25)
        return nodes

    def stop_workers(self) -> None:
        """Stop every worker node started so far; the head stays, for the next test's nodes."""
        for node in self.workers:
            node.stop()

    def state(self, kind: str) -> list[dict]:
        """The cluster's alive ``kind`` (``nodes``, ``actors``) from Ray's state API, over HTTP: what
        ``ray list <kind> --filter state=ALIVE`` prints, without a process per call. The tests poll
        these every second or so while a job runs, and each ``ray`` CLI call costs 1.5 s of a core
        (benchmarks/test_time.md). An empty list while the API is not up yet."""
        query = urllib.parse.urlencode({"limit": 10000, "filter_keys": "state", "filter_predicates": "=",
                                        "filter_values": "ALIVE"})
        request = urllib.request.Request(f"{self.address}/api/v0/{kind}?{query}",
                                         headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.load(response)["data"]["result"]["result"]
        except (OSError, ValueError, KeyError):
            return []

    def alive(self) -> list[dict]:
        """The cluster's alive nodes (``node_id``, ``is_head_node``, ``resources_total``, ...)."""
        return self.state("nodes")

    def actors(self) -> list[dict]:
        """The cluster's alive actors (``class_name``, ``node_id``, ...)."""
        return self.state("actors")

    def node_ids(self) -> dict[str, str]:
        """Node name (``head``, ``worker1``, ...) -> Ray node id, for the alive nodes; waits until
        every node this head started that is still running is listed with its resources."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            ids = {}
            for node in self.alive():
                names = [r for r in node["resources_total"] if r == "head" or r.startswith("worker")]
                ids[names[0] if names else ("head" if node["is_head_node"] else node["node_id"])] = node["node_id"]
            running = {n.name for n in [self.node, *self.workers] if n is not None and n.process.poll() is None}
            if running <= ids.keys() or time.monotonic() > deadline:
                return ids
            time.sleep(1)


def _start(name: str, command: list[str], log: Path, env: dict[str, str]) -> Node:
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return Node(name, process, log)


def _wait_for_job_api(head: Head) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if head.node.process.poll() is not None:
            pytest.fail(f"ray start exited with {head.node.process.returncode}:\n{head.node.log.read_text()[-3000:]}")
        try:
            if head.get("/api/jobs/", head.token) == 200:
                return
        except OSError:
            pass  # not listening yet
        time.sleep(1)
    pytest.fail(f"no job API at {head.address} after {READY_TIMEOUT_S} s:\n{head.node.log.read_text()[-3000:]}")


def _job_agent_ready(head: Head) -> str | None:
    """``None`` once the head's job agent takes a submission (a no-op job); else why not.

    The job API answers before the head's dashboard agent has registered, and an agent that
    failed to start (a port of ours taken in between: CI's run of 2026-12-02 16:22 UTC) never
    registers: every submission then fails with "No available agent to submit job"."""
    deadline = time.monotonic() + AGENT_TIMEOUT_S
    while True:
        proc = head.ray("job", "submit", "--address", head.address, "--no-wait", "--", "true")
        if proc.returncode == 0:
            return None
        if time.monotonic() > deadline or "No available agent" not in proc.stdout + proc.stderr:
            agent_log = next(head.temp_dir.glob("session_*/logs/dashboard_agent.log"), None)
            return (f"no job agent on the head after {AGENT_TIMEOUT_S} s: {(proc.stdout + proc.stderr)[-1500:]}\n"
                    f"{agent_log}: {agent_log.read_text()[-1500:] if agent_log else 'absent'}")
        time.sleep(2)


def autoscaling_config(idle_timeout_minutes: float, max_workers: int = 3) -> dict:
    """cluster.yaml for Ray's fake multi-node provider, which starts each node the autoscaler
    launches as processes on this machine: the same node types, head with no CPU, each worker type
    shrunk to one CPU plus a custom resource named after the type (standing in for its GPU, which
    this machine lacks), so that a job asks for a node type by that resource."""
    import yaml

    cluster = yaml.safe_load((REPO / "cluster.yaml").read_text())
    workers = {name: {"resources": {"CPU": 1, name: 1}, "node_config": {},
                      "min_workers": spec.get("min_workers", 0), "max_workers": min(spec["max_workers"], max_workers)}
               for name, spec in cluster["available_node_types"].items() if name != cluster["head_node_type"]}
    return {"cluster_name": cluster["cluster_name"], "max_workers": max_workers,
            "upscaling_speed": cluster["upscaling_speed"], "idle_timeout_minutes": idle_timeout_minutes,
            "provider": {"type": "fake_multinode", "use_node_id_as_ip": True, "disable_node_updaters": True,
                         "disable_launch_config_check": True},
            "available_node_types": {**workers, "ray.head.default": {"resources": {"CPU": 0}, "node_config": {},
                                                                      "max_workers": 0}},
            "head_node_type": "ray.head.default", "auth": {}, "docker": {},
            **{key: [] for key in ("initialization_commands", "setup_commands", "head_setup_commands",
                                   "worker_setup_commands", "head_start_ray_commands", "worker_start_ray_commands",
                                   "cluster_synced_files", "rsync_exclude", "rsync_filter")},
            "file_mounts": {}, "file_mounts_sync_continuously": False}


@contextmanager
def ray_cluster_head(cpus: int, autoscaling: dict | None = None) -> Iterator[Head]:
    """A Ray head of ``cpus`` CPUs with the dashboard (the job server), and a custom resource
    ``head``; worker nodes join with ``Head.add_workers``, or, given an ``autoscaling`` config
    (``autoscaling_config``), the real autoscaler launches them through the fake multi-node
    provider. Every node is stopped on leaving. A head whose job agent never comes up is stopped
    and started again on other ports, once."""
    pytest.importorskip("ray.dashboard.optional_deps", reason="the Ray job server needs ray[default]")
    for attempt in (1, 2):
        head = _start_head(cpus, autoscaling)
        try:
            _wait_for_job_api(head)
            why = _job_agent_ready(head)
            if why is None:
                yield head
                return
            if attempt == 2:
                pytest.fail(why)
            print(f"restarting the head: {why}", file=sys.stderr)
        finally:
            for node in [*head.workers, head.node]:
                node.stop()
            _kill_leftovers(head.temp_dir)
            shutil.rmtree(head.temp_dir, ignore_errors=True)


def _start_head(cpus: int, autoscaling: dict | None) -> Head:
    temp_dir = Path(tempfile.mkdtemp(prefix="xlt-ray-"))  # short: Ray's socket paths must stay < 108 chars
    gcs, dashboard, client, agent_http, agent_grpc, runtime_env_agent, metrics = free_ports(7)
    token = secrets.token_hex(32)
    head = Head(f"http://127.0.0.1:{dashboard}", f"127.0.0.1:{gcs}", temp_dir, token, ray_env(token))
    command = [*RAY, "start", "--head", "--block", f"--num-cpus={cpus}", "--num-gpus=0", "--disable-usage-stats",
               "--node-ip-address=127.0.0.1", f"--port={gcs}", f"--temp-dir={temp_dir}",
               "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}",
               f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent_http}",
               f"--dashboard-agent-grpc-port={agent_grpc}", f"--runtime-env-agent-port={runtime_env_agent}",
               f"--metrics-export-port={metrics}", '--resources={"head": 1}']
    env = head.env
    if autoscaling is not None:
        config = {**autoscaling, "provider": {**autoscaling["provider"], "gcs_address": head.gcs}}
        (temp_dir / "autoscaling.yaml").write_text(json.dumps(config))
        command.append(f"--autoscaling-config={temp_dir / 'autoscaling.yaml'}")
        env = {**env, "RAY_FAKE_CLUSTER": "1", "AUTOSCALER_UPDATE_INTERVAL_S": "1"}
    head.node = _start("head", command, temp_dir / "ray_start.log", env)
    return head


def _kill_leftovers(temp_dir: Path) -> None:
    """Kill every process of this cluster still alive: those whose command line names its temp
    dir (nodes the autoscaler launched run outside the head's process group)."""
    import psutil

    for process in psutil.process_iter(["cmdline"]):
        try:
            if any(str(temp_dir) in part for part in process.info["cmdline"] or ()):
                process.kill()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass


def runtime_env(data_dir: Path, mlflow_uri: str | None = None) -> dict:
    """As cluster.yaml's submit command: PYTHONPATH is relative to the uploaded working dir; the
    MLflow store ``mlflow_uri``, by default the test's (else a job would track into results/ of the
    uploaded working dir)."""
    return {"env_vars": {"PYTHONPATH": "platform", "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1",
                         "MLFLOW_TRACKING_URI": mlflow_uri or os.environ["MLFLOW_TRACKING_URI"]}}


def assert_succeeded_with_a_table(head: Head, submission_id: str, proc: subprocess.CompletedProcess,
                                  expected: list[str]) -> None:
    """``ray job submit`` returned 0, ``ray job status`` says the job succeeded, and its logs hold a
    markdown table and each of ``expected``."""
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    status = head.ray("job", "status", "--address", head.address, submission_id)
    assert f"Job '{submission_id}' succeeded" in status.stdout + status.stderr
    logs = head.ray("job", "logs", "--address", head.address, submission_id).stdout
    assert TABLE_RULE.search(logs), logs[-3000:]
    for text in expected:
        assert text in logs, logs[-3000:]
