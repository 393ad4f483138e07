"""Ray's private APIs that xlt uses, each behind one function here, so that a Ray upgrade that moves one
breaks in this module and its tests (``tests/test_ray_internals.py``), not across the rooms.

Each is used for a reason the public API does not serve, named in its docstring; the imports are lazy,
as Ray is a heavy import and only a running job needs it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ray.data


def dataset_of_blocks(blocks: Sequence[Any], metadata: Sequence[Any]) -> ray.data.Dataset:
    """A materialised dataset over Arrow blocks already in the object store (``ObjectRef``s) and their
    ``BlockMetadataWithSchema``, made without running anything: ``ray.data.from_blocks``' plan
    (Ray 2.60) over refs. ``ray.data.from_arrow_refs`` runs a task per block to read its metadata, and
    such a task never gets a CPU while co-training's learners and labelling actors hold every one."""
    from ray.data._internal.logical.interfaces import LogicalPlan
    from ray.data._internal.logical.operators import FromBlocks
    from ray.data._internal.stats import DatasetStats
    from ray.data.context import DataContext
    from ray.data.dataset import MaterializedDataset

    stats = DatasetStats(metadata={"FromBlocks": list(metadata)}, parent=None)
    context = DataContext.get_current().copy()
    return MaterializedDataset(LogicalPlan(FromBlocks(list(blocks), list(metadata)), context), context, stats)


def stored_block(table: Any) -> tuple[Any, Any]:
    """An Arrow ``table`` put into the object store, and the metadata ``dataset_of_blocks`` needs of it
    (``ray.data.block.BlockMetadataWithSchema``, which only Ray Data's internals build)."""
    import ray
    from ray.data.block import BlockMetadataWithSchema

    return ray.put(table), BlockMetadataWithSchema.from_block(table)


def autoscaler_max_resources() -> Mapping[str, float]:
    """The most of each resource the cluster's autoscaler can start (its node types), ``{}`` without an
    autoscaler: the question Ray Train asks before it waits for GPUs, through the same private call
    (``ray._private.state``; the public ``ray.cluster_resources`` counts only the nodes up now)."""
    from ray._private.state import state

    return state.get_max_resources_from_cluster_config() or {}


def train_report_logger() -> str:
    """The name of the logger of Ray Train V2's "Reporting training result" line, one per worker and
    epoch: named by its module's file path (``train/v2/_internal/execution/context.py``), outside the
    ``ray`` logger hierarchy."""
    import ray

    return os.path.join(os.path.dirname(ray.__file__), "train", "v2", "_internal", "execution", "context.py")
