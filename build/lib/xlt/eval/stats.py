"""How sure a comparison is: mean ± std over seeds, and bootstrap intervals over test items and seeds.

The seed papers report single runs; a difference between two methods is only worth stating when
it is larger than what another seed or another sample of test items would change. Two numbers say
how large that is:

- ``mean_std``: the mean and the sample standard deviation (ddof = 1) of a score over seeds;
- ``paired_bootstrap``: the 95% interval of the difference "A − B" of accuracy when the test items
  are resampled with replacement (Efron & Tibshirani 1993, percentile interval; the paired form of
  Koehn 2004 for MT and Dror et al. 2018 for NLP significance). Both systems are scored on the same
  resampled items in every round, so what varies is the test sample, not the pairing. With several
  seeds per system, each item's correctness is first averaged over the seeds (a per-item accuracy
  in [0, 1]), so the interval is over items of the seed-averaged systems;
- ``seed_item_bootstrap``: the same difference with an interval that also resamples the seeds.
  Seeds and items are crossed (every seed scores every item), so each round draws seeds and items
  with replacement, the items once for both systems: Owen's pigeonhole bootstrap for crossed random
  effects (Owen 2007), whose variance he shows to be mean-consistent, erring if at all on the wide
  side. Where A's and B's runs are matched by seed (row i of each ran with the same seed: the same
  initialisation, batches and views), a round draws one set of seeds for both, so what the seed does
  to both systems alike cancels in the difference, as the test items' own difficulty does; otherwise
  each system's seeds are drawn on their own. The item interval says how far another sample of test
  items moves the difference; this one also says how far other training seeds move it, which the
  item interval cannot see (it averages the seeds away). With one seed a system shows no seed
  variance, in either interval; with three, a round draws the same seed three times with probability
  1/27 (more than the 2.5 % tail), so the interval reaches about as far as the most extreme seed and
  no further, milder than a t-interval over seeds, which extrapolates from their spread.

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


def check_bootstrap(items_a: int, items_b: int, resamples: int, confidence: float) -> None:
    """Refuse a bootstrap of A − B whose systems were not scored on the same, non-empty items, or
    whose settings are out of range."""
    if items_a != items_b:
        raise ValueError(f"A and B must be scored on the same items: {items_a} vs {items_b} items")
    if items_a == 0:
        raise ValueError("a bootstrap needs at least one test item")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} must be in (0, 1)")
    if resamples < 1:
        raise ValueError(f"resamples={resamples} must be >= 1")


def percentile_interval(difference: float, means: np.ndarray, confidence: float) -> Interval:
    """``difference`` with the central ``confidence`` share of its bootstrap replicates ``means``."""
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(difference, float(low), float(high), confidence)


def paired_bootstrap(a: Sequence | np.ndarray, b: Sequence | np.ndarray, *, resamples: int = 10_000,
                     confidence: float = 0.95, seed: int = 0) -> Interval:
    """The difference of mean correctness A − B over the same test items, with its paired percentile
    bootstrap interval. ``a`` and ``b``: per-item correctness, (items,) or (seeds, items), in the same
    item order. Seeded: the same inputs give the same interval."""
    x, y = per_item(a), per_item(b)
    check_bootstrap(x.size, y.size, resamples, confidence)
    d = x - y
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    n = d.size
    step = max(1, 2**24 // n)  # resamples per chunk: bounded memory for large test sets
    for start in range(0, resamples, step):
        k = min(step, resamples - start)
        means[start:start + k] = d[rng.integers(0, n, size=(k, n))].mean(axis=1)
    return percentile_interval(float(d.mean()), means, confidence)


def item_counts(items: np.ndarray, n: int) -> np.ndarray:
    """How often each of ``n`` items was drawn in each round of ``items`` (rounds, draws), as floats."""
    k = len(items)
    return np.bincount((items + n * np.arange(k)[:, None]).ravel(), minlength=k * n).reshape(k, n).astype(np.float64)


def seed_item_bootstrap(a: Sequence | np.ndarray, b: Sequence | np.ndarray, *, matched: bool = False,
                        resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> Interval:
    """The difference of mean correctness A − B, with the percentile interval of Owen's pigeonhole
    bootstrap: each round resamples the seeds and the (shared) test items, all with replacement.
    ``a`` and ``b``: (seeds, items) correctness, the items the same and in the same order; (items,) is
    one seed. ``matched``: row i of ``a`` and of ``b`` ran with the same seed, so a round draws the
    same rows of both (the seed counts must then be equal); else each system's rows are drawn on
    their own and the counts may differ. Seeded: the same inputs give the same interval."""
    x, y = (np.atleast_2d(np.asarray(c, dtype=np.float64)) for c in (a, b))
    if x.ndim != 2 or y.ndim != 2 or not len(x) or not len(y):
        raise ValueError(f"correctness must be (items,) or (seeds, items) with a seed or more, "
                         f"got shapes {x.shape} and {y.shape}")
    check_bootstrap(x.shape[1], y.shape[1], resamples, confidence)
    if matched and len(x) != len(y):
        raise ValueError(f"matched seeds need as many runs of A as of B: {len(x)} vs {len(y)}")
    rng = np.random.default_rng(seed)
    n = x.shape[1]
    means = np.empty(resamples)
    step = max(1, 2**24 // (n * max(len(x), len(y))))  # resamples per chunk: bounded memory
    for start in range(0, resamples, step):
        k = min(step, resamples - start)
        items = rng.integers(0, n, size=(k, n))
        # A round's draw of seeds as how often each was drawn, (k, seeds), so a seed drawn twice
        # counts twice; times each seed's accuracy on the round's items, (seeds, k).
        drawn_a = rng.multinomial(len(x), np.full(len(x), 1.0 / len(x)), size=k)
        drawn_b = drawn_a if matched else rng.multinomial(len(y), np.full(len(y), 1.0 / len(y)), size=k)
        # Each seed's accuracy on the round's items, (k, seeds): how often each item was drawn, times
        # its correctness, over n (a product of counts instead of a (seeds, k, n) gather).
        counts = item_counts(items, n)
        means[start:start + k] = ((drawn_a * (counts @ x.T) / n).sum(axis=1) / len(x)
                                  - (drawn_b * (counts @ y.T) / n).sum(axis=1) / len(y))
    # The difference as paired_bootstrap computes it (per item, then over items), to the same last bit.
    return percentile_interval(float((per_item(x) - per_item(y)).mean()), means, confidence)
