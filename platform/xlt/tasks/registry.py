"""The one registry of task types: ``type:`` in a task config -> its checks and its reader.

A type is three functions over a ``TaskConfig``: ``check`` (the keys it needs, raising
``ConfigError``), ``found`` (language code -> the name the data uses for it) and ``read`` (the
examples of one role's split in one language, counting rows ``unknown_labels: drop`` left out into its last
argument). Presets (SIB-200, XNLI, PAWS-X, NusaX) are not
types: they are configs of these (``configs/tasks/``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import ConfigError
from . import files, hf

if TYPE_CHECKING:
    from ..data.records import Example
    from .config import TaskConfig


@dataclass(frozen=True)
class TaskType:
    check: Callable[[TaskConfig], None]
    found: Callable[[TaskConfig, Path | None], dict[str, str]]
    read: Callable[[TaskConfig, Path | None, str, str, Sequence[str] | None, dict[str, str], dict[str, int]],
                   list[Example]]


TASK_TYPES: dict[str, TaskType] = {
    "files": TaskType(files.check_files, files.found_languages, files.read),
    "hf": TaskType(hf.check_hf, hf.found_languages, hf.read),
}


def task_type(cfg: TaskConfig) -> TaskType:
    """The registered type of ``cfg``; an unknown or missing type names the valid ones."""
    if cfg.type not in TASK_TYPES:
        got = f"task.type={cfg.type!r} is not valid" if cfg.type else "task.type is missing"
        raise ConfigError(f"{got}: expected one of {', '.join(TASK_TYPES)} (see configs/tasks/ for presets: "
                          "task: {include: tasks/xnli.yaml})")
    return TASK_TYPES[cfg.type]


def check_type(cfg: TaskConfig) -> None:
    task_type(cfg).check(cfg)
