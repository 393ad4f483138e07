"""Tasks: what a job trains and evaluates on, chosen in its config by ``task: {type: ...}``, and the
parallel text it aligns on or retrieves from.

- ``config``: ``TaskConfig`` (fields, labels, languages, splits, translation links, dropped values)
- ``registry``: task types (``files``, ``hf``) -> checks and readers; lists the valid types on error
- ``files`` / ``hf``: the readers; ``rows``: the row pipeline both share
- ``task``: ``load_task`` -> ``Task`` (resolved languages and labels; examples by role and language)
- ``bitext``: ``BitextConfig`` (``lines``, ``files``, ``hf``, ``task``) -> ``read_bitext`` -> pairs
- ``mining``: ``MiningConfig`` -> ``load_mining`` -> a bitext-mining corpus with its gold pairs

No job names a dataset: SIB-200, XNLI, PAWS-X and NusaX are presets in ``configs/tasks/``; Tatoeba,
NTREX-128 and SIB-200's translations presets in ``configs/bitext/``; BUCC 2018 in ``configs/mining/``.
"""

from .bitext import BitextConfig, bitext_languages, read_bitext
from .config import ROLES, Fields, Splits, SplitRef, TaskConfig
from .mining import MiningConfig, load_mining
from .registry import TASK_TYPES
from .task import ROW_COLUMNS, Task, load_task, row

__all__ = ["ROLES", "ROW_COLUMNS", "TASK_TYPES", "BitextConfig", "Fields", "MiningConfig", "SplitRef", "Splits",
           "Task", "TaskConfig", "bitext_languages", "load_mining", "load_task", "read_bitext", "row"]
