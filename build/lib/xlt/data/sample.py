"""Seeded draws that need neither the rows' order nor their count: ``sample``, ``draw_keys``, ``quotas``.

Every "n rows of a split" in xlt (``data.max_examples``, ``data.labeled_fraction``, a pretraining
group's ``max_pairs``, an evaluation's pairs) is ``sample``; co-training's selection policies draw
with the same keys (``xlt.cotrain.selection``).

How a draw is made: every row gets a key, a keyed hash (SipHash-2-4, ``pandas.util.hash_array``)
of its identity under a key derived from the seed (``draw_keys``), and the draw is the rows with
the smallest keys. Under a pseudo-random function every ordering by key is equally likely, so
that is a uniform draw without replacement, and it does not depend on the file's order: a split
sorted or cycling by label, topic or length gives the same kind of sample as a shuffled one
(a stride did not: on a file cycling through three labels, every third row is one label).

- **Stratified by label** where every row has one: each label gets its share of ``n`` in
  proportion to its rows (largest-remainder ``quotas``), its rows with the smallest keys.
- **Linked across languages**: the identity hashed is what links a row to its translations (a
  task's ``source_id``, the same in every language under ``task.link``), so that the draw of every
  language holds the same sentences wherever the data has them, and paired comparisons across
  languages stay paired.
- **The same on every run**: the same rows, seed and n give the same draw on any machine; the
  draw is returned in the rows' own order.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")
Seed = int | Sequence[int]


def draw_keys(ids: Sequence[str] | np.ndarray, seed: Seed) -> np.ndarray:
    """A uint64 key per id: SipHash of the id's UTF-8 bytes under a 16-byte key made from ``seed``.
    The same id and seed give the same key on any machine, in any batch."""
    import pandas as pd

    parts = [seed] if isinstance(seed, (int, np.integer)) else list(seed)
    hash_key = hashlib.blake2b(repr([int(p) for p in parts]).encode(), digest_size=8).hexdigest()
    return pd.util.hash_array(np.asarray(ids, dtype=object), hash_key=hash_key, categorize=False)


def quotas(prior: Mapping[str, int], size: int) -> dict[str, int]:
    """``size`` split over classes in proportion to ``prior`` counts (largest remainder, ties by name)."""
    total = sum(prior.values())
    if total <= 0:
        raise ValueError("the class prior has no examples")
    exact = {label: size * count / total for label, count in prior.items()}
    out = {label: int(value) for label, value in exact.items()}
    rest = size - sum(out.values())
    for label in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[:rest]:
        out[label] += 1
    return out


def sample(items: Sequence[T], n: int, *, key: Callable[[T], str], label: Callable[[T], str | None] | None = None,
           seed: Seed = 0) -> list[T]:
    """At most ``n`` of ``items`` (0 = all), drawn at random with ``seed`` (module docstring):
    ``key(item)`` is what is hashed (the same key, the same fate in every list drawn from), and
    with ``label`` the draw is stratified by it where every item has a label. In ``items``' order."""
    if n < 0:
        raise ValueError(f"n={n} must be >= 0 (0 = all)")
    if not n or len(items) <= n:
        return list(items)
    keys = draw_keys([key(item) for item in items], seed)
    labels = [label(item) for item in items] if label is not None else []
    if labels and all(value is not None for value in labels):
        by_label: dict[str, list[int]] = defaultdict(list)
        for i, value in enumerate(labels):
            by_label[value].append(i)
        share = quotas(Counter(labels), n)
        chosen = [i for value, rows in by_label.items() for i in _smallest(rows, keys, share[value])]
    else:
        chosen = _smallest(range(len(items)), keys, n)
    return [items[i] for i in sorted(chosen)]


def _smallest(rows: Sequence[int] | range, keys: np.ndarray, k: int) -> list[int]:
    """The ``k`` of ``rows`` with the smallest keys; equal keys (a key drawn twice) by position."""
    return sorted(rows, key=lambda i: (keys[i], i))[:k]
