"""Co-training's pseudo-labelling passes before and after long-lived labellers (issue 72).

    python benchmarks/labeller_reuse.py --before 45342da     # the commit before the labellers were kept
    python benchmarks/labeller_reuse.py --before 45342da --iterations 2 --output /tmp/l.md   # a check that it runs

The same co-training job (``jobs/cotrain.py --smoke``: tiny models, the smoke preset's rows) with its pool labelled
by one actor (``inference.num_actors: 1``, 0.5 CPU) over ``--iterations`` exchange rounds, run once with the code of
``--before`` (a ``git worktree``; its pass starts a Ray Data actor pool that builds both classifiers) and once with
this checkout's (one pool for the job: the first pass builds the classifiers in the actor, each later one loads the
new weights). Each run's ``results.json`` times every pass (phase ``pseudo-label and select``); the table gives
them side by side, with the CPU and the load. Runs one after the other, each on a fresh local Ray.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PHASE = "pseudo-label and select"


def passes(checkout: Path, out: Path, iterations: int) -> dict[int, float]:
    """Seconds of each pass of the job run with ``checkout``'s code."""
    env = {**os.environ, "PYTHONPATH": str(checkout / "platform"), "RAY_ADDRESS": "", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, str(checkout / "jobs" / "cotrain.py"), "--smoke", "--no-tracking",
               "--set", f"iterations={iterations}", "--set", "inference.num_actors=1",
               "--set", "inference.num_cpus=0.5", "--set", f"output.dir={out}"]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    phases = json.loads((out / "results.json").read_text())["phases"]
    return {int(p["iteration"]): p["seconds"] for p in phases if p["phase"] == PHASE}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="a commit whose passes start their own actor pool")
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "labeller_reuse.md"))
    args = parser.parse_args()
    os.environ.setdefault("XLT_DATA_DIR", str(REPO.parent / "shared" / "data"))

    from xlt.hardware import cpu_model
    from xlt.report import command_line, markdown_table

    load, started = os.getloadavg()[0], time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="xlt-labeller-reuse-") as tmp:
        before = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(before), args.before],
                       check=True, capture_output=True)
        try:
            old = passes(before, Path(tmp) / "run-before", args.iterations)
            new = passes(REPO, Path(tmp) / "run-after", args.iterations)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(before)], capture_output=True)
    rows = [{"pass (iteration)": i, f"before ({args.before}): a pool a pass, s": f"{old[i]:.1f}",
             "after: one pool for the job, s": f"{new[i]:.1f}"} for i in sorted(old)]
    rows.append({"pass (iteration)": "passes after the first, total", f"before ({args.before}): a pool a pass, s":
                 f"{sum(v for i, v in old.items() if i):.1f}",
                 "after: one pool for the job, s": f"{sum(v for i, v in new.items() if i):.1f}"})
    text = "\n".join([
        "# Co-training's labelling passes: a pool a pass against one pool for the job (issue 72)", "",
        f"Command: `{command_line()}`  ",
        f"Date: {started}. CPU: {cpu_model()}, {os.cpu_count()} cores; 1-minute load {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end.", "",
        "Job: `jobs/cotrain.py --smoke` (tiny models), one labelling actor of 0.5 CPU, "
        f"{args.iterations} exchange rounds; seconds of each pseudo-labelling pass (`{PHASE}`, from each run's "
        "results.json). Method: the script's docstring.", "", markdown_table(rows), ""])
    Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
