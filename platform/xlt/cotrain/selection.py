"""Which pseudo-labelled rows a learner hands on: seeded selection policies over a stream (Yu & Joty 2021, §3.1, §4.2).

Yu & Joty 2021, Alg. 1 and §4.2 ("Co-training"): the candidates of a learner are the pool rows its
prediction labels with confidence above a threshold t, C = {(x_u, y_u) | c_u > t}; "during each
iteration ... we randomly choose n/3 pseudo labels from qualified candidates, where n is the raw
size of labeled data. If the amount [of] qualified candidates is less than n/3, we then choose
all the qualified candidates." That is ``threshold-random``.

The paper's future work (§6) names the data selection policy as open, because the class mix of
the pool may differ from that of the labelled data; two policies for that are here too:

- ``class-balanced``: the n/3 are split over the classes in the proportions of the original
  labelled data (largest-remainder quotas), drawn at random among each class's candidates; a
  class with too few candidates leaves its quota unfilled rather than tilting the mix.
- ``agreement``: only candidates on which the partner learner predicts the same label (both
  learners agree), then random as ``threshold-random``. With self-training there is no partner
  and the policy is refused.

With ``languages`` (``selection.per_language``), any policy's size is first split equally over the
target languages (largest remainder), and each language's share is drawn from that language's
candidates only (class-balanced: its share split again over the classes): a selection taken over
the whole pool fills with the language and the class a learner is surest of.

Readings chosen: confidence is compared strictly (c > t, as Alg. 1 writes it); the size is
``floor(n / 3)`` unless set (``size``); "randomly choose" is a uniform draw without replacement.

How the draw is made, so that it needs neither the pool nor its order: every row gets a key, a
keyed hash (SipHash-2-4, ``pandas.util.hash_array``) of its id under a key derived from the seed
(``draw_keys``), and the draw is the ``size`` candidates with the smallest keys. Under a
pseudo-random function every ordering of the candidates by key is equally likely, so these are a
uniform draw of ``min(size, |C|)`` without replacement. ``Selection`` keeps only those smallest
keys while prediction batches stream past, in any order and any split into batches, so the
driver holds O(size) rows however large the pool (``benchmarks/pool_scale.md``), and a seed picks
the same rows every run. Two ids with the same 64-bit key (odds ~ R² / 2^65 for R candidates)
would be ordered by arrival.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

from ..data.sample import Seed, draw_keys, quotas

POLICIES: tuple[str, ...] = ("threshold-random", "class-balanced", "agreement")


def default_size(num_labeled: int) -> int:
    """Yu & Joty 2021, §4.2: n/3 of the raw labelled data per iteration (rounded down)."""
    return num_labeled // 3


class Selection:
    """One learner's selection in one iteration, fed prediction batches as they stream past.

    ``offer(rows, labels, confidence, partner)`` per batch: ``rows`` are the columns to keep for
    the selected rows (``id`` among them), ``labels`` and ``confidence`` this learner's
    predictions, ``partner`` the partner learner's labels (``agreement`` only). Rows whose id is
    in ``exclude`` (those this learner selected before: Alg. 1's U^k = U^k \\ S^k) are not
    candidates. ``languages``: the per-language shares (module docstring; ``rows`` then has ``lang``).
    ``result()``: the selected rows' columns plus ``label`` and ``confidence``, in key order;
    ``candidates``: how many rows passed the threshold (agreement not required).
    """

    def __init__(self, policy: str, *, threshold: float, size: int, seed: Seed,
                 class_prior: Mapping[str, int] | None = None, exclude: Collection[str] = frozenset(),
                 languages: Sequence[str] = ()) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown selection policy {policy!r}; valid: {', '.join(POLICIES)}")
        if not 0.0 <= threshold < 1.0:
            raise ValueError(f"threshold={threshold} must be in [0, 1): confidences are probabilities")
        if size < 0:
            raise ValueError(f"size={size} must be >= 0")
        if policy == "class-balanced" and not class_prior:
            raise ValueError("class-balanced selection needs class_prior: the labelled data's count per class")
        self.policy, self.threshold, self.seed = policy, threshold, seed
        # One group per (language, class) with its quota; None: any language, or any class.
        shares = quotas(dict.fromkeys(languages, 1), size) if languages else {None: size}
        self.quota: dict[tuple[str | None, str | None], int] = {
            (lang, label): n for lang, share in shares.items()
            for label, n in (quotas(class_prior, share) if policy == "class-balanced" else {None: share}).items()}
        self.exclude = exclude if isinstance(exclude, (set, frozenset)) else frozenset(exclude)
        self.candidates = 0
        self._kept: dict[tuple[str | None, str | None], dict[str, np.ndarray]] = {}
        self._columns: tuple[str, ...] = ("id",)

    def offer(self, rows: Mapping[str, np.ndarray], labels: np.ndarray, confidence: np.ndarray,
              partner: np.ndarray | None = None) -> None:
        ids = np.asarray(rows["id"], dtype=object)
        if self.quota and next(iter(self.quota))[0] is not None and "lang" not in rows:
            raise ValueError("a per-language selection needs each row's lang")
        self._columns = tuple(rows)
        labels = np.asarray(labels, dtype=object)
        confidence = np.asarray(confidence, dtype=np.float64)
        mask = confidence > self.threshold
        if self.exclude:
            mask &= np.fromiter((i not in self.exclude for i in ids), dtype=bool, count=len(ids))
        self.candidates += int(mask.sum())
        if self.policy == "agreement":
            if partner is None:
                raise ValueError("agreement selection needs the partner learner's labels (co-training only)")
            mask &= np.asarray(partner, dtype=object) == labels
        if not mask.any():
            return
        new = {name: np.asarray(values, dtype=object)[mask] for name, values in rows.items()}
        new |= {"label": labels[mask], "confidence": confidence[mask], "key": draw_keys(ids[mask], self.seed)}
        for (lang, label), quota in self.quota.items():
            part = new
            if lang is not None:
                part = {k: v[part["lang"] == lang] for k, v in part.items()}
            if label is not None:
                part = {k: v[part["label"] == label] for k, v in part.items()}
            group = (lang, label)
            if quota and len(part["key"]):
                self._kept[group] = _smallest(_concat(self._kept.get(group), part), quota)

    def result(self) -> dict[str, np.ndarray]:
        kept = [group for group in self._kept.values() if len(group["key"])]
        if not kept:
            return {**{name: np.empty(0, dtype=object) for name in (*self._columns, "label")},
                    "confidence": np.empty(0), "key": np.empty(0, dtype=np.uint64)}
        out = _concat(*kept) if len(kept) > 1 else kept[0]
        order = np.argsort(out["key"], kind="stable")
        return {name: values[order] for name, values in out.items()}


def _concat(*parts: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    parts = [p for p in parts if p is not None]
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def _smallest(columns: dict[str, np.ndarray], k: int) -> dict[str, np.ndarray]:
    keys = columns["key"]
    if len(keys) <= k:
        return columns
    keep = np.argpartition(keys, k - 1)[:k]
    return {name: values[keep] for name, values in columns.items()}
