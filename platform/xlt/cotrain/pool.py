"""The unlabelled pool U of co-training: in Ray's object store, pseudo-labelled and selected as it streams.

The driver never holds the pool. ``count_pool`` reads it once before Ray starts, one language at
a time, so a bad row fails the job before any work (and keeps only the counts); ``put_pool``
reads it again once Ray runs, one language at a time, and puts it into the object store as Arrow
blocks of one inference batch each (spilled to disk when the store is full; any node's actors can
read them). A block is what a labelling actor labels in one task and what its restart labels again
when its node is lost, so one batch a block keeps the pass streaming and a retry small. Each
iteration the loop (``xlt.cotrain.loop.label_pool``) streams those blocks through the job's labellers,
which predict with both learners (``xlt.inference.labellers``, a mapping of specs), and
``stream_selections`` hands every batch to both learners' ``Selection``: the driver keeps
O(selection size) rows, not O(pool).

That every pool row got exactly one prediction (none lost to a failed node, none doubled by a
retry) is checked on every pass in O(1) memory: the count of rows and their ``fingerprint``, a
sum of keyed 64-bit hashes of their ids, must equal the stored pool's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..tasks import Task
from ..data.sample import draw_keys
from ..ray_internals import dataset_of_blocks, stored_block
from .selection import Selection

if TYPE_CHECKING:
    import pyarrow as pa
    import ray
    import ray.data

# A pool row: what pseudo-labelling reads (text, text_pair), what the exchange hands on (id, lang),
# and the gold label where the data has one (for scoring the pseudo-labels only; never trained on).
POOL_COLUMNS: tuple[str, ...] = ("id", "text", "text_pair", "lang", "gold")
_FINGERPRINT_SEED = (0x786C74,)


def fingerprint(ids: Any) -> int:
    """The sum modulo 2^64 of the ids' keyed hashes: equal for the same multiset of ids in any order,
    different (but for odds of 2^-64) when an id is missing or doubled."""
    return int(draw_keys(ids, _FINGERPRINT_SEED).sum(dtype=np.uint64)) if len(ids) else 0


@dataclass(frozen=True)
class StoredPool:
    """The pool's Arrow blocks in the object store and their Ray Data metadata, with its row count
    and ``fingerprint``."""

    blocks: list[Any]
    metadata: list[Any]
    rows: int
    fingerprint: int

    def dataset(self) -> ray.data.Dataset:
        """A dataset over the stored blocks, made without running anything (``xlt.ray_internals``: a task
        per block to read its metadata would never get a CPU while the learners and the actors hold every
        one, tests/cotrain/test_loop.py)."""
        return dataset_of_blocks(self.blocks, self.metadata)


@dataclass
class Pass:
    """What a pseudo-labelling pass saw: rows, their ``fingerprint``, the workers (actor, node)
    that predicted them, in the order their first rows came (an actor that Ray restarted on another
    node is a worker there too), and the precisions they computed in."""

    rows: int = 0
    fingerprint: int = 0
    workers: dict[tuple[str | None, str | None], None] = field(default_factory=dict)  # an ordered set
    precisions: dict[str, None] = field(default_factory=dict)  # an ordered set

    def placement(self) -> list[str | None]:
        """The node of each worker (``xlt.placement``)."""
        return [node for _, node in self.workers]

    def check(self, pool: StoredPool) -> None:
        if (self.rows, self.fingerprint) != (pool.rows, pool.fingerprint):
            raise RuntimeError(f"pseudo-labelling returned {self.rows} rows for a pool of {pool.rows}"
                               + ("" if self.rows != pool.rows else " with other ids")
                               + ": a row was lost or predicted twice; no selection is made from such a pass")


def pool_rows(task: Task, lang: str, limit: int, disjoint: bool = False) -> list[dict[str, Any]]:
    """The pool rows of one target language (at most ``limit``, 0 = all; ``disjoint``: ``xlt.tasks.Task.pool``),
    read without caching them."""
    return [{"id": ex.id, "text": ex.text, "text_pair": ex.text_pair, "lang": ex.lang, "gold": ex.label}
            for ex in task.pool(lang, limit, disjoint=disjoint, keep=False)]


def count_pool(task: Task, limit: int, disjoint: bool = False) -> dict[str, int]:
    """Rows per target language, every row read and checked; nothing kept but the counts."""
    return {lang: len(pool_rows(task, lang, limit, disjoint)) for lang in task.target_langs}


def pool_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, pa.string()) for name in POOL_COLUMNS])


def put_pool(task: Task, limit: int, block_rows: int, disjoint: bool = False) -> StoredPool:
    """The pool as Arrow tables of at most ``block_rows`` rows in the object store, language by language."""
    import pyarrow as pa

    blocks, metadata, rows, total = [], [], 0, 0
    for lang in task.target_langs:
        lang_rows = pool_rows(task, lang, limit, disjoint)
        for start in range(0, len(lang_rows), block_rows):
            table = pa.Table.from_pylist(lang_rows[start:start + block_rows], schema=pool_schema())
            block, block_metadata = stored_block(table)
            blocks.append(block)
            metadata.append(block_metadata)
            rows += table.num_rows
            total += fingerprint(table.column("id").to_numpy(zero_copy_only=False))
    return StoredPool(blocks, metadata, rows, total % 2**64)


def stream_selections(batches: Any, selections: Mapping[str, Selection], *, partners: Mapping[str, str] | None = None,
                      by: Sequence[str] = (), labels: Sequence[str] = (),
                      done: Callable[[int], Any] = lambda n: None) -> Pass:
    """Feed every pseudo-labelled batch (``pyarrow.Table`` with ``POOL_COLUMNS``, each learner's
    ``<name>_pseudo_label``, ``<name>_confidence`` and ``<name>_probabilities``, ``worker``, ``node`` and
    ``precision``) to each learner's selection; ``partners[name]``: whose labels its agreement compares
    with; ``by``: the learners whose combined probabilities (``xlt.cotrain.classifier.combine``, over
    ``labels``) every selection takes its label and confidence from, instead of its own learner's;
    ``done(n)`` after each batch of n rows. Returns what the pass saw (``Pass``), for ``Pass.check``.

    Only the columns used are converted from Arrow (the probabilities only with ``by``), batch by batch."""
    from ..inference import prediction_column
    from ..models.classifier import combine

    seen = Pass()
    for batch in batches:
        rows = {name: batch.column(name).to_numpy(zero_copy_only=False) for name in POOL_COLUMNS}
        own = {name: batch.column(prediction_column("pseudo_label", name)).to_numpy(zero_copy_only=False)
               for name in selections}
        if by:
            probabilities = combine([np.stack(batch.column(prediction_column("probabilities", name))
                                              .to_numpy(zero_copy_only=False)) for name in by])
            combined = (np.asarray(labels, dtype=object)[probabilities.argmax(axis=1)], probabilities.max(axis=1))
        for name, selection in selections.items():
            if by:
                label, confidence = combined
            else:
                label = own[name]
                confidence = batch.column(prediction_column("confidence", name)).to_numpy(zero_copy_only=False)
            partner = own[partners[name]] if partners and name in partners else None
            selection.offer(rows, label, np.asarray(confidence), partner)
        seen.workers.update(dict.fromkeys(zip(batch.column("worker").to_pylist(), batch.column("node").to_pylist())))
        seen.precisions.update(dict.fromkeys(batch.column("precision").unique().to_pylist()))
        seen.rows += batch.num_rows
        seen.fingerprint = (seen.fingerprint + fingerprint(rows["id"])) % 2**64
        done(batch.num_rows)
    return seen
