"""Statistics of a comparison (mean ± std over seeds, paired bootstrap over items) on cases with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from xlt.eval.stats import Interval, mean_std, paired_bootstrap, per_item


def naive_bootstrap(d: np.ndarray, resamples: int, confidence: float, seed: int) -> tuple[float, float]:
    """The percentile bootstrap written as a loop, one resample at a time, from the same generator."""
    rng = np.random.default_rng(seed)
    means = [float(np.mean(d[rng.integers(0, len(d), size=len(d))])) for _ in range(resamples)]
    tail = (1 - confidence) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def test_mean_std_is_the_sample_standard_deviation():
    assert mean_std([1.0, 2.0, 3.0]) == (2.0, 1.0)
    assert mean_std([0.8]) == (0.8, 0.0)
    with pytest.raises(ValueError, match="at least one value"):
        mean_std([])


def test_identical_and_opposite_systems_have_degenerate_intervals():
    a = np.array([1, 0, 1, 1, 0, 1])
    same = paired_bootstrap(a, a)
    assert (same.difference, same.low, same.high, same.verdict) == (0.0, 0.0, 0.0, "within noise")
    best = paired_bootstrap(np.ones(50), np.zeros(50))
    assert (best.difference, best.low, best.high, best.verdict) == (1.0, 1.0, 1.0, "gain")
    assert paired_bootstrap(np.zeros(50), np.ones(50)).verdict == "loss"


def test_the_interval_is_the_naive_loops_and_seeded():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2, 300), rng.integers(0, 2, 300)
    got = paired_bootstrap(a, b, resamples=500, seed=11)
    assert got.difference == pytest.approx(float(np.mean(a - b)))
    assert (got.low, got.high) == pytest.approx(naive_bootstrap((a - b).astype(float), 500, 0.95, 11))
    assert paired_bootstrap(a, b, resamples=500, seed=11) == got
    assert paired_bootstrap(a, b, resamples=500, seed=12) != got


def test_the_width_matches_the_normal_approximation_on_a_large_sample():
    # d_i = a_i - b_i with P(+1) = 0.3, P(-1) = 0.2, P(0) = 0.5: mean 0.1, sd = sqrt(0.5 - 0.01).
    rng = np.random.default_rng(0)
    n = 4000
    u = rng.uniform(size=n)
    a, b = (u < 0.3).astype(float), ((u >= 0.3) & (u < 0.5)).astype(float)
    got = paired_bootstrap(a, b, resamples=4000, seed=1)
    half = 1.959964 * np.sqrt(0.49) / np.sqrt(n)
    assert got.high - got.low == pytest.approx(2 * half, rel=0.1)
    assert got.low < got.difference < got.high and got.verdict == "gain"  # 0.1 ± 0.02 excludes 0


def test_seeds_are_averaged_per_item_before_resampling():
    a = np.array([[1, 0, 1, 0], [1, 1, 1, 0], [1, 0, 0, 0]])  # (seeds, items)
    assert per_item(a).tolist() == pytest.approx([1.0, 1 / 3, 2 / 3, 0.0])
    got = paired_bootstrap(a, np.zeros((2, 4)), resamples=200)
    assert got.difference == pytest.approx(0.5)
    with pytest.raises(ValueError, match="same items: 4 vs 3"):
        paired_bootstrap(a, np.zeros(3))
    with pytest.raises(ValueError, match=r"\(items,\) or \(seeds, items\)"):
        per_item(np.zeros((1, 2, 3)))


def test_the_verdict_and_its_text():
    assert Interval(0.02, 0.01, 0.03).verdict == "gain" and Interval(0.02, -0.01, 0.05).verdict == "within noise"
    assert str(Interval(0.02, -0.01, 0.05)) == "+0.020 [-0.010, +0.050]"
