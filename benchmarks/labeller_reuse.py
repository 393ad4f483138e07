"""Co-training's pseudo-labelling passes before and after one pool of labellers for the job (issue 72), on the
one-machine multi-node harness in the cluster preset's shape.

    python benchmarks/labeller_reuse.py                     # before: d7e67ad (a Ray Data actor pool a pass)
    python benchmarks/labeller_reuse.py --iterations 2 --out /tmp/l.md   # a check that it runs

A multi-node Ray cluster on this machine (``tests/cluster/harness.py``: a head of no CPU that runs the driver, as
``cluster.yaml``'s, and four one-CPU worker nodes), and on it the co-training smoke job (``jobs/cotrain.py --smoke``:
tiny models, the smoke preset's rows) in ``configs/cotrain_cluster.yaml``'s shape: each learner fits on a Ray Train
worker of its own node, and two labelling actors of one CPU label the pool (``inference.num_actors: 2``), over
``--iterations`` exchange rounds. Submitted with ``ray job submit`` twice, one after the other: with the code of
``--before`` (a ``git worktree``; each pass starts a Ray Data actor pool whose actors build both classifiers) and
with this checkout's (one pool for the job: the first pass builds the classifiers in the actors, each later one
sends them the new weights through the object store). Each run's ``results.json`` times every pass (phase
``pseudo-label and select``); the table gives them side by side, with the CPU and the load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

REPO = Path(__file__).resolve().parents[1]
PHASE = "pseudo-label and select"
# The cluster preset's shape, on tiny models: learners on Ray Train workers placed by custom resources, two actors.
CLUSTER_SHAPE = ["--set", "lm.scaling.num_workers=1", "--set", "lm.scaling.cpus_per_worker=1",
                 "--set", "lm.scaling.resources={lm_host: 1}", "--set", "emb.scaling.num_workers=1",
                 "--set", "emb.scaling.cpus_per_worker=1", "--set", "emb.scaling.resources={emb_host: 1}",
                 "--set", "inference.num_actors=2", "--set", "inference.num_cpus=1", "--set", "inference.threads=1"]


def passes(head, checkout: Path, out: Path, iterations: int) -> dict[int, float]:
    """Seconds of each pass of the job submitted with ``checkout``'s code (its ``platform`` first on every worker's
    path)."""
    env = {"env_vars": {"PYTHONPATH": str(checkout / "platform"), "HF_HUB_OFFLINE": "1",
                        "XLT_DATA_DIR": os.environ["XLT_DATA_DIR"]}}
    entrypoint = [sys.executable, str(checkout / "jobs" / "cotrain.py"), "--smoke", "--no-tracking",
                  "--set", f"iterations={iterations}", *CLUSTER_SHAPE, "--set", f"output.dir={out}"]
    _, proc = head.submit(env, entrypoint, working_dir=False, timeout=1800)
    if proc.returncode:
        raise RuntimeError((proc.stdout + proc.stderr)[-3000:])
    phases = json.loads((out / "results.json").read_text())["phases"]
    return {int(p["iteration"]): p["seconds"] for p in phases if p["phase"] == PHASE}


def main() -> None:
    arguments = harness.parser(__doc__, "labeller_reuse.md")
    arguments.add_argument("--before", default="d7e67ad", help="a commit whose passes start their own actor pool")
    arguments.add_argument("--iterations", type=int, default=3)
    args = arguments.parse_args()
    os.environ.setdefault("XLT_DATA_DIR", str(REPO.parent / "shared" / "data"))
    sys.path[:0] = [str(REPO / "tests")]  # the harness the cluster tests use

    from cluster.harness import ray_cluster_head
    from xlt.report import markdown_table

    machine = harness.Machine()
    with tempfile.TemporaryDirectory(prefix="xlt-labeller-reuse-") as tmp:
        before = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(before), args.before],
                       check=True, capture_output=True)
        try:
            with ray_cluster_head(cpus=0) as head:
                head.add_workers((1, {"lm_host": 1}), (1, {"emb_host": 1}), (1, None), (1, None))
                old = passes(head, before, Path(tmp) / "run-before", args.iterations)
                new = passes(head, REPO, Path(tmp) / "run-after", args.iterations)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(before)], capture_output=True)
    columns = (f"before ({args.before}): a pool a pass, s", "after: one pool for the job, s")
    rows = [{"pass (iteration)": i, columns[0]: f"{old[i]:.1f}", columns[1]: f"{new[i]:.1f}"} for i in sorted(old)]
    rows.append({"pass (iteration)": "passes after the first, total",
                 columns[0]: f"{sum(v for i, v in old.items() if i):.1f}",
                 columns[1]: f"{sum(v for i, v in new.items() if i):.1f}"})
    text = "\n".join([
        machine.header("Co-training's labelling passes: a pool a pass against one pool for the job (issue 72)"),
        "Cluster: the multi-node harness on this machine (a head of no CPU running the driver, four one-CPU worker "
        "nodes). Job: `jobs/cotrain.py --smoke` (tiny models) in `configs/cotrain_cluster.yaml`'s shape (each learner "
        f"on a Ray Train worker of its own node, two labelling actors of one CPU), {args.iterations} exchange rounds; "
        f"seconds of each pseudo-labelling pass (`{PHASE}`, from each run's results.json). Method: the script's "
        "docstring.", "", markdown_table(rows), ""])
    print(text)
    harness.write(args.out, text)


if __name__ == "__main__":
    main()
