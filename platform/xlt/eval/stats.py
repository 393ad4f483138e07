"""How sure a comparison is: mean ± std over seeds, and a paired bootstrap interval over test items.

The seed papers report single runs; a difference between two methods is only worth stating when
it is larger than what another seed or another sample of test items would change. Two numbers say
how large that is:

- ``mean_std``: the mean and the sample standard deviation (ddof = 1) of a score over seeds;
- ``paired_bootstrap``: the 95% interval of the difference "A − B" of accuracy when the test items
  are resampled with replacement (Efron & Tibshirani 1993, percentile interval; the paired form of
  Koehn 2004 for MT and Dror et al. 2018 for NLP significance). Both systems are scored on the same
  resampled items in every round, so what varies is the test sample, not the pairing. With several
  seeds per system, each item's correctness is first averaged over the seeds (a per-item accuracy
  in [0, 1]), so the interval is over items of the seed-averaged systems.

A difference is called a gain (``Interval.gain``) only when its whole interval lies above 0, a
loss when it lies below, and "within noise" otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    """A difference A − B and its bootstrap interval [low, high] at ``confidence``."""

    difference: float
    low: float
    high: float
    confidence: float = 0.95

    @property
    def verdict(self) -> str:
        """``gain`` if the interval excludes 0 from above, ``loss`` from below, else ``within noise``."""
        if self.low > 0:
            return "gain"
        if self.high < 0:
            return "loss"
        return "within noise"

    def __str__(self) -> str:
        return f"{self.difference:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; 0.0 for a single value)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("mean_std needs at least one value")
    return float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else 0.0


def per_item(correct: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """(seeds, items) or (items,) correctness (0/1 or fractions) -> one value per item, averaged over seeds."""
    x = np.asarray(correct, dtype=np.float64)
    if x.ndim == 1:
        return x
    if x.ndim != 2:
        raise ValueError(f"correctness must be (items,) or (seeds, items), got shape {x.shape}")
    return x.mean(axis=0)


def paired_bootstrap(a: Sequence | np.ndarray, b: Sequence | np.ndarray, *, resamples: int = 10_000,
                     confidence: float = 0.95, seed: int = 0) -> Interval:
    """The difference of mean correctness A − B over the same test items, with its paired percentile
    bootstrap interval. ``a`` and ``b``: per-item correctness, (items,) or (seeds, items), in the same
    item order. Seeded: the same inputs give the same interval."""
    x, y = per_item(a), per_item(b)
    if x.shape != y.shape:
        raise ValueError(f"A and B must be scored on the same items: {x.shape[0]} vs {y.shape[0]} items")
    if x.size == 0:
        raise ValueError("paired_bootstrap needs at least one test item")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} must be in (0, 1)")
    if resamples < 1:
        raise ValueError(f"resamples={resamples} must be >= 1")
    d = x - y
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    n = d.size
    step = max(1, 2**24 // n)  # resamples per chunk: bounded memory for large test sets
    for start in range(0, resamples, step):
        k = min(step, resamples - start)
        means[start:start + k] = d[rng.integers(0, n, size=(k, n))].mean(axis=1)
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(float(d.mean()), float(low), float(high), confidence)
