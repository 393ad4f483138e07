"""``LocalRows`` yields exactly Ray Data's batches of the same rows: blocks as ``ray.data.from_items`` makes them,
Ray's local shuffle drawn from the same seed, the same columns and values."""

import numpy as np
import pyarrow as pa
import pytest

from xlt.engine.rows import LocalRows, shuffled_batches


def rows(n):
    # the row shape of a task (xlt.tasks.row): strings, a missing pair, an int label, a list column
    return [{"id": f"r{i}", "text": "word " * (i % 7 + 1), "text_pair": None, "label": i % 3,
             "views": [f"v{i}"] * (i % 2)} for i in range(n)]


def assert_same_batches(ours, theirs):
    ours, theirs = list(ours), list(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if isinstance(b, pa.Table):  # the same values; an empty list's type is the whole table's, not its block's
            assert a.column_names == b.column_names and a.to_pylist() == b.to_pylist()
            continue
        assert a.keys() == b.keys()
        for key in b:
            assert a[key].dtype == b[key].dtype, key
            assert plain(a[key]) == plain(b[key]), key


def plain(column):
    """A numpy column as comparable Python values (a missing value, NaN, compares equal to itself)."""
    return [repr(np.asarray(x).tolist()) for x in column]


@pytest.mark.parametrize("n, blocks, batch, buffer, seed", [
    (701, 200, 16, 256, 3),    # fine-tuning's SIB-200 run: from_items' 200 blocks, the default buffer
    (701, 200, 16, 256, 4),
    (97, 200, 8, 16, 0),       # fewer rows than blocks: one row a block
    (300, 7, 32, 40, 11),      # blocks larger than the buffer
    (50, 1, 16, 256, 2),       # a served fit: one block
    (65, 200, 16, None, None),  # no shuffle: data order
])
def test_local_rows_yield_ray_datas_batches(ray_cluster, n, blocks, batch, buffer, seed):
    import ray.data

    items = rows(n)
    theirs = ray.data.from_items(items, override_num_blocks=None if blocks == 200 else blocks)
    ours = LocalRows.from_items(items, blocks)
    assert LocalRows.from_dataset(theirs).block_rows == ours.block_rows  # the same blocks
    for fmt in ("numpy", "pyarrow"):
        kwargs = dict(batch_size=batch, batch_format=fmt, local_shuffle_buffer_size=buffer, local_shuffle_seed=seed)
        assert_same_batches(ours.iter_batches(**kwargs), theirs.iter_batches(**kwargs))


def test_the_shuffle_draws_every_row_once_and_depends_on_the_seed():
    blocks = (4,) * 50
    first = np.concatenate(list(shuffled_batches(blocks, 16, 64, 1)))
    assert sorted(first.tolist()) == list(range(200))
    assert not np.array_equal(first, np.concatenate(list(shuffled_batches(blocks, 16, 64, 2))))
    assert np.array_equal(first, np.concatenate(list(shuffled_batches(blocks, 16, 64, 1))))
