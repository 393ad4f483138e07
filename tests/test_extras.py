"""The optional packages: each names an extra of pyproject.toml that installs it, none is imported when a
module of xlt is, and a feature whose package is absent refuses in one line naming the extra."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from xlt.cli import run_job
from xlt.extras import EXTRAS, MissingExtra, require

REPO = Path(__file__).resolve().parents[1]


def test_each_optional_package_is_installed_by_the_extra_it_names():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    installs = {extra: {spec.split("==")[0].split("[")[0].lower() for spec in specs} for extra, specs in extras.items()}
    for module, extra in EXTRAS.items():
        distributions = {name.lower() for name in packages_distributions()[module]}
        assert distributions & installs[extra], (module, extra, distributions)
    (everything,) = extras["all"]
    assert set(EXTRAS.values()) <= set(everything.removeprefix("xlt[").removesuffix("]").split(","))  # make install


def test_no_module_of_xlt_imports_an_optional_package_when_it_is_imported():
    """Module-level imports only: a feature imports its package when it runs (``require``)."""
    found = []
    for path in sorted((REPO / "platform" / "xlt").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.relative_to(REPO)}: {n}" for n in names if n.partition(".")[0] in EXTRAS]
    assert found == []


def test_a_missing_package_is_refused_in_one_line_naming_its_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna now fails as when it is not installed
    with pytest.raises(MissingExtra, match=r"^the optuna searcher needs optuna, which is not installed: "
                                           r"pip install 'xlt\[sweep\]' \(--searcher random runs without it\)$"):
        require("optuna", "the optuna searcher", "--searcher random runs without it")

    from xlt.tracking import Tracker

    monkeypatch.setitem(sys.modules, "mlflow", None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit:
        run_job(lambda: Tracker("finetune", "run", tmp_path / "run"))
    assert exit.value.code == 2
    assert capsys.readouterr().err == ("error: tracking needs mlflow, which is not installed: pip install "
                                       "'xlt[tracking]' (or run the job with --no-tracking)\n")
    assert not (tmp_path / "results").exists()  # refused before anything was written
    Tracker("finetune", "run", tmp_path / "run", enabled=False).close()  # --no-tracking needs no MLflow


def test_a_broken_package_is_not_taken_for_a_missing_one():
    with pytest.raises(ModuleNotFoundError) as e:
        require("xlt.no_such_module", "a feature")
    assert not isinstance(e.value, MissingExtra)
