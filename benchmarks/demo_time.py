"""Where `make demo`'s time goes: per-phase and per-iteration wall time, and accuracy, of demo runs.

    python jobs/cotrain.py --set output.dir=/tmp/demo 2> /tmp/demo.log      # the demo, timed
    python benchmarks/demo_time.py --run "learners on Ray Train=/tmp/demo:/tmp/demo.log" [--run ...]

Each ``--run LABEL=OUTPUT_DIR:LOG``, a finished demo: its ``results.json`` and timestamped stderr. Writes
``benchmarks/demo_time.json``; prints the tables of ``benchmarks/demo_time.md``."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import harness
from xlt.report import markdown_table

# The job's lines (HH:MM:SS message) and Ray's (YYYY-MM-DD HH:MM:SS,mmm LEVEL ...).
LINE = re.compile(r"^(?:\d{4}-\d\d-\d\d )?(\d\d:\d\d:\d\d)(?:,\d+)?\s+(.*)$")


def seconds_between(start: str, end: str) -> float:
    a, b = (datetime.strptime(t, "%H:%M:%S") for t in (start, end))
    return (b - a if b >= a else b + timedelta(days=1) - a).total_seconds()


def iteration_times(log: Path) -> tuple[list[float], float]:
    """Wall seconds of each iteration (from Ray's start, then summary line to summary line) and of the whole job."""
    text = log.read_text(errors="replace")
    stamped = [m.groups() for m in map(LINE.match, text.splitlines()) if m]
    if not stamped:
        raise ValueError(f"{log} has no timestamped lines: not the stderr of jobs/cotrain.py")
    marks = [stamped[0][0]] + [t for t, message in stamped if re.match(r"iteration \d+: ", message)]
    real = re.search(r"^real\s+(\d+)m([\d.]+)s$", text, re.M)  # bash's `time`, when the job ran under it
    total = int(real[1]) * 60 + float(real[2]) if real else seconds_between(stamped[0][0], stamped[-1][0])
    return [seconds_between(a, b) for a, b in zip(marks, marks[1:])], total


def main() -> None:
    parser = harness.parser(__doc__, "demo_time.json")
    parser.add_argument("--run", action="append", required=True, metavar="LABEL=OUTPUT_DIR:LOG")
    args = parser.parse_args()
    runs, per_iteration, accuracy = {}, [], []
    for spec in args.run:
        label, out, log = re.fullmatch(r"(.*?)=(.*?):(.*)", spec).groups()
        results = json.loads(Path(out, "results.json").read_text())
        iterations, total = iteration_times(Path(log))
        runs[label] = {"iterations_s": iterations, "total_s": total, "phases": results.get("phases", [])}
        per_iteration.append({"run": label, **{f"iteration {i} s": s for i, s in enumerate(iterations)},
                              "whole job min": total / 60})
        history, acc = results["history"], f"{results['config']['data']['eval_split']}/acc/"
        last = max(h["iteration"] for h in history)
        accuracy += [{"run": label, "learner": h["learner"], "iteration": h["iteration"],
                      **{key.removeprefix(acc): h.get(key) for key in history[0] if key.startswith(acc)}}
                     for h in history if h["iteration"] in (0, last)]
    print("### Wall time per iteration\n\n" + markdown_table(per_iteration, digits=1))
    for label, run in runs.items():
        if run["phases"]:
            print(f"\n### Phases: {label}\n\n" + markdown_table(
                [{"iteration": r.get("iteration"), "phase": r["phase"], "start s": f"{r['start s']:.1f}",
                  "seconds": f"{r['seconds']:.1f}"} for r in run["phases"]]))  # plain seconds, never 9e-06
    print("\n### Test accuracy per language (first and last iteration)\n\n" + markdown_table(accuracy))
    harness.write(args.out, runs)


if __name__ == "__main__":
    main()
