"""The co-training loop's state: everything a restarted job needs to continue at the next iteration.

Learners re-fit from pretrained weights every iteration (``xlt.cotrain.learner``), so the state
is bookkeeping only, small and exact:

- ``iteration``: the next iteration to run (its fit comes first);
- ``received[learner]``: the pseudo-labelled rows given to that learner so far, in order, each
  with the iteration and the learner that selected it. A learner's unlabelled pool (Alg. 1's
  U^lm / U^emb) is the whole pool less the rows it selected (``selected``), so the state grows
  with the selections, not with the pool;
- ``history``: one metrics record per (iteration, learner).

It is written atomically (temporary file + rename, or one object put on a store) after every iteration, so a job killed at
any point resumes from the last completed iteration with no pseudo-label lost or duplicated.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..storage import join, read_text, staged

STATE_FILE = "state.json"


@dataclass
class LoopState:
    iteration: int
    received: dict[str, list[dict[str, Any]]]
    history: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def fresh(cls, learners: tuple[str, ...]) -> LoopState:
        return cls(0, {name: [] for name in learners})

    def selected(self, learner: str) -> set[str]:
        """The ids ``learner`` has selected so far: the rows gone from its pool (U^k = U^k \\ S^k)."""
        return {row["id"] for rows in self.received.values() for row in rows if row["selected_by"] == learner}

    def save(self, directory: str | Path) -> str:
        """Write ``state.json`` into ``directory`` (local: temporary file + rename; a URI: one object put,
        which an object store makes visible whole or not at all)."""
        with staged(directory) as local:
            tmp = local / f"{STATE_FILE}.tmp"
            tmp.write_text(json.dumps(asdict(self), indent=1, ensure_ascii=False), encoding="utf-8")
            tmp.replace(local / STATE_FILE)
        return join(directory, STATE_FILE)

    @classmethod
    def load(cls, directory: str | Path) -> LoopState | None:
        path = join(directory, STATE_FILE)
        text = read_text(path)
        if text is None:
            return None
        try:
            fields = json.loads(text)
            fields.pop("pool", None)  # older state files listed each learner's remaining pool ids: derived now
            return cls(**fields)
        except (json.JSONDecodeError, TypeError) as e:
            raise ValueError(f"{path} is not a co-training state file ({e}); move it away to start over") from e
