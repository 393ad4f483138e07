"""A run's rows held in its own process: ``LocalRows``, what an in-process run (``scaling.num_workers: 0``) and a
served fit iterate instead of a Ray dataset.

A Ray dataset iterated in the training process runs Ray Data's executor beside the steps and calls its actors
(stats, autoscaling requests) throughout, and needs a local Ray, whose processes wake every few milliseconds. On
a machine whose cores are all torch's, each wake-up preempts one of torch's threads, and the other waits for it
at the next barrier: held rows and no Ray took an in-process fine-tuning from 0.90 to 0.96 of HF Trainer's
examples/s in fp32 and from 0.91 to 1.01 in bf16 on 2 cores (``benchmarks/step_vs_hf_trainer.md``). Rows the process holds anyway (a task's examples, a fit's shard)
need none of it.

``LocalRows`` yields exactly the batches a Ray dataset of the same blocks yields, so a run's loss curve does not
depend on which of the two fed it: ``from_items`` splits rows into blocks as ``ray.data.from_items`` does, and
``iter_batches`` draws Ray Data's local shuffle (Ray 2.60's ``ShufflingBatcher``, replayed over row indices:
``shuffled_batches``) and formats each batch with Ray's own ``BlockAccessor`` (``tests/engine/test_rows.py``
compares both on a running Ray, so an upgrade of Ray that changes its shuffle fails there).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

# ray.data.from_items' block count below 100 CPUs (DataContext.read_op_min_num_blocks; above, 2 per CPU)
FROM_ITEMS_BLOCKS = 200
# Ray 2.60's ShufflingBatcher: it takes a batch once its shuffled buffer holds half the minimum buffer, and
# reshuffles what it holds with what came in once it holds 1.5 times the minimum
COMPACTION_THRESHOLD = 0.5
COMPACTION_RATIO = 1.5


@dataclass(frozen=True)
class LocalRows:
    """Rows in this process as Ray Data blocks (``block_rows`` rows each, in order) of one Arrow ``table``."""

    table: pa.Table
    block_rows: tuple[int, ...]

    @classmethod
    def from_items(cls, items: Sequence[Mapping[str, Any]], blocks: int = FROM_ITEMS_BLOCKS) -> LocalRows:
        """``items`` in ``blocks`` blocks as ``ray.data.from_items`` splits them (at most one per item; the remainder
        spread over the first), each converted to Arrow as Ray's block builder converts its rows (its builder itself
        would start Ray: it sizes rows with Ray's serializer)."""
        import pyarrow as pa
        from ray.data._internal.arrow_block import ArrowBlockBuilder

        n = min(len(items), blocks)
        size, remainder = divmod(len(items), n) if n else (0, 0)
        tables = []
        for i in range(n):
            chunk = items[i * size + min(i, remainder):(i + 1) * size + min(i + 1, remainder)]
            names = dict.fromkeys(name for item in chunk for name in item)  # missing values are None, as Ray fills them
            tables.append(ArrowBlockBuilder._table_from_pydict({name: [item.get(name) for item in chunk]
                                                               for name in names}))
        table = pa.concat_tables(tables, promote_options="default") if tables else pa.table({})
        return cls(table, tuple(t.num_rows for t in tables))

    @classmethod
    def from_dataset(cls, dataset: ray.data.Dataset) -> LocalRows:
        """The blocks of ``dataset`` (run here: e.g. rows through an augmentation UDF), fetched into this process."""
        import pyarrow as pa
        import ray

        tables = [ray.get(ref) for ref in dataset.to_arrow_refs()]
        return cls(pa.concat_tables(tables, promote_options="default"), tuple(t.num_rows for t in tables))

    def count(self) -> int:
        return self.table.num_rows

    def iter_batches(self, *, batch_size: int, batch_format: str = "numpy", local_shuffle_buffer_size: int | None = None,
                     local_shuffle_seed: int | None = None) -> Iterator[Any]:
        """Ray Data's ``iter_batches`` over these blocks: ``batch_size`` rows a batch (the last shorter), in data
        order, or with ``local_shuffle_buffer_size`` drawn as Ray's local shuffle draws them from ``local_shuffle_seed``."""
        from ray.data.block import BlockAccessor

        if local_shuffle_buffer_size is None:
            n = self.count()
            batches: Iterator[np.ndarray] = (np.arange(i, min(i + batch_size, n)) for i in range(0, n, batch_size))
        else:
            batches = shuffled_batches(self.block_rows, batch_size, local_shuffle_buffer_size, local_shuffle_seed)
        for rows in batches:
            yield BlockAccessor.for_block(self.table.take(rows)).to_batch_format(batch_format)


def shuffled_batches(block_rows: Sequence[int], batch_size: int, buffer: int, seed: int | None) -> Iterator[np.ndarray]:
    """The row indices of each batch Ray Data's local shuffle yields over blocks of ``block_rows`` rows (Ray 2.60's
    ``_BatchingIterator`` over a ``ShufflingBatcher``): blocks go into a buffer; once it holds enough, the rows not
    yet shuffled and those left of the last shuffle are permuted together (one ``numpy`` generator of ``seed``
    throughout) and batches are taken from the front of the permutation."""
    buffer = max(buffer, batch_size)
    least_shuffled = max(1, int(buffer * COMPACTION_THRESHOLD))
    reshuffle_at = int(buffer * COMPACTION_RATIO)
    rng = np.random.default_rng(seed)
    starts = np.cumsum([0, *block_rows])
    blocks = iter([np.arange(start, start + n) for start, n in zip(starts, block_rows) if n > 0])
    pending: list[np.ndarray] = []  # added, not yet shuffled
    waiting = 0  # their rows
    shuffled, head = np.empty(0, dtype=np.int64), 0  # the last permutation and how much of it was taken
    done = False
    while True:
        left = len(shuffled) - head
        rows = left + waiting
        ready = rows >= batch_size and (done or left >= least_shuffled or rows - batch_size >= reshuffle_at)
        if ready or (done and rows > 0):
            if waiting and (done or left <= least_shuffled):
                together = np.concatenate([*pending, shuffled[head:]])
                shuffled, head, pending, waiting = together[rng.permutation(len(together))], 0, [], 0
            yield shuffled[head:head + batch_size]
            head += len(shuffled[head:head + batch_size])
        elif not done:
            block = next(blocks, None)
            if block is None:
                done = True
            else:
                pending.append(block)
                waiting += len(block)
        else:
            return


def run_rows(items: Sequence[Mapping[str, Any]], in_process: bool) -> LocalRows | ray.data.Dataset:
    """A run's dataset of ``items``: held here for a run in this process (``scaling.num_workers: 0``), else a Ray
    dataset for its workers."""
    if in_process:
        return LocalRows.from_items(items)
    import ray.data

    return ray.data.from_items(list(items))


def held_here(datasets: Mapping[str, LocalRows | ray.data.Dataset]) -> dict[str, LocalRows]:
    """``datasets`` fetched into this process, for a run in it: those made on Ray (views through a UDF, annotated
    pairs) by their blocks."""
    return {name: ds if isinstance(ds, LocalRows) else LocalRows.from_dataset(ds) for name, ds in datasets.items()}
