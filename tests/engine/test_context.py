"""The run context: an in-process run's checkpoints (``xlt.engine.context.InProcessContext``) without
Ray (the latest ``num_to_keep`` in the run directory and in its list, and a run killed at any point of
saving one leaves a list that names only checkpoints that exist: what a rerun resumes from); and no
run kept in the engine's module state."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from xlt.engine import context


def checkpoint(tmp_path: Path, name: str) -> SimpleNamespace:
    """A checkpoint directory as ``checkpoints.report`` hands one over (``.path``)."""
    directory = tmp_path / "reported" / name
    directory.mkdir(parents=True)
    (directory / "model.pt").write_text(name)
    return SimpleNamespace(path=str(directory))


def listed(run: Path) -> list[str]:
    return json.loads((run / context.CHECKPOINTS_FILE).read_text())


def test_the_latest_checkpoints_are_kept_listed_and_found_again(tmp_path):
    run = tmp_path / "run"
    reports = []
    callback = SimpleNamespace(after_report=lambda context, metrics, ckpt: reports.append((metrics, ckpt.path)))
    live = context.InProcessContext(str(run), num_to_keep=2, datasets={}, callbacks=[callback])
    for epoch in (1, 2, 3):
        live.report({"epoch": epoch}, checkpoint(tmp_path, f"epoch{epoch}"), f"epoch{epoch}")
    assert listed(run) == ["epoch2", "epoch3"] and sorted(p.name for p in run.iterdir() if p.is_dir()) == listed(run)
    assert (run / "epoch3" / "model.pt").read_text() == "epoch3"
    assert reports[-1] == ([{"epoch": 3}], str(run / "epoch3"))  # rank 0's metrics, the persisted checkpoint
    again = context.InProcessContext(str(run), num_to_keep=2, datasets={})
    assert again.latest_checkpoint().path == str(run / "epoch3")
    with pytest.raises(ValueError, match="names each checkpoint"):
        again.report({}, checkpoint(tmp_path, "unnamed"), None)


@pytest.mark.parametrize("killed_in", ["staged", "remove"])
def test_a_run_killed_while_saving_lists_only_checkpoints_that_exist(tmp_path, monkeypatch, killed_in):
    run = tmp_path / "run"
    live = context.InProcessContext(str(run), num_to_keep=1, datasets={})
    live.report({}, checkpoint(tmp_path, "epoch1"), "epoch1")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(context, killed_in, killed)
    with pytest.raises(KeyboardInterrupt):
        live.report({}, checkpoint(tmp_path, "epoch2"), "epoch2")
    # Killed before the list was saved: it still names epoch 1, which is still there; after: epoch 2.
    assert listed(run) == (["epoch1"] if killed_in == "staged" else ["epoch2"])
    assert all((run / name / "model.pt").is_file() for name in listed(run))


# Module-level values the engine may hold: immutable constants, type aliases, loggers, and torch's lock.
IMMUTABLE = (ast.Constant, ast.Tuple, ast.Subscript, ast.Name, ast.Attribute, ast.BinOp)
ALLOWED_CALLS = {"logging.getLogger", "TypeVar", "threading.Lock"}
ALLOWED_LOCKS = {"context.py": {"TORCH_STATE"}}  # guards torch's generator and threads, not a run's state


def module_state(path: Path) -> list[str]:
    """What ``path`` keeps at module level that a run could be parked in: ``global`` statements, and
    module-level names bound to anything but a constant, a type alias, a logger or an allowed lock."""
    found = []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.append(f"{path.name}:{node.lineno}: global {', '.join(node.names)}")
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        value = node.value
        if isinstance(value, ast.Call):
            call = ast.unparse(value.func)
            if call in ALLOWED_CALLS and (call != "threading.Lock" or names <= ALLOWED_LOCKS.get(path.name, set())):
                continue
        elif isinstance(value, IMMUTABLE) or names == {"__all__"}:
            continue
        found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_the_engine_keeps_no_run_in_module_state():
    """A train function gets its run as an argument (``RunContext``); a module-level session (a
    ``threading.local``, a dict of runs, a ``global`` rebound) fails here."""
    engine = Path(context.__file__).parent
    assert [line for path in sorted(engine.glob("*.py")) for line in module_state(path)] == []


def test_the_module_state_check_finds_a_session(tmp_path):
    source = tmp_path / "session.py"
    source.write_text("import threading\n_current = threading.local()\nRUNS = {}\nLOCK = threading.Lock()\n"
                      "def start(run):\n    global _run\n    _run = run\n")
    assert [line.split(":")[1] for line in module_state(source)] == ["6", "2", "3", "4"]


def test_torch_threads_are_set_inside_and_restored_after():
    import torch

    before = torch.get_num_threads()
    with context.torch_threads(before + 1):
        assert torch.get_num_threads() == before + 1 and context.TORCH_STATE.locked()
    assert torch.get_num_threads() == before and not context.TORCH_STATE.locked()
