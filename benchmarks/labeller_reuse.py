"""Co-training's pseudo-labelling passes before and after one pool of labellers for the job (issue 72), on the
one-machine multi-node harness in the cluster preset's shape.

    python benchmarks/labeller_reuse.py                     # before: d7e67ad (a Ray Data actor pool a pass)
    python benchmarks/labeller_reuse.py --iterations 2 --out /tmp/l.md   # a check that it runs

``jobs/cotrain.py --smoke`` on ``tests/cluster/harness.py``'s cluster, submitted with the code of ``--before`` (a
``git worktree``: an actor pool a pass) and with this checkout's (one pool for the job, new weights sent to it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

PHASE = "pseudo-label and select"
# The cluster preset's shape, on tiny models: learners on Ray Train workers placed by custom resources, two actors.
CLUSTER_SHAPE = [x for s in ("lm.scaling.num_workers=1", "lm.scaling.cpus_per_worker=1",
                             "lm.scaling.resources={lm_host: 1}", "emb.scaling.num_workers=1",
                             "emb.scaling.cpus_per_worker=1", "emb.scaling.resources={emb_host: 1}",
                             "inference.num_actors=2", "inference.num_cpus=1", "inference.threads=1")
                 for x in ("--set", s)]


def passes(head, checkout: Path, out: Path, iterations: int) -> dict[int, float]:
    """Seconds of each pass of the job submitted with ``checkout``'s code (its ``platform`` first on the path)."""
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
    os.environ["XLT_DATA_DIR"] = str(harness.data_root())
    sys.path[:0] = [str(harness.REPO / "tests")]  # the harness the cluster tests use

    from cluster.harness import ray_cluster_head
    from xlt.report import markdown_table

    machine = harness.Machine()
    git = ["git", "-C", str(harness.REPO), "worktree"]
    with tempfile.TemporaryDirectory(prefix="xlt-labeller-reuse-") as tmp:
        before = Path(tmp) / "before"
        subprocess.run([*git, "add", "--detach", str(before), args.before], check=True, capture_output=True)
        try:
            with ray_cluster_head(cpus=0) as head:
                head.add_workers((1, {"lm_host": 1}), (1, {"emb_host": 1}), (1, None), (1, None))
                old = passes(head, before, Path(tmp) / "run-before", args.iterations)
                new = passes(head, harness.REPO, Path(tmp) / "run-after", args.iterations)
        finally:
            subprocess.run([*git, "remove", "--force", str(before)], capture_output=True)
    columns = (f"before ({args.before}): a pool a pass, s", "after: one pool for the job, s")
    rows = [{"pass (iteration)": i, columns[0]: f"{old[i]:.1f}", columns[1]: f"{new[i]:.1f}"} for i in sorted(old)]
    rows.append({"pass (iteration)": "passes after the first, total",
                 **{c: f"{sum(v for i, v in run.items() if i):.1f}" for c, run in zip(columns, (old, new))}})
    text = "\n".join([
        machine.header("Co-training's labelling passes: a pool a pass against one pool for the job (issue 72)"),
        "Cluster: the multi-node harness on this machine (a head of no CPU running the driver, four one-CPU worker "
        "nodes). Job: `jobs/cotrain.py --smoke` (tiny models) in `configs/cotrain_cluster.yaml`'s shape (each learner "
        f"on a Ray Train worker of its own node, two labelling actors of one CPU), {args.iterations} exchange rounds; "
        f"seconds of each pseudo-labelling pass (`{PHASE}`, from each run's results.json); --before's passes each "
        "start a Ray Data actor pool that builds both classifiers, this checkout's build them once and send each "
        "later pass the new weights through the object store.", "", markdown_table(rows), ""])
    print(text)
    harness.write(args.out, text)


if __name__ == "__main__":
    main()
