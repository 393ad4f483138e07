"""Where a command's CPU goes, by kind of process: run it, sample every process on the machine every half
second (``psutil``), and sum each process's CPU time under the kind its command line names. Written for the
test suite (``make test``), whose two cores are busy most of its run: what it could gain from running tests
side by side, or from fewer processes, is read off this table. Prints a markdown table (kind, CPU seconds,
processes, share) with the machine's busy cores over the run and writes the same as JSON. A process that lives
less than a sampling period is missed, and one that exits between two samples loses its CPU since the last: the
sums are lower bounds.

    python benchmarks/suite_cpu.py --out /tmp/suite_cpu.json -- make test     # default: benchmarks/suite_cpu.json
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import harness
from xlt.hardware import cpu_model

PERIOD_S = 0.5
# First match wins: (kind, pattern over the command line, or over Ray's process title "ray::<Class>.<method>").
KINDS = [
    ("pip and the install", r"-m pip\b|/pip3? |-m venv\b|ensurepip"),
    ("job drivers (jobs/*.py)", r"jobs/\w+\.py"),  # before pytest: a job's arguments name pytest's tmp paths
    ("pytest (the test process)", r"-m pytest\b|bin/pytest\b"),
    ("Ray Train workers", r"^ray::(RayTrainWorker|_RayTrainWorker)"),
    ("Ray Train's other actors (controller, ...)", r"^ray::(TrainController|PlacementGroupCleaner|DatasetManager|"
                                                   r"SynchronizationActor|PreemptionWatcher|TrainStateActor)"),
    ("Ray Data's actors and tasks", r"^ray::(MapWorker|_StatsActor|_AutoscalingCoordinator|SplitCoordinator|"
                                    r"ActorLocationTracker|ReadRange|Map|Read|Write|_map_task|_split)"),
    ("Tune's trials and controller", r"^ray::(ImplicitFunc|_Inner|TuneController|trial)"),
    ("xlt's actors (mailbox, labellers, ...)", r"^ray::(FitRequests|LabelWorker|Translator|Annotator|\w*Pool)"),
    ("other Ray workers", r"^ray::|default_worker\.py"),  # idle, or not yet titled by what it runs
    ("Ray's per-node processes", r"raylet|gcs_server|log_monitor|dashboard|runtime_env_agent|monitor\.py|"
                                 r"ray/autoscaler|ray start|ray\.scripts"),
    ("the S3 server (moto)", r"moto\.server"),
]


def kind_of(cmdline: list[str]) -> str | None:
    line = " ".join(cmdline)
    for kind, pattern in KINDS:
        if re.search(pattern, line):
            return kind
    return None


def totals(records: list[dict], key) -> dict[str, dict]:
    """CPU seconds and processes (those that used any) per ``key(record)``, most CPU first; None keys left out."""
    out: dict[str, dict] = {}
    for record in records:
        if (name := key(record)) is not None:
            entry = out.setdefault(name, {"cpu_s": 0.0, "processes": 0})
            entry["cpu_s"] += record["cpu"]
            entry["processes"] += record["cpu"] > 0
    return {k: {"cpu_s": round(v["cpu_s"], 1), "processes": v["processes"]}
            for k, v in sorted(out.items(), key=lambda kv: -kv[1]["cpu_s"])}


def main() -> None:
    import psutil

    parser = harness.parser(__doc__, "suite_cpu.json")
    parser.add_argument("--output", dest="out", type=Path, help=argparse.SUPPRESS)  # the name of earlier commands
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to measure")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("name the command after --")

    me = psutil.Process()
    seen: dict[tuple[int, float], dict] = {}  # (pid, create_time) -> kind, cpu, the first command line seen
    busy, start, started_at = harness.cpu_busy_seconds(), time.monotonic(), time.time()
    child = subprocess.Popen(command)
    while child.poll() is None:
        for process in psutil.process_iter(["pid", "create_time", "cmdline", "cpu_times"]):
            info = process.info
            if info["pid"] == me.pid or info["cpu_times"] is None:
                continue
            cpu = info["cpu_times"].user + info["cpu_times"].system
            # A process older than the command counts from its first sample on.
            record = seen.setdefault((info["pid"], info["create_time"]), {
                "kind": None, "cpu": 0.0, "cmdline": "", "base": cpu if info["create_time"] < started_at else 0.0})
            kind = kind_of(info["cmdline"] or [])
            if kind is not None and (record["kind"] is None or record["kind"] == "other Ray workers"):
                record["kind"], record["cmdline"] = kind, " ".join(info["cmdline"])[:200]
            record["cpu"] = max(record["cpu"], cpu - record["base"])
        time.sleep(PERIOD_S)
    wall = time.monotonic() - start
    busy_cores, cores = (harness.cpu_busy_seconds() - busy) / wall, psutil.cpu_count()
    records = list(seen.values())
    counted = sum(r["cpu"] for r in records)
    summary = {"command": command, "returncode": child.returncode, "wall_s": round(wall, 1), "cores": cores,
               "busy_cores": round(busy_cores, 2), "machine_cpu_s": round(busy_cores * wall, 1),
               "sampled_cpu_s": round(counted, 1), "period_s": PERIOD_S, "cpu": cpu_model(),
               "kinds": totals(records, lambda r: r["kind"] or "everything else"),
               "largest": [{"cpu_s": round(r["cpu"], 1), "kind": r["kind"], "cmdline": r["cmdline"]}
                           for r in sorted(records, key=lambda r: -r["cpu"])[:40]],
               # Ray's workers by what they ran: "ray::<Class>"
               "ray_workers": totals(records, lambda r: re.split(r"[.( ]", r["cmdline"], maxsplit=1)[0]
                                     if r["cmdline"].startswith("ray::") else None)}
    harness.write(args.out, summary)
    print(f"\n{' '.join(command)}: exit {child.returncode}, {wall:.0f} s wall, {busy_cores:.2f} of {cores} cores busy "
          f"({busy_cores * wall:.0f} CPU s on the machine, {counted:.0f} s sampled), {summary['cpu']}\n")
    print("| processes | CPU s | count | share of sampled |\n|---|---|---|---|")
    for kind, entry in summary["kinds"].items():
        print(f"| {kind} | {entry['cpu_s']:.0f} | {entry['processes']} | {entry['cpu_s'] / max(counted, 1e-9):.0%} |")
    print("\n| Ray worker | CPU s | count |\n|---|---|---|")
    for title, entry in list(summary["ray_workers"].items())[:15]:
        print(f"| `{title}` | {entry['cpu_s']:.0f} | {entry['processes']} |")
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
