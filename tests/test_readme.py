"""The README as a new user meets it: every fenced ``bash`` and ``python`` block, in the README's order, in a fresh
checkout (the tracked files copied, nothing under ``results/``).

Each job command runs as typed with ``--dry-run`` added (the config resolved, its inputs and model checked, the plan
printed, nothing trained or written), in this process (``jobs.inprocess``). The files a reader brings (the README's
``# my_reviews.yaml`` and ``# my_nli_task.yaml`` blocks and the data they name) are written first, as the README
describes them. A command this test does not run says why here, by how it begins (``ELSEWHERE``, ``NOT_RUN``); a
block the test does not know fails it. Two commands that would write one directory must compute the same (their
plans' config fingerprints): a README command never resumes, refuses or overwrites another's run. After the commands
the checkout holds nothing new but the reader's files.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys


from conftest import REPO
from jobs.inprocess import run_in_process
from predict.test_readme_commands import README_PYTHON

# Commands run for real elsewhere, as typed: the test that does.
ELSEWHERE = {
    "python jobs/predict.py": "tests/predict/test_readme_commands.py, on stand-ins of the runs it reads",
    "python jobs/export.py": "tests/predict/test_readme_commands.py, on a stand-in of the run it exports",
    "python benchmarks/baselines.py": "test_a_committed_study_and_the_baselines_rewrite_their_reports_byte_for_byte, "
                                      "below, with the study the README reruns",
}
# Commands this test does not run, and why.
NOT_RUN = {
    "make demo": "the demo itself, minutes long: its job runs here as `python jobs/cotrain.py --dry-run` "
                 "(the preset make demo runs), and its --smoke in tests/jobs/test_cotrain.py",
    "make test": "the suite that holds this test",
    ".venv/bin/mlflow ui": "a server that runs until it is stopped (tests/tracking reads the same store)",
    ".venv/bin/tensorboard": "a server that runs until it is stopped",
    "ray job submit": "needs a running Ray cluster (tests/jobs/test_job_submit.py submits to one); the command it "
                      "submits runs here with --dry-run",
    "make wheelhouse": "downloads every wheel from PyPI (tests/test_wheelhouse.py builds a wheelhouse offline)",
    "PYTHONPATH=platform python3 -m xlt.wheelhouse install": "installs into the Python of a node without an index "
                                                             "(`python -m xlt.wheelhouse rehearse` does it in a venv)",
    "python jobs/sweep.py --space search_spaces/scl.yaml --resume": "continues the sweep of the line before it, which "
                                                                   "a dry run plans but does not start",
    "python jobs/finetune.py --config results/sweeps/scl/best.yaml": "reads the best trial's config, which the sweep "
                                                                    "above writes when it ends",
    "python jobs/evaluate.py --set 'models=[{source: \"local:/ckpt\"": "a placeholder checkpoint (/ckpt) the "
                                                                     "reader fills in with one of their own",
    "python jobs/finetune.py --config configs/finetune_sib200.yaml --set 'model.source=local:<run>":
        "a placeholder (<run>/<checkpoint>) the reader fills in with a pretraining run's checkpoint",
}
# Python blocks run elsewhere, by their first line: the test that does.
PYTHON_ELSEWHERE = {first: "tests/predict/test_readme_commands.py, on what the README's predict and export commands "
                           "wrote there (an export logged as a job logs it, for MLflow)" for first in README_PYTHON}


def readme_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block, in order."""
    return re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)


def command_lines(body: str) -> list[str]:
    """A bash block's commands: continuation lines joined, comment lines and trailing comments dropped."""
    lines = body.replace("\\\n", " ").splitlines()
    return [shlex.join(shlex.split(line, comments=True)) for line in lines if shlex.split(line, comments=True)]


def model_read(words: list[str]) -> str | None:
    """The run or export a predict or export command reads (``model.path=``, the export's first argument)."""
    if words[:2] == ["python", "jobs/export.py"]:
        return words[2]
    if words[:2] == ["python", "jobs/predict.py"]:
        return next((w.split("=", 1)[1] for w in words if w.startswith("model.path=")), None)
    return None


def reason_not_run(command: str) -> str | None:
    return next((why for start, why in {**ELSEWHERE, **NOT_RUN}.items() if command.startswith(start)), None)


