"""Tasks: what a job trains and evaluates on, chosen in its config by ``task: {type: ...}``.

- ``config``: ``TaskConfig`` (fields, labels, languages, splits, translation links, dropped values)
- ``registry``: task types (``files``, ``hf``) -> checks and readers; lists the valid types on error
- ``files`` / ``hf``: the readers; ``rows``: the row pipeline both share
- ``task``: ``load_task`` -> ``Task`` (resolved languages and labels; examples by role and language)

No job names a dataset: SIB-200, XNLI, PAWS-X and NusaX are presets in ``configs/tasks/``.
"""

from .config import ROLES, Fields, Splits, SplitRef, TaskConfig
from .registry import TASK_TYPES
from .task import ROW_COLUMNS, Task, load_task, row

__all__ = ["ROLES", "ROW_COLUMNS", "TASK_TYPES", "Fields", "SplitRef", "Splits", "Task", "TaskConfig",
           "load_task", "row"]
