"""Selection policies (Yu & Joty 2021, §4.2 and the class-balanced / agreement variants) against naive
references: the streamed selection equals a sort of the whole candidate set, in any batch order."""

from __future__ import annotations

import numpy as np
import pytest

from xlt.cotrain.selection import Selection, default_size
from xlt.data.sample import draw_keys, quotas

LABELS = np.array(["a", "b", "c"], dtype=object)
PRIOR = {"a": 5, "b": 3, "c": 2}


def pool(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Predictions of two learners over n rows: ids, labels, confidence, partner labels."""
    rng = np.random.default_rng(seed)
    # Three languages, the easiest (sw) confident far more often: what a per-language selection must not follow.
    langs = np.array(["ar", "ja", "sw"], dtype=object)[rng.integers(0, 3, n)]
    confidence = np.where(langs == "sw", rng.uniform(0.6, 1.0, n), rng.uniform(0.3, 1.0, n))
    return {"id": np.array([f"u{i}" for i in range(n)], dtype=object), "label": LABELS[rng.integers(0, 3, n)],
            "confidence": confidence, "partner": LABELS[rng.integers(0, 3, n)], "lang": langs}


def reference(policy: str, p: dict[str, np.ndarray], *, threshold: float, size: int, seed, exclude=(),
              languages=()) -> list[str]:
    """The equations as written, on the whole pool at once: C = {u | c_u > t, u not selected before}
    (agreement: and both learners' labels equal); then min(size, |C|) of C with the smallest seeded
    keys, per class with its quota for class-balanced; with ``languages``, the size first split equally
    over them and each share drawn from its language's candidates alone. Returned in key order."""
    keys = dict(zip(p["id"], draw_keys(p["id"], seed)))
    cands = [i for i in range(len(p["id"])) if p["confidence"][i] > threshold and p["id"][i] not in exclude
             and (policy != "agreement" or p["label"][i] == p["partner"][i])]
    shares = quotas(dict.fromkeys(languages, 1), size) if languages else {None: size}
    chosen = []
    for lang, share in shares.items():
        in_lang = [i for i in cands if lang is None or p["lang"][i] == lang]
        groups = ({label: [i for i in in_lang if p["label"][i] == label] for label in PRIOR}
                  if policy == "class-balanced" else {None: in_lang})
        limit = quotas(PRIOR, share) if policy == "class-balanced" else {None: share}
        chosen += [i for g, members in groups.items() for i in sorted(members, key=lambda i: keys[p["id"][i]])[:limit[g]]]
    return sorted((p["id"][i] for i in chosen), key=keys.get)


def stream(policy: str, p: dict[str, np.ndarray], *, threshold: float, size: int, seed, exclude=frozenset(),
           order: np.ndarray | None = None, batch: int = 17, languages=()) -> Selection:
    sel = Selection(policy, threshold=threshold, size=size, seed=seed, class_prior=PRIOR, exclude=exclude,
                    languages=languages)
    order = np.arange(len(p["id"])) if order is None else order
    for start in range(0, len(order), batch):
        part = order[start:start + batch]
        rows = {"id": p["id"][part], "gold": p["label"][part], **({"lang": p["lang"][part]} if "lang" in p else {})}
        sel.offer(rows, p["label"][part], p["confidence"][part], p["partner"][part])
    return sel


@pytest.mark.parametrize("policy", ["threshold-random", "class-balanced", "agreement"])
@pytest.mark.parametrize("threshold,size", [(0.5, 30), (0.9, 7), (0.0, 1000)])
def test_a_per_language_selection_is_the_reference_and_shares_the_size_over_languages(policy, threshold, size):
    p = pool(300, 5)
    langs = ("ar", "ja", "sw")
    want = reference(policy, p, threshold=threshold, size=size, seed=[3, 0, 1], languages=langs)
    for order, batch in [(None, 17), (np.random.default_rng(1).permutation(300), 64)]:
        got = stream(policy, p, threshold=threshold, size=size, seed=[3, 0, 1], order=order, batch=batch,
                     languages=langs).result()
        assert got["id"].tolist() == want
    by_lang = [got["lang"].tolist().count(lang) for lang in langs]
    assert max(by_lang) <= -(-size // 3)  # no language above its share, however confident its learner
    if policy == "threshold-random" and threshold == 0.5:
        assert by_lang == [10, 10, 10]
        whole = reference(policy, p, threshold=threshold, size=size, seed=[3, 0, 1])
        assert sum(p["lang"][int(i[1:])] == "sw" for i in whole) > 10  # what the share prevents


def test_a_per_language_selection_needs_the_rows_language():
    sel = Selection("threshold-random", threshold=0.5, size=3, seed=0, languages=("de",))
    with pytest.raises(ValueError, match="per-language selection needs each row's lang"):
        sel.offer({"id": np.array(["a"], dtype=object)}, LABELS[:1], np.ones(1))


@pytest.mark.parametrize("policy", ["threshold-random", "class-balanced", "agreement"])
@pytest.mark.parametrize("threshold,size", [(0.9, 5), (0.5, 30), (0.0, 1000), (0.99, 50), (0.5, 0)])
def test_the_streamed_selection_is_the_reference_in_any_order_and_batching(policy, threshold, size):
    p = pool(300, 1)
    exclude = frozenset(p["id"][::7].tolist())
    want = reference(policy, p, threshold=threshold, size=size, seed=[7, 1, 0], exclude=exclude)
    rng = np.random.default_rng(0)
    for order, batch in [(None, 17), (rng.permutation(300), 1), (rng.permutation(300), 300), (rng.permutation(300), 64)]:
        got = stream(policy, p, threshold=threshold, size=size, seed=[7, 1, 0], exclude=exclude, order=order,
                     batch=batch).result()
        assert got["id"].tolist() == want
        assert len(got["id"]) <= size and not set(got["id"].tolist()) & exclude
        idx = [int(i[1:]) for i in got["id"]]
        assert np.all(p["confidence"][idx] > threshold)  # Alg. 1: c_u > t, strictly
        assert got["label"].tolist() == p["label"][idx].tolist() and got["gold"].tolist() == p["label"][idx].tolist()
        assert got["confidence"].tolist() == p["confidence"][idx].tolist()
    other = stream(policy, p, threshold=threshold, size=size, seed=[8, 1, 0], exclude=exclude).result()
    if policy == "threshold-random" and 0 < size < len(reference(policy, p, threshold=threshold, size=10**6,
                                                                 seed=0, exclude=exclude)):
        assert other["id"].tolist() != want  # the draw depends on the seed


def test_candidates_count_the_confident_rows_of_the_learners_own_pool():
    p = pool(200, 2)
    exclude = frozenset(["u0", "u1", "u2"])
    sel = stream("agreement", p, threshold=0.6, size=5, seed=0, exclude=exclude)
    assert sel.candidates == sum(c > 0.6 and i not in exclude for i, c in zip(p["id"], p["confidence"]))


def test_threshold_random_takes_n_over_3_or_all_candidates():
    p = pool(300)
    n_candidates = int((p["confidence"] > 0.6).sum())
    assert len(stream("threshold-random", p, threshold=0.6, size=default_size(30), seed=0).result()["id"]) == 10
    assert len(stream("threshold-random", p, threshold=0.6, size=10_000, seed=0).result()["id"]) == n_candidates
    assert default_size(701) == 233


def test_threshold_random_is_uniform_over_candidates():
    # Each of 4 candidates is in a draw of 2 with probability 2/4; the two rows below the threshold never.
    p = {"id": np.array([f"u{i}" for i in range(6)], dtype=object), "label": LABELS[[0, 1, 2, 0, 1, 2]],
         "confidence": np.array([0.95, 0.2, 0.95, 0.95, 0.95, 0.1]), "partner": LABELS[[0, 1, 2, 0, 1, 2]]}
    counts = dict.fromkeys(p["id"].tolist(), 0)
    pairs = set()
    for seed in range(2000):
        got = stream("threshold-random", p, threshold=0.9, size=2, seed=[seed, 0, 0]).result()["id"].tolist()
        pairs.add(tuple(sorted(got)))
        for row_id in got:
            counts[row_id] += 1
    assert counts["u1"] == counts["u5"] == 0
    assert all(abs(counts[i] / 2000 - 0.5) < 0.05 for i in ("u0", "u2", "u3", "u4"))
    assert len(pairs) == 6  # every 2-subset of the 4 candidates occurs


def test_class_balanced_fills_each_class_quota_from_its_candidates():
    p = pool(600, 3)
    sel = Selection("class-balanced", threshold=0.5, size=30, seed=0, class_prior={"a": 1, "b": 1, "c": 1})
    sel.offer({"id": p["id"]}, p["label"], p["confidence"])
    got = sel.result()["label"].tolist()
    assert sorted(got.count(label) for label in "abc") == [10, 10, 10]
    scarce = Selection("class-balanced", threshold=0.5, size=4, seed=0, class_prior={"a": 1, "b": 1})
    scarce.offer({"id": np.array(["p", "q", "r", "s"], dtype=object)}, np.array(["a", "a", "a", "b"], dtype=object),
                 np.full(4, 0.95))
    assert sorted(scarce.result()["label"].tolist()) == ["a", "a", "b"]  # b's unfilled quota is not given to a


def test_agreement_keeps_only_rows_both_learners_label_alike():
    p = pool(300, 4)
    got = stream("agreement", p, threshold=0.4, size=1000, seed=0).result()["id"].tolist()
    naive = [p["id"][i] for i in range(300) if p["confidence"][i] > 0.4 and p["label"][i] == p["partner"][i]]
    assert sorted(got) == sorted(naive)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="unknown selection policy 'top'; valid: threshold-random"):
        Selection("top", threshold=0.5, size=3, seed=0)
    with pytest.raises(ValueError, match="threshold=1.0 must be in"):
        Selection("threshold-random", threshold=1.0, size=3, seed=0)
    with pytest.raises(ValueError, match="size=-1 must be >= 0"):
        Selection("threshold-random", threshold=0.5, size=-1, seed=0)
    with pytest.raises(ValueError, match="needs class_prior"):
        Selection("class-balanced", threshold=0.5, size=3, seed=0)
    with pytest.raises(ValueError, match="needs the partner"):
        Selection("agreement", threshold=0.5, size=3, seed=0).offer({"id": np.array(["a"], dtype=object)},
                                                                   LABELS[:1], np.ones(1))
