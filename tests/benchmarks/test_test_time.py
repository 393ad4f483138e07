"""benchmarks/test_time.py on a hand-written JUnit file: a test's time is its testcase's, a file's the
sum of its tests', and the tables put the slowest first."""

from __future__ import annotations

from benchmarks.loading import load_benchmark

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.jobs.test_a" name="test_one" time="10.5" />
<testcase classname="tests.jobs.test_a" name="test_two[x-y]" time="1.5" />
<testcase classname="tests.test_b" name="test_three" time="4.0" />
</testsuite></testsuites>"""


def test_files_and_slowest_tests_from_a_junit_file(tmp_path):
    module = load_benchmark("test_time")
    (tmp_path / "run.xml").write_text(JUNIT)
    times = module.read_junit(tmp_path / "run.xml")
    assert times == {"tests/jobs/test_a.py::test_one": 10.5, "tests/jobs/test_a.py::test_two[x-y]": 1.5,
                     "tests/test_b.py::test_three": 4.0}
    assert module.by_file(times) == {"tests/jobs/test_a.py": (2, 12.0), "tests/test_b.py": (1, 4.0)}
    rows = module.file_table({"before": times, "after": {"tests/test_b.py::test_three": 2.0}})
    assert [r["file"] for r in rows] == ["tests/jobs/test_a.py", "tests/test_b.py", "**all**"]
    assert rows[0]["after: tests"] == 0 and rows[1]["after: s"] == 2.0 and rows[2]["before: s"] == 16.0
    assert [r["test"] for r in module.slowest(times, 2)] == ["tests/jobs/test_a.py::test_one", "tests/test_b.py::test_three"]
