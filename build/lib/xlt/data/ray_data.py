"""Ray Data plumbing shared by every batch UDF: records in, batch cells out, an actor pool (or this
process) to map with.

- ``to_ray_dataset``: a list of records -> ``ray.data.Dataset`` (one column per record field).
- ``batch_column`` / ``column_names`` / ``optional_str`` / ``object_array``: read and write the
  cells of a batch, whether it is a dict of numpy arrays (``ds.take_batch()``, a UDF called by
  hand in a test) or a ``pyarrow.Table`` (what ``map_with_udf`` hands a UDF).
- ``map_with_udf``: ``ds.map_batches(udf)`` on an actor pool, one output row per input
  row, pyarrow batches so that the other columns pass through untouched; with no actor, the
  same UDF over the same batches in this process.
- ``settle_on_driver_node``: Ray Data's per-cluster bookkeeping on the driver's node.

Ray and pyarrow are imported inside the functions: reading data must not pay their import
cost (or need a cluster) in tools and tests that never build a dataset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xlt.data.records import Record, as_rows

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data


def settle_on_driver_node() -> None:
    """Execute one tiny dataset in this, the driver's, process.

    Ray Data creates its per-cluster stats actor, detached, on the node of the first process that
    executes a dataset. On a cluster where a Ray Train worker or a Tune trial gets there first
    (co-training's learners read their evaluation rows before the driver pseudo-labels), that is
    a worker node, which then holds a live actor for good: it is never idle, and the autoscaler
    never removes it (tests/cluster/test_autoscaling.py).
    """
    import ray.data

    context = ray.data.DataContext.get_current()
    bars, context.enable_progress_bars = context.enable_progress_bars, False
    try:
        ray.data.range(1).materialize()
    finally:
        context.enable_progress_bars = bars


def to_ray_dataset(records: Sequence[Record]) -> ray.data.Dataset:
    """Records -> ``ray.data.Dataset`` with one column per record field."""
    rows = as_rows(records)
    if not rows:
        raise ValueError("no records to put in a Ray Dataset; the reader returned an empty list")
    import ray.data

    return ray.data.from_items(rows)


def optional_str(value: Any) -> str | None:
    """A cell as ``str`` or ``None``: numpy batches turn an all-null Arrow column into float NaN."""
    return value if isinstance(value, str) else None


def batch_column(batch: dict[str, np.ndarray] | pa.Table, name: str) -> list[Any] | None:
    """Column ``name`` of a numpy-dict or pyarrow batch as a Python list; ``None`` if absent."""
    import pyarrow as pa

    if isinstance(batch, pa.Table):
        return batch.column(name).to_pylist() if name in batch.column_names else None
    if isinstance(batch, dict):
        return list(batch[name]) if name in batch else None
    raise TypeError(f"expected a batch as dict of numpy arrays or pyarrow.Table, got {type(batch).__name__}; "
                    "use map_batches(..., batch_format='numpy') or batch_format='pyarrow'")


def column_names(batch: dict[str, np.ndarray] | pa.Table) -> list[str]:
    """The column names of a numpy-dict or pyarrow batch, in order (for error messages)."""
    return list(batch.column_names if hasattr(batch, "column_names") else batch.keys())


def object_array(values: Sequence[Any]) -> np.ndarray:
    """A 1-D object array holding ``values`` as they are (lists stay lists, one per row)."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # element-wise: ``out[:] = values`` would broadcast equal-length lists
        out[i] = value
    return out


def map_with_udf(ds: ray.data.Dataset, udf: type, constructor_kwargs: dict, *, batch_size: int,
                 num_actors: int | tuple[int, int], num_cpus: float, num_gpus: float) -> ray.data.Dataset:
    """``ds.map_batches(udf)`` on an actor pool (a size, or ``(min, max)`` to autoscale), one output
    row per input row, pyarrow batches so that the other columns pass through untouched: lazy.

    ``num_actors=0``: the UDF is built here and maps the same batches in this process, now
    (``num_cpus`` and ``num_gpus`` reserve nothing), and the dataset holds its output. An actor
    costs seconds to start (a process, its imports, the UDF's construction), which a few hundred
    rows of dictionary lookups never pay back (benchmarks/test_time.md)."""
    import ray.data

    if num_actors == 0:
        mapper = udf(**constructor_kwargs)
        tables = [mapper(batch) for batch in ds.iter_batches(batch_size=batch_size, batch_format="pyarrow")]
        # from_blocks, not from_arrow: from_arrow reads each table's metadata in a task, which
        # waits forever where this process's own reservation holds the last CPU (a sweep's trial).
        return ray.data.from_blocks(tables) if tables else ds
    if isinstance(num_actors, tuple):
        compute = ray.data.ActorPoolStrategy(min_size=num_actors[0], max_size=num_actors[1])
    else:
        compute = ray.data.ActorPoolStrategy(size=num_actors)
    return ds.map_batches(
        udf,
        fn_constructor_kwargs=constructor_kwargs,
        batch_format="pyarrow",
        batch_size=batch_size,
        compute=compute,
        num_cpus=num_cpus,
        num_gpus=num_gpus,
        udf_modifying_row_count=False,
    )
