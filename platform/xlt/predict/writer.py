"""Predictions written as shards, each complete or absent, so that a stopped job resumes.

The input arrives in shards of ``shard_rows`` rows in input order (``xlt.predict.inputs.Input.shards``). Shard ``i``
is labelled by the job's one pool of labellers (``xlt.inference.labellers``; over actors, the next shard is read
and labelled while one is written) and written, as one file of the format,
into ``<output.dir>/predictions/shard-<i>/`` (local or ``s3://``), with the bad rows ``on_bad_row: skip`` left out
of it in ``_rejected.jsonl`` (file, position, reason). Only then is ``_SUCCESS`` written beside them, holding the
shard's rows, label counts and rejected rows. A rerun skips each shard with its ``_SUCCESS`` (its rows are still
read, to find where the next shard starts: reading is cheap beside labelling) and deletes and rewrites any other: a
row is written once. Readers skip ``_``-prefixed files (``pyarrow.dataset``, pandas, Spark):
``pandas.read_parquet("<output.dir>/predictions")`` reads every prediction.

Columns: the input's ``id``, ``lang``, ``text`` (and ``text_pair``), the predicted ``label``, its
``confidence`` (the largest probability) and ``p_<label>`` for each label, in the head's order.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..inference.labellers import Labellers
from ..storage import join, read_text, remove, staged
from .inputs import Shard

DONE, REJECTED = "_SUCCESS", "_rejected.jsonl"
PREDICTIONS = "predictions"


@dataclass
class Written:
    """What the shards hold: rows, rows per (language, label), bad rows skipped, how many shards a rerun kept, and
    the languages centred on the input."""

    rows: int = 0
    labels: Counter = field(default_factory=Counter)
    rejected: int = 0
    skipped: int = 0
    centred: dict[str, int] = field(default_factory=dict)  # languages centred on the input: rows (xlt.predict.centring)
    centred_reused: bool = False  # their means read from an earlier run's

    def add(self, record: dict[str, Any]) -> None:
        self.rows += record["rows"]
        self.labels.update({(lang, label): n for lang, label, n in record["labels"]})
        self.rejected += record.get("rejected", 0)


def output_columns(batch, labels: Sequence[str], paired: bool, members: Sequence[str] = ()):
    """The actor pool's output (a pyarrow batch) as the written columns (module docstring); ``members``: the
    classifiers of a combination, whose probabilities the pool gave per member and whose product is written."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = {"id": batch.column("id"), "lang": batch.column("lang"), "text": batch.column("text")}
    if paired:
        columns["text_pair"] = batch.column("text_pair")
    if members:
        batch = combined(batch, labels, members)
    columns |= {"label": batch.column("pseudo_label"), "confidence": batch.column("confidence")}
    probabilities = batch.column("probabilities")
    for k, label in enumerate(labels):
        columns[f"p_{label}"] = pc.list_element(probabilities, k)
    return pa.table(columns)


def combined(batch, labels: Sequence[str], members: Sequence[str]):
    """``batch`` with ``pseudo_label``, ``confidence`` and ``probabilities`` of the members' combination
    (``xlt.models.combine``) from each member's ``<name>_probabilities``."""
    import numpy as np
    import pyarrow as pa

    from ..inference import prediction_column
    from ..models.classifier import combine

    probabilities = combine([np.stack(batch.column(prediction_column("probabilities", name)).to_numpy(
        zero_copy_only=False)) for name in members]).astype(np.float32)
    n, c = probabilities.shape
    return (batch.append_column("pseudo_label", pa.array([labels[k] for k in probabilities.argmax(axis=1)]))
            .append_column("confidence", pa.array(probabilities.max(axis=1)))
            .append_column("probabilities", pa.ListArray.from_arrays(pa.array(np.arange(0, n * c + 1, c, dtype=np.int32)),
                                                                     pa.array(probabilities.reshape(-1)))))


def write_shards(shards: Iterable[Shard], labellers: Labellers, labels: Sequence[str], paired: bool, out: str,
                 fmt: str, done: Callable[[int], None] = lambda n: None, members: Sequence[str] = ()) -> Written:
    """Label each shard with ``labellers`` and write it under ``<out>/predictions`` (module docstring); ``done(n)``
    after each shard, complete or kept, of ``n`` rows and rejected rows. The shards to label go to the labellers as
    they ask for work (``Labellers.in_order``): the next shard is read, and its batches labelled, while one is
    written."""
    import pyarrow as pa

    written = Written()
    queued: deque[tuple[Shard, str]] = deque()  # the shards sent to the labellers, in order, with their directory
    failed: list[Exception] = []  # a bad row met while reading ahead: raised once the shards before it are written

    def to_label() -> Iterator[pa.Table | None]:
        rows = iter(shards)
        while True:
            try:
                shard = next(rows)
            except StopIteration:
                return
            except Exception as error:
                failed.append(error)
                return
            directory = join(out, PREDICTIONS, f"shard-{shard.index:05d}")
            record = read_text(join(directory, DONE))
            if record is not None:
                written.add(json.loads(record))
                written.skipped += 1
                done(len(shard.rows) + len(shard.rejected))
                continue
            remove(directory)  # a shard begun by a stopped run: its files, if any, go
            queued.append((shard, directory))
            yield pa.Table.from_pylist(shard.rows) if shard.rows else None

    for labelled in labellers.in_order(to_label()):
        shard, directory = queued.popleft()
        written.add(write_shard(shard, directory, labelled, labels, paired, fmt, members))
        done(len(shard.rows) + len(shard.rejected))
    if failed:
        raise failed[0]
    return written


def write_shard(shard: Shard, directory: str, labelled, labels: Sequence[str], paired: bool, fmt: str,
                members: Sequence[str] = ()) -> dict:
    """One shard's files (``labelled``: its rows with their predictions, ``None`` if it has none), then its
    ``_SUCCESS``; returns what that holds."""
    counts: Counter = Counter()
    with staged(directory) as local:
        if labelled is not None:
            table = output_columns(labelled, labels, paired, members)
            counts = Counter(zip(table.column("lang").to_pylist(), table.column("label").to_pylist()))
            write_table(table, local / f"part-00000.{fmt}", fmt)
        if shard.rejected:
            (local / REJECTED).write_text("".join(json.dumps(asdict(r), ensure_ascii=False) + "\n"
                                                  for r in shard.rejected), encoding="utf-8")
    record = {"rows": sum(counts.values()), "rejected": len(shard.rejected),
              "labels": [[lang, label, n] for (lang, label), n in sorted(counts.items())]}
    if record["rows"] != len(shard.rows):
        raise RuntimeError(f"shard {shard.index}: {record['rows']} predictions for {len(shard.rows)} rows")
    with staged(directory) as local:  # after the shard's files: on a store, they are there first
        (local / DONE).write_text(json.dumps(record))
    return record


def write_table(table, path, fmt: str) -> None:
    """``table`` as one file of ``fmt``: Parquet, CSV (a header, RFC 4180 quoting) or JSON Lines (UTF-8)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    elif fmt == "csv":
        import pyarrow.csv

        pyarrow.csv.write_csv(table, path)
    else:
        with open(path, "w", encoding="utf-8") as sink:
            for row in table.to_pylist():
                sink.write(json.dumps(row, ensure_ascii=False) + "\n")
