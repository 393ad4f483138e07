"""The presets of ``configs/`` as the tests read them: tasks (``configs/tasks/``), bitext sources
(``configs/bitext/``) and mining corpora (``configs/mining/``), with the tests' changes merged over."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from conftest import REPO
from xlt.config import from_dict, read_yaml
from xlt.tasks import BitextConfig, MiningConfig, Task, TaskConfig, load_task

CONFIGS = REPO / "configs"


def task_config(name: str, **changes: Any) -> TaskConfig:
    return dataclasses.replace(from_dict(TaskConfig, read_yaml(CONFIGS / "tasks" / f"{name}.yaml"), prefix="task."),
                               **changes)


def task(name: str, data_dir: Path, **changes: Any) -> Task:
    """``configs/tasks/<name>.yaml`` loaded on ``data_dir``."""
    return load_task(task_config(name, **changes), data_dir)


def bitext(name: str, **changes: Any) -> BitextConfig:
    """``configs/bitext/<name>.yaml`` with ``changes`` (``langs=("de",)``)."""
    return dataclasses.replace(from_dict(BitextConfig, read_yaml(CONFIGS / "bitext" / f"{name}.yaml")), **changes)


def mining(name: str) -> MiningConfig:
    return from_dict(MiningConfig, read_yaml(CONFIGS / "mining" / f"{name}.yaml"))
