"""Selection policies (Yu & Joty 2021, §4.2 and the class-balanced / agreement variants) against naive references."""

from __future__ import annotations

import numpy as np
import pytest

from xlt.cotrain.selection import PoolPredictions, default_size, quotas, select

LABELS = np.array(["a", "b", "c"], dtype=object)


def predictions(n: int, seed: int = 0) -> PoolPredictions:
    rng = np.random.default_rng(seed)
    return PoolPredictions(np.array([f"u{i}" for i in range(n)], dtype=object), LABELS[rng.integers(0, 3, n)],
                           rng.uniform(0.3, 1.0, n))


@pytest.mark.parametrize("policy", ["threshold-random", "class-balanced", "agreement"])
@pytest.mark.parametrize("threshold,size", [(0.9, 5), (0.5, 30), (0.0, 1000), (0.99, 50)])
def test_only_confident_rows_at_most_size_unique_and_deterministic(policy, threshold, size):
    preds, partner = predictions(200, 1), predictions(200, 2)
    kwargs = dict(threshold=threshold, size=size, seed=[7, 1, 0], class_prior={"a": 5, "b": 3, "c": 2},
                  partner=partner)
    idx = select(policy, preds, **kwargs)
    assert len(idx) <= size and len(set(idx.tolist())) == len(idx) and list(idx) == sorted(idx)
    assert np.all(preds.confidence[idx] > threshold)  # Alg. 1: c_u > t, strictly
    assert np.array_equal(idx, select(policy, preds, **kwargs))  # a pure function of its arguments
    other = select(policy, preds, **{**kwargs, "seed": [8, 1, 0]})
    n_candidates = int((preds.confidence > threshold).sum())
    if policy == "threshold-random" and size < n_candidates:
        assert not np.array_equal(idx, other)  # the draw depends on the seed


def test_threshold_random_takes_n_over_3_or_all_candidates():
    preds = predictions(300)
    n_candidates = int((preds.confidence > 0.6).sum())
    assert len(select("threshold-random", preds, threshold=0.6, size=default_size(30), seed=0)) == 10
    assert len(select("threshold-random", preds, threshold=0.6, size=10_000, seed=0)) == n_candidates
    assert default_size(701) == 233


def test_threshold_random_is_uniform_over_candidates():
    preds = PoolPredictions(np.array([f"u{i}" for i in range(6)], dtype=object), LABELS[[0, 1, 2, 0, 1, 2]],
                            np.array([0.95, 0.2, 0.95, 0.95, 0.95, 0.1]))
    counts = np.zeros(6)
    for seed in range(2000):
        counts[select("threshold-random", preds, threshold=0.9, size=2, seed=seed)] += 1
    assert counts[1] == counts[5] == 0
    assert np.allclose(counts[[0, 2, 3, 4]] / 2000, 0.5, atol=0.05)  # each of 4 candidates: 2/4


def test_quotas_follow_the_prior_and_sum_to_size():
    assert quotas({"a": 50, "b": 30, "c": 20}, 10) == {"a": 5, "b": 3, "c": 2}
    q = quotas({"a": 1, "b": 1, "c": 1}, 10)
    assert sum(q.values()) == 10 and sorted(q.values()) == [3, 3, 4]


def test_class_balanced_fills_each_class_quota_from_its_candidates():
    preds = predictions(600, 3)
    idx = select("class-balanced", preds, threshold=0.5, size=30, seed=0, class_prior={"a": 1, "b": 1, "c": 1})
    got = {label: int((preds.labels[idx] == label).sum()) for label in "abc"}
    assert sorted(got.values()) == [10, 10, 10]
    scarce = PoolPredictions(preds.ids[:4], np.array(["a", "a", "a", "b"], dtype=object), np.full(4, 0.95))
    idx = select("class-balanced", scarce, threshold=0.5, size=4, seed=0, class_prior={"a": 1, "b": 1})
    assert sorted(scarce.labels[idx]) == ["a", "a", "b"]  # b's unfilled quota is not given to a


def test_agreement_keeps_only_rows_both_learners_label_alike():
    preds, partner = predictions(300, 4), predictions(300, 5)
    idx = select("agreement", preds, threshold=0.4, size=1000, seed=0, partner=partner)
    naive = [i for i in range(300) if preds.confidence[i] > 0.4 and preds.labels[i] == partner.labels[i]]
    assert idx.tolist() == naive
    # the partner may have predicted other rows too, or in another order: matched by id
    shuffled = np.random.default_rng(0).permutation(300)
    moved = PoolPredictions(partner.ids[shuffled], partner.labels[shuffled], partner.confidence[shuffled])
    assert select("agreement", preds, threshold=0.4, size=1000, seed=0, partner=moved).tolist() == naive
    # a row the partner did not predict is no agreement
    half = PoolPredictions(moved.ids[:150], moved.labels[:150], moved.confidence[:150])
    kept = set(half.ids.tolist())
    assert select("agreement", preds, threshold=0.4, size=1000, seed=0, partner=half).tolist() == \
        [i for i in naive if preds.ids[i] in kept]


def test_restrict_keeps_the_rows_asked_for_in_the_order_asked():
    preds = predictions(20, 6)
    wanted = ["u7", "u3", "missing", "u19", "u0"]
    own = preds.restrict(wanted)
    assert own.ids.tolist() == ["u7", "u3", "u19", "u0"]
    assert own.labels.tolist() == [preds.labels[i] for i in (7, 3, 19, 0)]
    assert own.confidence.tolist() == [preds.confidence[i] for i in (7, 3, 19, 0)]
    assert len(preds.restrict([]).ids) == 0


def test_errors_name_the_problem():
    preds = predictions(10)
    with pytest.raises(ValueError, match="unknown selection policy 'top'; valid: threshold-random"):
        select("top", preds, threshold=0.5, size=3, seed=0)
    with pytest.raises(ValueError, match="threshold=1.0 must be in"):
        select("threshold-random", preds, threshold=1.0, size=3, seed=0)
    with pytest.raises(ValueError, match="needs the partner"):
        select("agreement", preds, threshold=0.5, size=3, seed=0)
    with pytest.raises(ValueError, match="needs class_prior"):
        select("class-balanced", preds, threshold=0.5, size=3, seed=0)
    with pytest.raises(ValueError, match="unique"):
        PoolPredictions(np.array(["x", "x"], dtype=object), LABELS[:2], np.ones(2))
