"""An in-process run's checkpoints (``xlt.engine.session.InProcessRun``) without Ray: the latest
``num_to_keep`` in the run directory and in its list, and a run killed at any point of saving one
leaves a list that names only checkpoints that exist (what a rerun resumes from)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from xlt.engine import session


def checkpoint(tmp_path: Path, name: str) -> SimpleNamespace:
    """A checkpoint directory as ``checkpoints.report`` hands one over (``.path``)."""
    directory = tmp_path / "reported" / name
    directory.mkdir(parents=True)
    (directory / "model.pt").write_text(name)
    return SimpleNamespace(path=str(directory))


def listed(run: Path) -> list[str]:
    return json.loads((run / session.CHECKPOINTS_FILE).read_text())


def test_the_latest_checkpoints_are_kept_listed_and_found_again(tmp_path):
    run = tmp_path / "run"
    reports = []
    callback = SimpleNamespace(after_report=lambda context, metrics, ckpt: reports.append((metrics, ckpt.path)))
    live = session.InProcessRun(str(run), num_to_keep=2, datasets={}, callbacks=[callback])
    for epoch in (1, 2, 3):
        live.report({"epoch": epoch}, checkpoint(tmp_path, f"epoch{epoch}"), f"epoch{epoch}")
    assert listed(run) == ["epoch2", "epoch3"] and sorted(p.name for p in run.iterdir() if p.is_dir()) == listed(run)
    assert (run / "epoch3" / "model.pt").read_text() == "epoch3"
    assert reports[-1] == ([{"epoch": 3}], str(run / "epoch3"))  # rank 0's metrics, the persisted checkpoint
    again = session.InProcessRun(str(run), num_to_keep=2, datasets={})
    assert again.latest().path == str(run / "epoch3")
    with pytest.raises(ValueError, match="names each checkpoint"):
        again.report({}, checkpoint(tmp_path, "unnamed"), None)


@pytest.mark.parametrize("killed_in", ["staged", "remove"])
def test_a_run_killed_while_saving_lists_only_checkpoints_that_exist(tmp_path, monkeypatch, killed_in):
    run = tmp_path / "run"
    live = session.InProcessRun(str(run), num_to_keep=1, datasets={})
    live.report({}, checkpoint(tmp_path, "epoch1"), "epoch1")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(session, killed_in, killed)
    with pytest.raises(KeyboardInterrupt):
        live.report({}, checkpoint(tmp_path, "epoch2"), "epoch2")
    # Killed before the list was saved: it still names epoch 1, which is still there; after: epoch 2.
    assert listed(run) == (["epoch1"] if killed_in == "staged" else ["epoch2"])
    assert all((run / name / "model.pt").is_file() for name in listed(run))