def fresh_checkout(tmp_path):
    """The checkout's files as a clone holds them (tracked and new, not ignored), under ``tmp_path``."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    root = tmp_path / "checkout"
    for name in filter(None, files):
        if (REPO / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    return root


def readers_files(root, blocks) -> list[str]:
    """The files the README asks the reader to write (a yaml block whose first line names it) and the data they
    name, tiny: what a reader following it has. Returns their paths."""
    written = []
    for language, body in blocks:
        first = body.splitlines()[0]
        if language == "yaml" and re.fullmatch(r"# [\w.-]+\.yaml", first):
            (root / first[2:]).write_text(body, encoding="utf-8")
            written.append(first[2:])
    stars = ["1", "2", "3", "4", "5", "3"]
    for lang in ("en", "de"):
        for split in ("train", "dev", "test"):
            path = root / "mydata" / lang / f"{split}.csv"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("review,stars\n" + "".join(f"review {i} of {split} in {lang},{s}\n"
                                                        for i, s in enumerate(stars * 3)), encoding="utf-8")
            written.append(str(path.relative_to(root)))
    for folder in ("en", "de", "swahili", "fra_Latn"):
        for split, n in (("train", 12), ("validation", 520), ("test", 12)):
            path = root / "nli" / folder / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps({"id": f"{split}-{i}", "premise": f"a premise {i}",
                                                "hypothesis": f"a hypothesis {i}",
                                                "gold_label": ["entailment", "neutral", "contradiction", "NS"][i % 4]})
                                    + "\n" for i in range(n)), encoding="utf-8")
            written.append(str(path.relative_to(root)))
    return written


def files(root) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_the_readme_walked_in_order_runs_as_typed_writes_nothing_and_shares_no_directory(tmp_path, monkeypatch, capsys,
                                                                                      data_dir):
    blocks = readme_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    root = fresh_checkout(tmp_path)
    readers_files(root, blocks)
    monkeypatch.chdir(root)
    before = files(root)
    ran, skipped, unknown, failed, plans, written, unmade = [], {}, [], [], {}, set(), []
    for language, body in blocks:
        if language == "python":
            first = body.splitlines()[0]
            if first in PYTHON_ELSEWHERE:
                skipped[first] = PYTHON_ELSEWHERE[first]
            else:
                exec(compile(body, "README.md", "exec"), {})  # noqa: S102 - the README's own snippet, as typed
                ran.append(first)
            continue
        for command in command_lines(body) if language == "bash" else []:
            words = shlex.split(command)
            read = model_read(words)
            if read is not None and not any(read == d or read.startswith(d + "/") for d in written):
                unmade.append(command)  # it reads a run no README command before it makes
            if words[:2] == ["python", "jobs/export.py"]:
                written.add(words[3])
            if reason_not_run(command) is not None:
                skipped[command] = reason_not_run(command)
            elif words[0] == "python" and words[1].startswith("jobs/"):
                result = run_in_process(words[1].removeprefix("jobs/"), *words[2:], "--dry-run", capsys=capsys,
                                        data_dir=data_dir)
                ran.append(command)
                if result.returncode != 0:
                    failed.append((command, (result.stderr or result.stdout)[-1500:]))
                for directory, fingerprint in re.findall(r"^  output\s+(\S+): .*\[config (\w+)\]$", result.stdout,
                                                         re.M):
                    plans.setdefault(directory, {})[command] = fingerprint
                    written.add(directory)
            else:
                unknown.append(command)
    assert unknown == [], "README commands this test neither runs nor names a reason for"
    assert unmade == [], "README commands that read a run or export no README command before them writes"
    assert failed == []
    jobs = {shlex.split(command)[1] for command in ran if command.startswith("python jobs/")}
    assert {"jobs/finetune.py", "jobs/cotrain.py", "jobs/evaluate.py", "jobs/pretrain.py", "jobs/sweep.py",
            "jobs/study.py"} <= jobs
    # One directory, one config: a README command never resumes, refuses or overwrites another's run.
    assert {d: by for d, by in plans.items() if len(set(by.values())) > 1} == {}
    assert len(plans) >= 10
    assert files(root) == before  # nothing written, nothing changed


def test_a_committed_study_and_the_baselines_rewrite_their_reports_byte_for_byte(tmp_path, monkeypatch, capsys,
                                                                                 data_dir):
    """The README's ``python jobs/study.py --study studies/baselines_sib200_150.yaml`` on its committed, finished
    study (``--report``: every unit finished, so the run is its report) and ``python benchmarks/baselines.py``
    rewrite the committed files as they are: a rerun leaves ``git status`` clean."""
    root = fresh_checkout(tmp_path)
    monkeypatch.chdir(root)
    report = root / "benchmarks/studies/baselines_sib200_150"
    ran = run_in_process("study.py", "--study", "studies/baselines_sib200_150.yaml", "--report", "--no-tracking",
                         capsys=capsys, data_dir=data_dir)
    assert ran.returncode == 0, ran.stderr[-2000:]
    subprocess.run([sys.executable, "benchmarks/baselines.py"], cwd=root, check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(REPO / "platform"), "XLT_DATA_DIR": str(data_dir)})
    for name in ("results.md", "results.json", "results.png", "study.json"):
        assert (report / name).read_bytes() == (REPO / report.relative_to(root) / name).read_bytes(), name
    assert (root / "benchmarks/baselines.md").read_bytes() == (REPO / "benchmarks/baselines.md").read_bytes()
