"""An epoch's micro-batches with ``optim.group_by_length``: the same rows and number of micro-batches,
each of rows of similar length, in an order drawn from the epoch's seed."""

from dataclasses import dataclass, field

import numpy as np
import pytest

from xlt.engine import OptimSettings
from xlt.engine.loop import epoch_batches


def row_batches(rows, size, seed):
    """``rows`` permuted with ``seed``, in batches of columns (as Ray Data's numpy batches)."""
    order = np.random.default_rng(seed).permutation(len(rows))
    for start in range(0, len(rows), size):
        chunk = [rows[i] for i in order[start:start + size]]
        yield {key: np.array([row[key] for row in chunk], dtype=object) for key in chunk[0]}


class ByLength:
    batch_format = "numpy"

    def lengths(self, training, batch):
        return [len(t) for t in batch["text"]]


@dataclass(frozen=True)
class Cfg:
    optim: OptimSettings = field(default_factory=lambda: OptimSettings(batch_size=4, group_by_length=3))


class Rows:
    """Rows read as Ray Data reads a shard: ``iter_batches`` of a permutation drawn from the seed."""

    def __init__(self, rows):
        self.rows = rows

    def iter_batches(self, batch_size, batch_format, local_shuffle_buffer_size, local_shuffle_seed):
        return row_batches(self.rows, batch_size, local_shuffle_seed)


def micro_batches(rows, cfg, seed):
    return list(epoch_batches(Rows(rows), ByLength(), None, cfg, seed))


def test_grouped_micro_batches_hold_rows_of_similar_length():
    rng = np.random.default_rng(0)
    rows = [{"text": "x" * int(n), "id": i} for i, n in enumerate(rng.integers(1, 200, size=30))]
    cfg = Cfg()
    grouped = micro_batches(rows, cfg, seed=5)
    plain = micro_batches(rows, Cfg(OptimSettings(batch_size=4)), seed=5)
    assert len(grouped) == len(plain) == 8  # ceil(30 / 4): only the last mega-batch (of 12 rows) is short
    assert sorted(i for b in grouped for i in b["id"]) == list(range(30))
    spread = [max(map(len, b["text"])) - min(map(len, b["text"])) for b in grouped]
    random_spread = [max(map(len, b["text"])) - min(map(len, b["text"])) for b in plain]
    assert sum(spread) < sum(random_spread) / 2
    # Within a mega-batch of 12 rows, each micro-batch is a run of the rows sorted by length.
    first_mega = [i for b in micro_batches(rows, cfg, seed=5)[:3] for i in b["id"]]
    lengths = {r["id"]: len(r["text"]) for r in rows}
    for b in grouped[:3]:
        ranks = sorted(sorted(first_mega, key=lambda i: -lengths[i]).index(i) for i in b["id"])
        assert ranks == list(range(ranks[0], ranks[0] + len(ranks)))
    assert [list(b["id"]) for b in micro_batches(rows, cfg, seed=5)] == [list(b["id"]) for b in grouped]
    assert [list(b["id"]) for b in micro_batches(rows, cfg, seed=6)] != [list(b["id"]) for b in grouped]


def test_grouping_needs_row_lengths():
    class NoLengths(ByLength):
        def lengths(self, training, batch):
            return None

    with pytest.raises(ValueError, match="group_by_length"):
        list(epoch_batches(Rows([{"text": "a"}]), NoLengths(), None, Cfg(), 0))
    with pytest.raises(ValueError, match="optim.group_by_length"):
        OptimSettings(group_by_length=-1)
