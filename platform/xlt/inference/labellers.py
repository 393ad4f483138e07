"""Labellers that load once: one pool of labelling actors for a whole job, fed table by table.

``pseudo_label`` builds a Ray Data actor pool for one dataset: each actor loads the classifier when the dataset
runs, and a second dataset (the next shard of a corpus) starts a new pool and loads it again. ``Labellers`` keeps
``num_actors`` actors (``PseudoLabelUDF`` each, the classifier loaded once per actor) for as long as the job holds
it; every table given to it is cut into batches of ``batch_size`` rows, spread over the actors (``ray.util.ActorPool``:
each batch to the next idle actor) and put back in input order. With ``num_actors: 0`` the driver labels itself,
with the same UDF (``pseudo_label_here``'s path): no Ray, no actor start-up, for a machine whose cores the driver may
use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .pseudo_label import PseudoLabelUDF, gpus_or_none
from .spec import ClassifierSpec

if TYPE_CHECKING:
    import pyarrow as pa


class _LabelActor:
    """A Ray actor holding one ``PseudoLabelUDF``."""

    def __init__(self, spec: ClassifierSpec, options: dict[str, Any]) -> None:
        self.udf = PseudoLabelUDF(spec, **options)

    def label(self, table: pa.Table) -> pa.Table:
        return self.udf(table)

    def ready(self) -> bool:
        return True


class Labellers:
    """The module docstring. ``inference``: ``xlt.cotrain.config.InferenceSettings`` (actors, CPUs and GPUs each,
    torch threads, rows per batch, texts per encoder batch, precision, token budget). Close it (or use it as a
    context manager) to stop the actors."""

    def __init__(self, spec: ClassifierSpec, inference: Any) -> None:
        self.batch_size = inference.batch_size
        options = dict(encode_batch_size=inference.encode_batch_size, precision=inference.precision,
                       tokens_per_batch=inference.tokens_per_batch)
        self.here: PseudoLabelUDF | None = None
        self.actors: list[Any] = []
        if inference.num_actors == 0:  # torch's threads as they are, unless inference.threads says
            import torch

            self._threads = torch.get_num_threads()
            self.here = PseudoLabelUDF(spec, **options, num_threads=inference.threads or None)
            return
        options["num_threads"] = inference.torch_threads
        import ray
        from ray.util import ActorPool

        actor = ray.remote(_LabelActor).options(num_cpus=inference.num_cpus,
                                                num_gpus=gpus_or_none(inference.num_gpus))
        self.actors = [actor.remote(spec, options) for _ in range(inference.num_actors)]
        ray.get([a.ready.remote() for a in self.actors])  # every model loaded (or its error raised) here
        self.pool = ActorPool(self.actors)

    def __call__(self, table: pa.Table) -> pa.Table:
        """``table`` with the ``pseudo_label`` columns (``xlt.inference.pseudo_label``), its rows in order."""
        import pyarrow as pa

        if not table.num_rows:
            raise ValueError("Labellers: a table without rows has nothing to label")
        batches = [table.slice(start, self.batch_size) for start in range(0, table.num_rows, self.batch_size)]
        if self.here is not None:
            labelled = [self.here(batch) for batch in batches]
        else:
            labelled = list(self.pool.map(lambda actor, batch: actor.label.remote(batch), batches))
        return pa.concat_tables(labelled)

    def close(self) -> None:
        if self.here is not None:
            import torch

            torch.set_num_threads(self._threads)
        for actor in self.actors:
            import ray

            ray.kill(actor)
        self.actors = []

    def __enter__(self) -> "Labellers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
