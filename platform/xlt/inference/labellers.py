"""Labellers that load once: one pool of labelling actors for a whole job, given new weights, fed table by table.

A Ray Data actor pool over one dataset loads the classifier in each actor when the dataset runs, and the next
dataset (a corpus's next shard, a co-training iteration's pool) starts a new pool and loads it again
(``benchmarks/labeller_reuse.md``). ``Labellers`` keeps ``num_actors`` actors (a ``PseudoLabelUDF`` each) for as long as the job holds it.
``load(spec)`` gives them a classifier, or several by name (``PseudoLabelUDF``): the first call builds each (encoder
and tokenizer from the model's source, then the weights); a later one only loads the new weights into what is built
(``PseudoLabelUDF.load``: through the object store, a co-training iteration's fits), unless the model itself
changed. ``__call__`` cuts a table into batches of ``batch_size`` rows, spreads them over the actors (each to the
next actor to finish one) and puts the rows back in order; ``in_order`` does so for a stream of tables, the next
ones' batches handed out while one finishes; ``stream`` labels each of its tables (or object
references to them, a stored pool's blocks) whole and yields them as they finish. With ``num_actors: 0`` the process
labels them itself with the same UDF, a table whole (its texts sorted by length together pad less than batch by
batch): no Ray, no actor start-up, for a machine whose cores the caller may use.

A lost actor (its node gone) is restarted by Ray and the tables it was labelling are given to it again, as Ray Data
does for its pools; every table names the load it is labelled with, so the restarted actor, which starts empty,
loads the current classifier(s) first (``LabelWorker``): a pass survives losing a node, each row labelled once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .pseudo_label import PseudoLabelUDF, gpus_or_none
from .settings import InferenceSettings
from .spec import ClassifierSpec

if TYPE_CHECKING:
    import pyarrow as pa

Specs = ClassifierSpec | Mapping[str, ClassifierSpec]
TASKS_PER_ACTOR = 2


class LabelWorker:
    """One ``PseudoLabelUDF``, built on its first ``load``: a Ray actor's, or this process's. Each ``load`` is
    numbered (``version``), and ``label`` names the one to label with: an actor that Ray restarted (its node lost, its
    process killed) comes back empty and loads it before its first table, so that a pass survives losing one."""

    def __init__(self, settings: InferenceSettings) -> None:
        self.settings, self.udf, self.version = settings, None, None

    def load(self, spec: Specs, version: int) -> None:
        if version == self.version:
            return
        if self.udf is None:
            self.udf = PseudoLabelUDF(spec, self.settings, num_threads=self.settings.torch_threads)
        else:
            self.udf.load(spec)
        self.version = version

    def label(self, table: pa.Table, version: int, spec: list[Any]) -> pa.Table:
        """``table`` labelled by load ``version``, whose spec is ``spec[0]``, an object reference (in a list, so
        that Ray hands it over unread): read only by an actor that Ray restarted, on its first table."""
        self._current(version, spec)
        return self.udf(table)

    def language_sums(self, table: pa.Table, version: int, spec: list[Any]) -> dict:
        """``PseudoLabelUDF.language_sums`` of ``table`` by load ``version`` (``label``'s arguments)."""
        self._current(version, spec)
        return self.udf.language_sums(table)

    def _current(self, version: int, spec: list[Any]) -> None:
        if version != self.version:
            import ray

            self.load(ray.get(spec[0]), version)


class Labellers:
    """The module docstring. ``inference``: actors, CPUs and GPUs each, torch threads, rows per batch, texts per
    encoder batch, precision, token budget. Close it (or use it as a context manager) to stop the actors."""

    def __init__(self, inference: InferenceSettings) -> None:
        self.inference, self.batch_size = inference, inference.batch_size
        self.here: LabelWorker | None = None
        self.actors: list[Any] = []
        self.loads = 0  # models built or given new weights: 1 + a load per later pass
        self.spec: Any = None  # the latest load's spec in the object store (actors)

    def load(self, spec: Specs) -> None:
        """Give every labeller ``spec``'s classifier(s), building them on the first call (module docstring); waits
        until each has it, so that a model that cannot load fails here."""
        import torch

        self.loads += 1
        if self.inference.num_actors == 0:
            if self.here is None:
                self._threads = torch.get_num_threads()  # restored by close
                self.here = LabelWorker(self.inference)
            self.here.load(spec, self.loads)
            torch.set_num_threads(self.inference.torch_threads)  # what a fit in this process since may have left
            return
        import ray

        if not self.actors:
            # Restarted when lost, and the tasks they were running retried on the restart, as Ray Data restarts
            # its pools' actors (-1: without limit); a restarted actor loads the current spec (LabelWorker.label).
            # Their own CPUs from the cluster, not the caller's placement group: a study's Tune trial reserves a
            # bundle of no CPU for the job's driver, into which an actor of 0.5 CPU would not fit.
            actor = ray.remote(LabelWorker).options(num_cpus=self.inference.num_cpus,
                                                   num_gpus=gpus_or_none(self.inference.num_gpus),
                                                   max_restarts=-1, max_task_retries=-1, scheduling_strategy="DEFAULT")
            self.actors = [actor.remote(self.inference) for _ in range(self.inference.num_actors)]
        self.spec = ray.put(spec)
        ray.get([a.load.remote(self.spec, self.loads) for a in self.actors])

    def __call__(self, table: pa.Table) -> pa.Table:
        """``table`` with the ``pseudo_label`` columns (``xlt.inference.pseudo_label.OUTPUT_COLUMNS``), its rows in order."""
        if not table.num_rows:
            raise ValueError("Labellers: a table without rows has nothing to label")
        return next(self.in_order([table]))

    def in_order(self, tables: Iterable[pa.Table | None]) -> Iterator[pa.Table | None]:
        """Each of ``tables`` labelled (``None`` passed through), in order, its rows in order. Over actors, each is
        cut into batches of ``batch_size`` rows, and the batches of the tables after it are handed out while it
        finishes: ``tables`` is read as the actors free up, so that they do not wait while the caller writes one
        table and reads the next (a predict job's shards)."""
        if self.here is not None:  # a table whole: its texts sorted by length together pad less than batch by batch
            for table in tables:
                yield None if table is None else self.here.udf(table)
            return
        import pyarrow as pa

        counts: dict[int, int] = {}  # a table's index -> its number of batches, once it has been read

        def batches() -> Iterator[tuple[tuple[int, int], pa.Table]]:
            for i, table in enumerate(tables):
                rows = 0 if table is None else table.num_rows
                counts[i] = -(-rows // self.batch_size)
                for j, start in enumerate(range(0, rows, self.batch_size)):
                    yield (i, j), table.slice(start, self.batch_size)

        parts: dict[int, dict[int, pa.Table]] = {}
        following = 0  # the next table to yield

        def finished() -> Iterator[pa.Table | None]:
            nonlocal following
            while following in counts and len(parts.get(following, ())) == counts[following]:
                done = parts.pop(following, {})
                yield pa.concat_tables([done[j] for j in range(counts[following])]) if done else None
                following += 1

        for (i, j), labelled in self._spread(batches()):
            parts.setdefault(i, {})[j] = labelled
            yield from finished()
        yield from finished()  # the tables of no rows read after the last batch

    def stream(self, tables: Iterable[Any]) -> Iterator[pa.Table]:
        """Each of ``tables`` (``pyarrow.Table``s or object references to them, e.g. a stored pool's blocks), labelled
        whole: in order in this process, as they finish across the actors."""
        if self.here is not None:
            import ray

            for table in tables:
                yield self.here.udf(ray.get(table) if isinstance(table, ray.ObjectRef) else table)
            return
        for _, table in self._spread(enumerate(tables)):
            yield table

    def language_sums(self, tables: Iterable[pa.Table]) -> dict[str | None, dict[str, tuple[Any, int]]]:
        """Over ``tables``, for each centred classifier loaded, by language it has no mean for: the sum of the rows'
        uncentred features and their number (``PseudoLabelUDF.language_sums``), each table to the next labeller
        free; added in the tables' order, so that the sums do not depend on which labeller finished first."""
        if self.here is not None:
            parts = enumerate(self.here.udf.language_sums(table) for table in tables)
        else:
            parts = self._spread(enumerate(tables), "language_sums")
        totals: dict[str | None, dict[str, tuple[Any, int]]] = {}
        waiting: dict[int, dict] = {}  # parts that finished before an earlier table's: at most the tables in flight
        following = 0
        for index, part in parts:
            waiting[index] = part
            while following in waiting:
                for name, by_lang in waiting.pop(following).items():
                    for lang, (total, n) in by_lang.items():
                        before, count = totals.setdefault(name, {}).get(lang, (0.0, 0))
                        totals[name][lang] = (before + total, count + n)
                following += 1
        return totals

    def _spread(self, items: Iterable[tuple[Any, Any]], method: str = "label") -> Iterator[tuple[Any, Any]]:
        """``(key, table labelled)`` (or ``method``'s result) for each ``(key, table)`` of ``items``, as each finishes: ``TASKS_PER_ACTOR``
        tables queued on each actor, so that the next table's transfer overlaps the current one's labelling
        (``ray.util.ActorPool`` queues one), the next table given to the first actor to finish one; ``items`` is
        read only as actors free up."""
        import ray

        if not self.actors or self.spec is None:
            raise RuntimeError("Labellers: load(spec) first")
        todo = iter(items)
        running: dict[Any, tuple[Any, Any]] = {}  # a task's result -> (its table's key, its actor)

        def give(actor: Any) -> None:
            item = next(todo, None)
            if item is not None:
                running[getattr(actor, method).remote(item[1], self.loads, [self.spec])] = (item[0], actor)

        for actor in self.actors:
            for _ in range(TASKS_PER_ACTOR):
                give(actor)
        while running:
            (ready,), _ = ray.wait(list(running), num_returns=1)
            key, actor = running.pop(ready)
            give(actor)
            yield key, ray.get(ready)

    def close(self) -> None:
        if self.here is not None:
            import torch

            torch.set_num_threads(self._threads)
            self.here = None
        if self.actors:
            import ray

            for actor in self.actors:
                ray.kill(actor)
        self.actors, self.spec = [], None

    def __enter__(self) -> "Labellers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
