"""Batches as ``ds.take_batch()`` gives them, and a synthetic dictionary whose translations are recognisable."""

from __future__ import annotations

import numpy as np

from xlt.augment import VIEW_COLUMNS
from xlt.data.dictionary import BilingualDictionary
from xlt.data.records import Example, as_rows


def batch_of(examples: list[Example]) -> dict[str, np.ndarray]:
    """Examples -> the numpy batch ``ds.take_batch()`` gives (object columns)."""
    rows = as_rows(examples)
    return {key: np.array([row[key] for row in rows], dtype=object) for key in rows[0]}


def rows_of(batch: dict[str, np.ndarray]) -> list[dict]:
    n = len(batch["id"])
    return [{key: (list(value[i]) if key in VIEW_COLUMNS and value[i] is not None else value[i])
             for key, value in batch.items()} for i in range(n)]


# A synthetic en->xx dictionary whose translations are recognisable: "zz" + word.
VOCAB = [f"w{i}" for i in range(50)]


def zz_dictionary(tgt: str) -> BilingualDictionary:
    return BilingualDictionary([(w, "zz" + w) for w in VOCAB], "en", tgt)
