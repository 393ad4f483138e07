"""Which pseudo-labelled rows a learner hands on: pure, seeded selection policies (Yu & Joty 2021, §3.1, §4.2).

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

Readings chosen: confidence is compared strictly (c > t, as Alg. 1 writes it); the size is
``floor(n / 3)`` unless set (``size``); "randomly choose" is a uniform draw without replacement.
Every draw uses ``numpy.random.default_rng(seed)`` and nothing else, and the result is returned
in pool order, so a policy is a pure function of its arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


Seed = int | Sequence[int]  # anything numpy.random.default_rng takes: (seed, iteration, learner) in the loop


@dataclass(frozen=True)
class PoolPredictions:
    """One learner's predictions over pool rows: ``ids`` (R,), ``labels`` (R,) label names,
    ``confidence`` (R,) = the probability of the predicted label."""

    ids: np.ndarray
    labels: np.ndarray
    confidence: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.ids)
        if len(self.labels) != n or len(self.confidence) != n:
            raise ValueError(f"ids, labels and confidence must have one entry per row: got {n}, "
                             f"{len(self.labels)}, {len(self.confidence)}")
        if self._index.has_duplicates:
            raise ValueError("pool ids must be unique")

    @functools.cached_property
    def _index(self) -> pd.Index:
        # A hash index in C over the ids' own objects (a Python dict of a million-row pool would
        # cost ~100 bytes a row in the driver), built once: by the uniqueness check, then reused by
        # ``restrict`` and ``agreement``.
        import pandas as pd

        return pd.Index(self.ids, dtype=object, copy=False)

    def restrict(self, ids: Sequence[str]) -> PoolPredictions:
        """The predictions of the rows in ``ids``, in the order of ``ids``: Ray Data hands predictions
        back in no guaranteed order, and a seeded selection must see the same order every run."""
        keep = self._index.get_indexer(np.asarray(ids, dtype=object))
        keep = keep[keep >= 0]
        return PoolPredictions(self.ids[keep], self.labels[keep], self.confidence[keep])


def default_size(num_labeled: int) -> int:
    """Yu & Joty 2021, §4.2: n/3 of the raw labelled data per iteration (rounded down)."""
    return num_labeled // 3


def candidates(preds: PoolPredictions, threshold: float) -> np.ndarray:
    """Indices of the rows whose confidence exceeds ``threshold`` (Alg. 1's C)."""
    return np.flatnonzero(preds.confidence > threshold)


def _draw(rng: np.random.Generator, pool: np.ndarray, n: int) -> np.ndarray:
    return pool if len(pool) <= n else rng.choice(pool, size=n, replace=False)


def threshold_random(preds: PoolPredictions, *, threshold: float, size: int, seed: Seed,
                     class_prior: Mapping[str, int] | None = None,
                     partner: PoolPredictions | None = None) -> np.ndarray:
    """Yu & Joty 2021: a uniform draw of min(size, |C|) candidates."""
    return np.sort(_draw(np.random.default_rng(seed), candidates(preds, threshold), size))


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


def class_balanced(preds: PoolPredictions, *, threshold: float, size: int, seed: Seed,
                   class_prior: Mapping[str, int] | None = None,
                   partner: PoolPredictions | None = None) -> np.ndarray:
    """Candidates drawn per predicted class, in the labelled data's class proportions."""
    if not class_prior:
        raise ValueError("class-balanced selection needs class_prior: the labelled data's count per class")
    rng = np.random.default_rng(seed)
    pool = candidates(preds, threshold)
    chosen = [_draw(rng, pool[preds.labels[pool] == label], quota)
              for label, quota in sorted(quotas(class_prior, size).items())]
    return np.sort(np.concatenate(chosen)) if chosen else np.empty(0, dtype=np.int64)


def agreement(preds: PoolPredictions, *, threshold: float, size: int, seed: Seed,
              class_prior: Mapping[str, int] | None = None,
              partner: PoolPredictions | None = None) -> np.ndarray:
    """Candidates the partner learner labels the same way, then a uniform draw."""
    if partner is None:
        raise ValueError("agreement selection needs the partner learner's predictions (co-training only)")
    pool = candidates(preds, threshold)
    where = partner._index.get_indexer(preds.ids[pool])  # -1: a row the partner did not predict
    seen = where >= 0
    agreed = pool[seen][partner.labels[where[seen]] == preds.labels[pool[seen]]]
    return np.sort(_draw(np.random.default_rng(seed), np.asarray(agreed, dtype=np.int64), size))


Policy = Callable[..., np.ndarray]
POLICIES: dict[str, Policy] = {"threshold-random": threshold_random, "class-balanced": class_balanced,
                               "agreement": agreement}


def select(policy: str, preds: PoolPredictions, *, threshold: float, size: int, seed: Seed,
           class_prior: Mapping[str, int] | None = None, partner: PoolPredictions | None = None) -> np.ndarray:
    """Indices into ``preds`` of the rows ``policy`` selects (sorted, unique, at most ``size``)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown selection policy {policy!r}; valid: {', '.join(POLICIES)}")
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold={threshold} must be in [0, 1): confidences are probabilities")
    if size < 0:
        raise ValueError(f"size={size} must be >= 0")
    return POLICIES[policy](preds, threshold=threshold, size=size, seed=seed, class_prior=class_prior,
                            partner=partner)
