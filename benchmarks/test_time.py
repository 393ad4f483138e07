"""Where the test suite's time goes, per file and in its slowest tests, from the pytest JUnit XMLs of several runs
(before / after a change), as ``benchmarks/test_time.md`` shows them.

    PYTEST_ADDOPTS="--junitxml=/tmp/before.xml" make test        # from a fresh clone, idle machine
    python benchmarks/test_time.py --run "before (83a7d7e)=/tmp/before.xml" --run "after=/tmp/after.xml"

A test's time is its setup, call and teardown together; a file's is the sum of its tests'."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import harness
from xlt.report import markdown_table


def read_junit(path: Path) -> dict[str, float]:
    """Test id (``tests/dir/test_file.py::test_name[param]``) -> seconds, from a JUnit XML file."""
    return {f"tests/{c.get('classname', '').replace('.', '/').removeprefix('tests/')}.py::{c.get('name')}":
            float(c.get("time", 0)) for c in ET.parse(path).getroot().iter("testcase")}


def by_file(times: dict[str, float]) -> dict[str, tuple[int, float]]:
    """File -> (tests, seconds)."""
    files: dict[str, list[float]] = defaultdict(list)
    for test_id, seconds in times.items():
        files[test_id.split("::", 1)[0]].append(seconds)
    return {name: (len(t), sum(t)) for name, t in files.items()}


def file_table(runs: dict[str, dict[str, float]]) -> list[dict]:
    """One row per test file (slowest in the first run first), tests and seconds per run, then the total."""
    per_run = {run: by_file(times) | {"**all**": (len(times), sum(times.values()))} for run, times in runs.items()}
    first = next(iter(per_run.values()))
    names = sorted(set().union(*per_run.values()) - {"**all**"}, key=lambda f: (-first.get(f, (0, 0.0))[1], f))
    rows = []
    for name in [*names, "**all**"]:
        rows.append({"file": name})
        for run, table in per_run.items():
            count, seconds = table.get(name, (0, 0.0))
            rows[-1] |= {f"{run}: tests": count, f"{run}: s": round(seconds, 1)}
    return rows


def slowest(times: dict[str, float], n: int = 30) -> list[dict]:
    total = sum(times.values())
    return [{"rank": i + 1, "test": test_id, "s": round(s, 1), "share": f"{s / total:.1%}"}
            for i, (test_id, s) in enumerate(sorted(times.items(), key=lambda kv: -kv[1])[:n])]


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--run", action="append", required=True, metavar="NAME=JUNIT_XML", help="repeatable, in order")
    parser.add_argument("--slowest", type=int, default=30, help="how many of the slowest tests to list per run")
    args = parser.parse_args()
    runs = {name: read_junit(Path(path)) for name, _, path in (spec.partition("=") for spec in args.run)}
    tables = [("Time per test file (seconds; a module fixture counts in its first test)", file_table(runs))] + [
        (f"The {args.slowest} slowest tests: {name}", slowest(runs[name], args.slowest))
        for name in reversed(list(runs))]  # the last run's first
    print("\n\n".join(f"### {title}\n\n{markdown_table(rows)}" for title, rows in tables))


if __name__ == "__main__":
    main()
