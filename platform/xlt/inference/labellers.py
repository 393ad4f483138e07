"""Labellers that load once: one pool of labelling actors for a whole job, given new weights, fed table by table.

``pseudo_label`` builds a Ray Data actor pool for one dataset: each actor loads the classifier when the dataset
runs, and the next dataset (a corpus's next shard, a co-training iteration's pool) starts a new pool and loads it
again. ``Labellers`` keeps ``num_actors`` actors (a ``PseudoLabelUDF`` each) for as long as the job holds it.
``load(spec)`` gives them a classifier, or several by name (``PseudoLabelUDF``): the first call builds each (encoder
and tokenizer from the model's source, then the weights); a later one only loads the new weights into what is built
(``PseudoLabelUDF.load``: through the object store, a co-training iteration's fits), unless the model itself
changed. Tables (or object references to them) are cut into batches of ``batch_size`` rows and spread over the
actors (``ray.util.ActorPool``: each batch to the next idle actor): ``__call__`` puts a table's rows back in order,
``stream`` yields the tables as their labels arrive. With ``num_actors: 0`` the process labels them itself with the
same UDF: no Ray, no actor start-up, for a machine whose cores the caller may use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .pseudo_label import PseudoLabelUDF, gpus_or_none
from .spec import ClassifierSpec

if TYPE_CHECKING:
    import pyarrow as pa

Specs = ClassifierSpec | Mapping[str, ClassifierSpec]


class _Labeller:
    """One ``PseudoLabelUDF``, built on its first ``load``: a Ray actor's, or this process's."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options, self.udf = options, None

    def load(self, spec: Specs) -> None:
        if self.udf is None:
            self.udf = PseudoLabelUDF(spec, **self.options)
        else:
            self.udf.load(spec)

    def label(self, table: pa.Table) -> pa.Table:
        return self.udf(table)


class Labellers:
    """The module docstring. ``inference``: ``xlt.cotrain.config.InferenceSettings`` (actors, CPUs and GPUs each,
    torch threads, rows per batch, texts per encoder batch, precision, token budget). Close it (or use it as a
    context manager) to stop the actors."""

    def __init__(self, inference: Any) -> None:
        self.inference, self.batch_size = inference, inference.batch_size
        self.options = dict(encode_batch_size=inference.encode_batch_size, precision=inference.precision,
                            tokens_per_batch=inference.tokens_per_batch, num_threads=inference.torch_threads)
        self.here: _Labeller | None = None
        self.actors: list[Any] = []
        self.pool: Any = None
        self.loads = 0  # models built or given new weights: 1 + a load per later pass

    def load(self, spec: Specs) -> None:
        """Give every labeller ``spec``'s classifier(s), building them on the first call (module docstring); waits
        until each has it, so that a model that cannot load fails here."""
        import torch

        self.loads += 1
        if self.inference.num_actors == 0:
            if self.here is None:
                self._threads = torch.get_num_threads()  # restored by close
                self.here = _Labeller(self.options)
            self.here.load(spec)
            torch.set_num_threads(self.options["num_threads"])  # what a fit in this process since may have left
            return
        import ray
        from ray.util import ActorPool

        if not self.actors:
            actor = ray.remote(_Labeller).options(num_cpus=self.inference.num_cpus,
                                                    num_gpus=gpus_or_none(self.inference.num_gpus))
            self.actors = [actor.remote(self.options) for _ in range(self.inference.num_actors)]
            self.pool = ActorPool(self.actors)
        ray.get([a.load.remote(spec) for a in self.actors])

    def __call__(self, table: pa.Table) -> pa.Table:
        """``table`` with the ``pseudo_label`` columns (``xlt.inference.pseudo_label``), its rows in order."""
        import pyarrow as pa

        if not table.num_rows:
            raise ValueError("Labellers: a table without rows has nothing to label")
        batches = [table.slice(start, self.batch_size) for start in range(0, table.num_rows, self.batch_size)]
        if self.here is not None:
            return pa.concat_tables([self.here.label(batch) for batch in batches])
        self._check_loaded()
        return pa.concat_tables(list(self.pool.map(lambda actor, batch: actor.label.remote(batch), batches)))

    def stream(self, tables: Iterable[Any]) -> Iterator[pa.Table]:
        """Each of ``tables`` (``pyarrow.Table``s or object references to them, e.g. a stored pool's blocks), labelled
        whole: in order in this process, as they finish across the actors."""
        if self.here is not None:
            import ray

            for table in tables:
                yield self.here.label(ray.get(table) if isinstance(table, ray.ObjectRef) else table)
            return
        self._check_loaded()
        yield from self.pool.map_unordered(lambda actor, table: actor.label.remote(table), list(tables))

    def _check_loaded(self) -> None:
        if self.pool is None:
            raise RuntimeError("Labellers: load(spec) first")

    def close(self) -> None:
        if self.here is not None:
            import torch

            torch.set_num_threads(self._threads)
            self.here = None
        if self.actors:
            import ray

            for actor in self.actors:
                ray.kill(actor)
        self.actors, self.pool = [], None

    def __enter__(self) -> "Labellers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
