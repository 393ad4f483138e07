"""Predictions written as shards, each complete or absent, so that a stopped job resumes.

The rows are cut into shards of ``shard_rows`` in input order. Shard ``i`` is labelled by the
inference actor pool (``xlt.inference.pseudo_label``) and written by Ray Data's writer of the
format into ``<output.dir>/predictions/shard-<i>/`` (its blocks' files, in parallel on a cluster;
local or ``s3://``). Only then is ``_SUCCESS`` written beside them, holding the shard's rows and
label counts. A rerun skips each shard with its ``_SUCCESS`` and deletes and rewrites any other: a
row is written once. Readers skip ``_``-prefixed files (``pyarrow.dataset``, pandas, Spark):
``pandas.read_parquet("<output.dir>/predictions")`` reads every prediction.

Columns: the input's ``id``, ``lang``, ``text`` (and ``text_pair``), the predicted ``label``, its
``confidence`` (the largest probability) and ``p_<label>`` for each label, in the head's order.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cotrain.config import InferenceSettings
from ..inference import ClassifierSpec, pseudo_label
from ..storage import join, read_text, remove, staged

DONE = "_SUCCESS"


@dataclass
class Written:
    """What the shards hold: rows, rows per (language, label), and how many shards a rerun skipped."""

    rows: int = 0
    labels: Counter = field(default_factory=Counter)
    skipped: int = 0

    def add(self, record: dict[str, Any]) -> None:
        self.rows += record["rows"]
        self.labels.update({(lang, label): n for lang, label, n in record["labels"]})


def output_columns(batch, labels: Sequence[str], paired: bool):
    """The actor pool's output (a pyarrow batch) as the written columns (module docstring)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = {"id": batch.column("id"), "lang": batch.column("lang"), "text": batch.column("text")}
    if paired:
        columns["text_pair"] = batch.column("text_pair")
    columns |= {"label": batch.column("pseudo_label"), "confidence": batch.column("confidence")}
    probabilities = batch.column("probabilities")
    for k, label in enumerate(labels):
        columns[f"p_{label}"] = pc.list_element(probabilities, k)
    return pa.table(columns)


PREDICTIONS = "predictions"


def write_shards(rows: Sequence[dict[str, Any]], spec: ClassifierSpec, out: str, fmt: str, shard_rows: int,
                 inference: InferenceSettings, done: Callable[[int], None] = lambda n: None) -> Written:
    """Label ``rows`` with ``spec`` and write them under ``<out>/predictions`` (module docstring);
    ``done(n)`` after each shard, complete or skipped, of ``n`` rows."""
    import ray.data

    written = Written()
    for index, start in enumerate(range(0, len(rows), shard_rows)):
        shard, part = join(out, PREDICTIONS, f"shard-{index:05d}"), rows[start:start + shard_rows]
        record = read_text(join(shard, DONE))
        if record is not None:
            written.add(json.loads(record))
            written.skipped += 1
            done(len(part))
            continue
        remove(shard)  # a shard begun by a stopped run: its files, if any, go
        blocks = max(1, min(len(part) // inference.batch_size, 4 * max(inference.num_actors, 1)))
        labelled = pseudo_label(ray.data.from_items(list(part), override_num_blocks=blocks), spec,
                                batch_size=inference.batch_size, encode_batch_size=inference.encode_batch_size,
                                num_actors=inference.num_actors, num_cpus=inference.num_cpus,
                                num_gpus=inference.num_gpus, threads=inference.torch_threads,
                                precision=inference.precision, tokens_per_batch=inference.tokens_per_batch)
        table = labelled.map_batches(output_columns, fn_kwargs={"labels": list(spec.labels), "paired": spec.paired},
                                     batch_format="pyarrow").materialize()
        predicted = table.select_columns(["lang", "label"]).to_pandas()
        counts = Counter(zip(predicted["lang"], predicted["label"]))
        getattr(table, f"write_{'json' if fmt == 'jsonl' else fmt}")(shard)
        record = {"rows": len(predicted), "labels": [[lang, label, n] for (lang, label), n in sorted(counts.items())]}
        if record["rows"] != len(part):
            raise RuntimeError(f"shard {index}: {record['rows']} predictions for {len(part)} rows")
        with staged(shard) as local:
            (local / DONE).write_text(json.dumps(record))
        written.add(record)
        done(len(part))
    return written
