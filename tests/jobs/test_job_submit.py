"""``ray job submit`` to a real Ray head, as to the cluster of cluster.yaml: fine-tuning and
co-training run in smoke mode from the uploaded repo and must SUCCEED, print their results tables
and leave what the same jobs leave locally (fine-tuning's SIB-200 smoke run, co-training on
sentence pairs: these runs are the ones tests/jobs/test_finetune.py and test_cotrain.py would
otherwise start themselves). (The head and its nodes: ``cluster.harness``.)
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from background import started
from cluster.harness import assert_succeeded_with_a_table, ray_cluster_head, runtime_env
from conftest import REPO
from jobs.test_cotrain import assert_pairs_exchanged
from jobs.test_finetune import SMOKE_ARGS, assert_a_smoke_run

pytestmark = pytest.mark.ray

JOB_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def ray_head():
    """A 2-CPU Ray head with the dashboard, where the job server lives."""
    with ray_cluster_head(cpus=2) as head:
        yield head


def test_job_api_needs_the_token(ray_head):
    assert ray_head.get("/api/jobs/") == 401
    assert ray_head.get("/api/jobs/", ray_head.token) == 200


def test_a_finetuning_job_succeeds_with_its_table_results_and_tracking(ray_head, data_dir, tmp_path, mlflow_store):
    """The SIB-200 smoke run of tests/jobs/test_finetune.py, submitted."""
    args = ["--config", "configs/finetune_sib200.yaml", *SMOKE_ARGS, "--set", f"output.dir={tmp_path / 'smoke'}"]
    submission_id, proc = ray_head.submit(runtime_env(data_dir), ["python", "jobs/finetune.py", *args],
                                          timeout=JOB_TIMEOUT_S)
    assert_succeeded_with_a_table(ray_head, submission_id, proc, ["| avg_target ", "| transfer_gap "])
    # ``ray job submit`` prints the driver's stdout and stderr as one stream.
    assert_a_smoke_run(tmp_path / "smoke", "sib200", proc.stdout, proc.stdout, mlflow_store)


@dataclass(frozen=True)
class Submitted:
    submission_id: str
    out: Path
    finished: Callable[[], subprocess.CompletedProcess]


@pytest.fixture(scope="module", autouse=True)
def cotraining_on_pairs(ray_head, data_dir, tmp_path_factory) -> Iterator[Submitted]:
    """One exchange round on XNLI, submitted with the module, so that it runs beside the fine-tuning
    job (a cluster runs the jobs submitted to it side by side; both smoke jobs train in their
    drivers); its test waits for it."""
    out = tmp_path_factory.mktemp("cotrain")
    args = ["--smoke", "--config", "configs/cotrain_xnli.yaml", "--set", "task.target_langs=[de, zh]",
            "--set", "iterations=1", "--set", f"output.dir={out}"]
    # Its own MLflow store: the per-test one (conftest's mlflow_store) is not set up yet for a module's fixture.
    env = runtime_env(data_dir, f"sqlite:///{tmp_path_factory.mktemp('cotrain-mlruns') / 'mlflow.db'}")
    submission_id = f"xlt-test-{uuid.uuid4().hex[:8]}"
    command = ray_head.submit_command(env, ["python", "jobs/cotrain.py", *args], submission_id)
    with started(command, tmp_path_factory.mktemp("cotrain-logs"), ray_head.env, cwd=REPO) as job:
        yield Submitted(submission_id, out, lambda: job.result(timeout=JOB_TIMEOUT_S))


def test_a_cotraining_job_on_sentence_pairs_succeeds_and_exchanges_pairs(ray_head, cotraining_on_pairs):
    """The job runs from the upload, prints its tables, and its pools of sentence pairs are
    pseudo-labelled and exchanged whole."""
    proc = cotraining_on_pairs.finished()
    assert_succeeded_with_a_table(ray_head, cotraining_on_pairs.submission_id, proc, [
        "## co-training on xnli", "### Per iteration (test accuracy)", "| emb co-training (iteration 1) "])
    assert_pairs_exchanged(cotraining_on_pairs.out)


def test_job_runs_the_uploaded_code(ray_head, data_dir):
    """The upload leaves out .git and .venv (Ray's default excludes) and results/ (the repo's
    .gitignore); PYTHONPATH=platform makes driver and workers import the uploaded xlt, not the
    installed one, while the stdlib ``platform`` still wins over the platform/ directory."""
    probe = ("import json, platform, ray, xlt; ray.init(); "
             "f = ray.remote(lambda: __import__('xlt').__file__); "
             "print('PROBE', json.dumps([xlt.__file__, ray.get(f.remote()), platform.__file__]))")
    _, proc = ray_head.submit(runtime_env(data_dir), ["python", "-c", probe], timeout=JOB_TIMEOUT_S)
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    driver_xlt, worker_xlt, stdlib_platform = json.loads(proc.stdout.split("PROBE ", 1)[1].splitlines()[0])

    uploads = ray_head.temp_dir.glob("session_*/runtime_resources/working_dir_files/*/")
    (uploaded,) = [d for d in uploads if driver_xlt.startswith(f"{d}/")]
    assert worker_xlt == driver_xlt == str(uploaded / "platform" / "xlt" / "__init__.py")
    assert not stdlib_platform.startswith(str(uploaded))
    assert (uploaded / "jobs" / "finetune.py").is_file() and (uploaded / "cluster.yaml").is_file()
    for left_out in (".venv", ".git", "results"):
        assert not (uploaded / left_out).exists(), f"{left_out}/ was uploaded"
