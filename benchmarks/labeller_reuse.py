"""Co-training's labelling passes with the code of ``--before`` (a ``git worktree``: an actor pool a pass) and this
checkout's (one pool for the job), issue 72: the smoke job on ``tests/cluster/harness.py``'s one-machine cluster.

    python benchmarks/labeller_reuse.py                     # before: d7e67ad (a Ray Data actor pool a pass)
    python benchmarks/labeller_reuse.py --iterations 2 --out /tmp/l.md   # a check that it runs"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import harness
from xlt.report import markdown_table

PHASE = "pseudo-label and select"
CLUSTER_SHAPE = [x for s in ("lm.scaling.num_workers=1", "lm.scaling.cpus_per_worker=1", "emb.scaling.num_workers=1",
                             "lm.scaling.resources={lm_host: 1}", "emb.scaling.resources={emb_host: 1}",
                             "emb.scaling.cpus_per_worker=1", "inference.num_actors=2", "inference.num_cpus=1",
                             "inference.threads=1") for x in ("--set", s)]


def passes(head, checkout: Path, out: Path, iterations: int) -> dict[int, float]:
    """Seconds of each pass of the job submitted with ``checkout``'s code (its ``platform`` first on the path)."""
    env = {"env_vars": {"PYTHONPATH": str(checkout / "platform"), "HF_HUB_OFFLINE": "1",
                        "XLT_DATA_DIR": str(harness.data_root())}}
    _, proc = head.submit(env, [sys.executable, str(checkout / "jobs" / "cotrain.py"), "--smoke", "--no-tracking",
                                "--set", f"iterations={iterations}", *CLUSTER_SHAPE, "--set", f"output.dir={out}"],
                          working_dir=False, timeout=1800)
    if proc.returncode:
        raise RuntimeError((proc.stdout + proc.stderr)[-3000:])
    phases = json.loads((out / "results.json").read_text())["phases"]
    return {int(p["iteration"]): p["seconds"] for p in phases if p["phase"] == PHASE}


def main() -> None:
    parser = harness.parser(__doc__, "labeller_reuse.md")
    parser.add_argument("--before", default="d7e67ad", help="a commit whose passes start their own actor pool")
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    sys.path[:0] = [str(harness.REPO / "tests")]  # the harness the cluster tests use
    from cluster.harness import ray_cluster_head
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
    title = "Co-training's labelling passes: a pool a pass against one pool for the job (issue 72)"
    harness.write(args.out, f"{machine.header(title)}\nCluster: the multi-node harness on this machine (a head "
                  "of no CPU running the driver, four one-CPU worker nodes). Job: `jobs/cotrain.py --smoke` (tiny "
                  "models) in `configs/cotrain_cluster.yaml`'s shape (each learner on a Ray Train worker of its own "
                  f"node, two labelling actors of one CPU), {args.iterations} exchange rounds; seconds of each pass "
                  f"(`{PHASE}`, in results.json). Before, each pass starts a Ray Data actor pool building both "
                  "classifiers; after, they are built once and later passes get the new weights through the object "
                  f"store.\n\n{markdown_table(rows)}\n", show=True)


if __name__ == "__main__":
    main()
