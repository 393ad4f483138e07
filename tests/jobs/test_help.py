"""Every job's ``--help`` answers before torch, transformers and Ray are imported (each costs seconds), so that it
answers in well under a second; checked by what is imported, not by timing."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO

JOBS = sorted(p.name for p in (REPO / "jobs").glob("*.py"))
HEAVY = ("torch", "transformers", "ray", "sentence_transformers", "sklearn")


def test_every_jobs_help_imports_no_heavy_library():
    script = f"""
import contextlib, io, json, runpy, sys
sys.path.insert(0, {str(REPO / "jobs")!r})
out = {{}}
for job in {JOBS!r}:
    sys.argv = [job, "--help"]
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        try:
            runpy.run_path({str(REPO / "jobs")!r} + "/" + job, run_name="__main__")
        except SystemExit:
            pass
    out[job] = [len(text.getvalue()), sorted(m for m in {HEAVY!r} if m in sys.modules)]
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answered = json.loads(proc.stdout.splitlines()[-1])
    assert sorted(answered) == JOBS and len(JOBS) == 9
    for job, (help_chars, imported) in answered.items():
        assert help_chars > 200 and imported == [], (job, help_chars, imported)


def test_every_jobs_help_shows_its_examples_line_by_line():
    """A backslash ending an example line in a job's docstring must be escaped: unescaped, Python joins the next line
    onto it, and ``--help`` shows one line with a run of spaces in it."""
    import ast

    for job in JOBS:
        doc = ast.get_docstring(ast.parse((REPO / "jobs" / job).read_text(encoding="utf-8"))) or ""
        joined = [line for line in doc.splitlines() if line.lstrip().startswith("python ") and "     --" in line]
        assert joined == [], (job, joined)
