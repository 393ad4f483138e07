"""Where a command's CPU goes, by kind of process: every process on the machine sampled each half second, its CPU
time summed under the kind its command line names. For the test suite (``make test``), whose two cores are busy most
of its run: what running tests side by side, or fewer processes, could gain. Processes shorter than a period are
missed, and one that exits loses its CPU since the last sample: the sums are lower bounds.

    python benchmarks/suite_cpu.py --out /tmp/suite_cpu.json -- make test     # default: benchmarks/suite_cpu.json
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter

import psutil

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
    return next((kind for kind, pattern in KINDS if re.search(pattern, " ".join(cmdline))), None)


def totals(records, key) -> dict[str, dict]:
    """CPU seconds and processes (those that used any) per ``key(record)``, most CPU first; None keys left out."""
    cpu, processes = Counter(), Counter()
    for record in records:
        if (name := key(record)) is not None:
            cpu[name] += record["cpu"]
            processes[name] += record["cpu"] > 0
    return {name: {"cpu_s": round(seconds, 1), "processes": processes[name]} for name, seconds in cpu.most_common()}


def main() -> None:
    parser = harness.parser(__doc__, "suite_cpu.json")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to measure")
    args = parser.parse_args()
    command = (args.command[1:] if args.command[:1] == ["--"] else args.command) or parser.error("name the command")
    me = psutil.Process()
    seen: dict[tuple[int, float], dict] = {}  # (pid, create_time) -> kind, cpu, the first command line seen
    busy, start, started_at = harness.cpu_busy_seconds(), time.monotonic(), time.time()
    child = subprocess.Popen(command)
    while child.poll() is None:
        infos = (p.info for p in psutil.process_iter(["pid", "create_time", "cmdline", "cpu_times"]))
        for info in (i for i in infos if i["pid"] != me.pid and i["cpu_times"] is not None):
            cpu = info["cpu_times"].user + info["cpu_times"].system
            # A process older than the command counts from its first sample on.
            record = seen.setdefault((info["pid"], info["create_time"]), {
                "kind": None, "cpu": 0.0, "cmdline": "", "base": cpu if info["create_time"] < started_at else 0.0})
            if record["kind"] in (None, "other Ray workers") and (kind := kind_of(info["cmdline"] or [])):
                record["kind"], record["cmdline"] = kind, " ".join(info["cmdline"])[:200]
            record["cpu"] = max(record["cpu"], cpu - record["base"])
        time.sleep(PERIOD_S)
    wall = time.monotonic() - start
    busy_cores, cores = (harness.cpu_busy_seconds() - busy) / wall, psutil.cpu_count()
    counted = sum(r["cpu"] for r in seen.values())
    summary = {"command": command, "returncode": child.returncode, "wall_s": round(wall, 1), "cores": cores,
               "busy_cores": round(busy_cores, 2), "machine_cpu_s": round(busy_cores * wall, 1),
               "sampled_cpu_s": round(counted, 1), "period_s": PERIOD_S, "cpu": cpu_model(),
               "kinds": totals(seen.values(), lambda r: r["kind"] or "everything else"),
               "largest": [{"cpu_s": round(r["cpu"], 1), "kind": r["kind"], "cmdline": r["cmdline"]}
                           for r in sorted(seen.values(), key=lambda r: -r["cpu"])[:40]],
               "ray_workers": totals(seen.values(), lambda r: re.split(r"[.( ]", r["cmdline"], maxsplit=1)[0]
                                     if r["cmdline"].startswith("ray::") else None)}
    harness.write(args.out, summary)
    print(f"\n{' '.join(command)}: exit {child.returncode}, {wall:.0f} s wall, {busy_cores:.2f} of {cores} cores busy "
          f"({busy_cores * wall:.0f} CPU s on the machine, {counted:.0f} s sampled), {summary['cpu']}\n\n"
          "| processes | CPU s | count | share of sampled |\n|---|---|---|---|")
    for kind, e in summary["kinds"].items():
        print(f"| {kind} | {e['cpu_s']:.0f} | {e['processes']} | {e['cpu_s'] / max(counted, 1e-9):.0%} |")
    print("\n| Ray worker | CPU s | count |\n|---|---|---|", *(f"| `{title}` | {e['cpu_s']:.0f} | {e['processes']} |"
          for title, e in list(summary["ray_workers"].items())[:15]), sep="\n")
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
