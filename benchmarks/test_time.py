"""Where the test suite's time goes: the per-file table and the slowest tests of a pytest JUnit XML,
side by side for several runs (before / after a change), as ``benchmarks/test_time.md`` shows them.

    PYTEST_ADDOPTS="--junitxml=/tmp/before.xml" make test        # from a fresh clone, idle machine
    python benchmarks/test_time.py --run "before (83a7d7e)=/tmp/before.xml" --run "after=/tmp/after.xml"

A test's time is its setup, call and teardown together (a module fixture's cost lands on the first test that
uses it); a file's is the sum of its tests'. Prints markdown; the slowest tests of the last run come first.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import harness
from xlt.report import markdown_table


def read_junit(path: Path) -> dict[str, float]:
    """Test id (``tests/dir/test_file.py::test_name[param]``) -> seconds, from a JUnit XML file."""
    times = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/").removeprefix("tests/")
        times[f"tests/{module}.py::{case.get('name')}"] = float(case.get("time", 0))
    return times


def by_file(times: dict[str, float]) -> dict[str, tuple[int, float]]:
    """File -> (tests, seconds)."""
    files: dict[str, list[float]] = defaultdict(list)
    for test_id, seconds in times.items():
        files[test_id.split("::", 1)[0]].append(seconds)
    return {name: (len(t), sum(t)) for name, t in files.items()}


def file_table(runs: dict[str, dict[str, float]]) -> list[dict]:
    """One row per test file (slowest in the first run first), tests and seconds per run, then the total."""
    per_run = {name: by_file(times) for name, times in runs.items()}
    first = next(iter(per_run.values()))
    rows = []
    for name in sorted(set().union(*per_run.values()), key=lambda f: (-first.get(f, (0, 0.0))[1], f)):
        row = {"file": name}
        for run, table in per_run.items():
            count, seconds = table.get(name, (0, 0.0))
            row[f"{run}: tests"], row[f"{run}: s"] = count, round(seconds, 1)
        rows.append(row)
    total = {"file": "**all**"}
    for run, times in runs.items():
        total[f"{run}: tests"], total[f"{run}: s"] = len(times), round(sum(times.values()), 1)
    return rows + [total]


def slowest(times: dict[str, float], n: int = 30) -> list[dict]:
    total = sum(times.values())
    return [{"rank": i + 1, "test": test_id, "s": round(s, 1), "share": f"{s / total:.1%}"}
            for i, (test_id, s) in enumerate(sorted(times.items(), key=lambda kv: -kv[1])[:n])]


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--run", action="append", required=True, metavar="NAME=JUNIT_XML",
                        help="a run's name and its pytest --junitxml file (repeatable, in order)")
    parser.add_argument("--slowest", type=int, default=30, help="how many of the slowest tests to list per run")
    args = parser.parse_args()
    runs = {name: read_junit(Path(path)) for name, _, path in (spec.partition("=") for spec in args.run)}
    print("### Time per test file (seconds; a module fixture counts in its first test)\n")
    print(markdown_table(file_table(runs)))
    for name in reversed(list(runs)):
        print(f"\n### The {args.slowest} slowest tests: {name}\n")
        print(markdown_table(slowest(runs[name], args.slowest)))


if __name__ == "__main__":
    main()
