"""``ray job submit`` to a real Ray head, as to the cluster of cluster.yaml: every job in ``JOBS``
runs in smoke mode from the uploaded repo and must SUCCEED and print its results table. (The head
and its nodes: ``cluster.harness``.)
"""

from __future__ import annotations

import json

import pytest

from cluster.harness import assert_succeeded_with_a_table, ray_cluster_head, runtime_env

pytestmark = pytest.mark.ray

# Job script -> its smoke-mode arguments ({out}: a per-test output directory) and what its
# output must contain besides a markdown table. Adding a job is one line here.
JOBS = {
    "jobs/finetune.py": (["--smoke", "--set", "output.storage_path={out}", "--set", "output.name=submitted"],
                         ["| avg_target ", "| transfer_gap "]),
    # One exchange round: what is tested is that the job runs from the upload and prints its tables.
    "jobs/cotrain.py": (["--smoke", "--set", "iterations=1", "--set", "output_dir={out}/cotrain"],
                        ["### Per iteration (test accuracy)", "| emb co-training (iteration 1) |"]),
}
JOB_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def ray_head():
    """A 2-CPU Ray head with the dashboard, where the job server lives."""
    with ray_cluster_head(cpus=2) as head:
        yield head


def test_job_api_needs_the_token(ray_head):
    assert ray_head.get("/api/jobs/") == 401
    assert ray_head.get("/api/jobs/", ray_head.token) == 200


@pytest.mark.parametrize("script", list(JOBS))
def test_job_succeeds_and_prints_its_table(ray_head, data_dir, tmp_path, script):
    args, expected = JOBS[script]
    submission_id, proc = ray_head.submit(runtime_env(data_dir),
                                          ["python", script, *(a.format(out=tmp_path) for a in args)], timeout=JOB_TIMEOUT_S)
    assert_succeeded_with_a_table(ray_head, submission_id, proc, expected)


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
