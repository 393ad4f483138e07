"""Statistics of a comparison (mean ± std over seeds, bootstraps over items and over seeds and items) on cases
with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from xlt.eval.stats import Interval, mean_std, paired_bootstrap, per_item, seed_item_bootstrap


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


def naive_seed_item_bootstrap(a: np.ndarray, b: np.ndarray, resamples: int, seed: int,
                              matched: bool = False) -> tuple[float, float]:
    """Owen's pigeonhole bootstrap as a loop: each round draws A's seeds, B's seeds (the same rows as A's
    if ``matched``) and the items, then averages the drawn seeds' correctness on the drawn items."""
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(resamples):
        sa = rng.integers(0, len(a), len(a))
        sb = sa if matched else rng.integers(0, len(b), len(b))
        items = rng.integers(0, a.shape[1], a.shape[1])
        means.append(float(a[sa][:, items].mean() - b[sb][:, items].mean()))
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def test_seed_item_bootstrap_sees_the_seeds_that_the_item_bootstrap_averages_away():
    # Every item alike within a seed: only the seeds vary. A's seeds score 0.6, 0.7, 0.8 and B's one seed
    # 0.5, so a round's difference is the mean of three draws from {0.1, 0.2, 0.3}: 0.1 with probability
    # 1/27 (> 2.5 %) and 0.3 likewise, the interval's ends exactly.
    a = np.repeat([[0.6], [0.7], [0.8]], 40, axis=1)
    b = np.full((1, 40), 0.5)
    crossed = seed_item_bootstrap(a, b, resamples=4000)
    assert (crossed.difference, crossed.low, crossed.high) == pytest.approx((0.2, 0.1, 0.3))
    assert crossed.verdict == "gain"
    items_only = paired_bootstrap(a, b, resamples=4000)
    assert (items_only.low, items_only.high) == pytest.approx((0.2, 0.2))
    # A seed of A below B's, another above: a gain over items, within noise over seeds and items.
    a = np.repeat([[0.45], [0.6], [0.75]], 40, axis=1)
    assert paired_bootstrap(a, b).verdict == "gain" and seed_item_bootstrap(a, b).verdict == "within noise"


def test_seed_item_bootstrap_is_the_naive_loops_distribution_and_seeded():
    rng = np.random.default_rng(5)
    skill_a, skill_b = np.array([[0.55], [0.7], [0.62]]), np.array([[0.5], [0.58]])
    a = (rng.uniform(size=(3, 400)) < skill_a).astype(float)
    b = (rng.uniform(size=(2, 400)) < skill_b).astype(float)
    got = seed_item_bootstrap(a, b, resamples=20_000, seed=2)
    assert got.difference == pytest.approx(a.mean() - b.mean())
    # The loop draws in another order, so the two agree up to Monte Carlo error (about 0.002 here).
    assert (got.low, got.high) == pytest.approx(naive_seed_item_bootstrap(a, b, 20_000, seed=3), abs=0.008)
    assert seed_item_bootstrap(a, b, resamples=500, seed=2) == seed_item_bootstrap(a, b, resamples=500, seed=2)
    assert seed_item_bootstrap(a, b, resamples=500, seed=2) != seed_item_bootstrap(a, b, resamples=500, seed=4)
    # One seed a side leaves nothing but the items to resample: the item bootstrap's interval.
    b3 = (rng.uniform(size=(3, 400)) < (skill_a - 0.05)).astype(float)
    paired = seed_item_bootstrap(a, b3, matched=True, resamples=20_000, seed=2)
    assert (paired.low, paired.high) == pytest.approx(
        naive_seed_item_bootstrap(a, b3, 20_000, seed=3, matched=True), abs=0.008)
    one, items_only = seed_item_bootstrap(a[0], b[0], resamples=20_000), paired_bootstrap(a[0], b[0], resamples=20_000)
    assert (one.low, one.high) == pytest.approx((items_only.low, items_only.high), abs=0.008)


def test_matched_seeds_cancel_what_a_seed_does_to_both_systems():
    # Each seed lifts both systems alike, and A leads B by 0.05 in every seed: drawn together, the seeds
    # leave the difference at 0.05 in every round; drawn apart, they mix one seed's A with another's B.
    a = np.repeat([[0.6], [0.7], [0.8]], 40, axis=1)
    b = a - 0.05
    matched = seed_item_bootstrap(a, b, matched=True, resamples=2000)
    assert (matched.difference, matched.low, matched.high) == pytest.approx((0.05, 0.05, 0.05))
    apart = seed_item_bootstrap(a, b, resamples=2000)
    assert apart.low < 0 < apart.high and apart.verdict == "within noise"
    with pytest.raises(ValueError, match="as many runs of A as of B: 3 vs 1"):
        seed_item_bootstrap(a, b[:1], matched=True)


def test_seed_item_bootstrap_refuses_what_it_cannot_pair():
    with pytest.raises(ValueError, match="same items: 4 vs 3"):
        seed_item_bootstrap(np.zeros((2, 4)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="a seed or more"):
        seed_item_bootstrap(np.zeros((0, 4)), np.zeros((1, 4)))
    with pytest.raises(ValueError, match=r"\(items,\) or \(seeds, items\)"):
        seed_item_bootstrap(np.zeros((1, 2, 3)), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="at least one test item"):
        seed_item_bootstrap(np.zeros((1, 0)), np.zeros((1, 0)))
    with pytest.raises(ValueError, match="confidence"):
        seed_item_bootstrap(np.zeros(3), np.zeros(3), confidence=1.0)
