"""xlt.data.sample: keyed draws, quotas, and ``sample`` against a naive reference of its definition."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from xlt.data.sample import draw_keys, quotas, sample

LABELS = ("negative", "neutral", "positive")


def cyclic(n_per_label: int) -> list[tuple[str, str]]:
    """(id, label) rows cycling through the labels, as a published training file may."""
    return [(f"r{i}", LABELS[i % 3]) for i in range(3 * n_per_label)]


def naive(items, n, key, label, seed):
    """The definition, written out: per label, its largest-remainder share of n, taken by the smallest
    keyed hash of each item's key; in the items' order."""
    hashed = {i: int(draw_keys([key(item)], seed)[0]) for i, item in enumerate(items)}
    counts = Counter(label(item) for item in items)
    share = quotas(counts, n)
    chosen = []
    for value in counts:
        rows = [i for i, item in enumerate(items) if label(item) == value]
        chosen += sorted(rows, key=lambda i: (hashed[i], i))[:share[value]]
    return [items[i] for i in sorted(chosen)]


def test_keys_depend_on_the_id_and_seed_only():
    ids = np.array(["x", "y", "z"], dtype=object)
    keys = draw_keys(ids, [1, 2, 3])
    assert keys.dtype == np.uint64 and len(set(keys.tolist())) == 3
    assert draw_keys(ids[::-1], [1, 2, 3]).tolist() == keys[::-1].tolist()
    assert draw_keys(ids, [1, 2, 4]).tolist() != keys.tolist()
    assert draw_keys(ids[:1], 5).tolist() == draw_keys(ids[:1], [5]).tolist()


def test_quotas_follow_the_prior_and_sum_to_size():
    assert quotas({"a": 50, "b": 30, "c": 20}, 10) == {"a": 5, "b": 3, "c": 2}
    q = quotas({"a": 1, "b": 1, "c": 1}, 10)
    assert sum(q.values()) == 10 and sorted(q.values()) == [3, 3, 4]


@pytest.mark.parametrize("n", [150, 300, 600])
def test_a_label_cyclic_file_gives_every_label_its_share(n):
    """The stride of a cycle's multiple held one label only (150, 300, 600 of 1,839: strides 12, 6, 3)."""
    rows = cyclic(613)
    drawn = sample(rows, n, key=lambda r: r[0], label=lambda r: r[1])
    assert len(drawn) == n and Counter(r[1] for r in drawn) == {label: n // 3 for label in LABELS}
    # Unstratified, the draw is still random, not a stride: each label about a third.
    plain = sample(rows, n, key=lambda r: r[0])
    assert len(plain) == n and all(abs(count - n / 3) < 0.2 * n for count in Counter(r[1] for r in plain).values())
    assert drawn != rows[:n] and plain != rows[:n]


@pytest.mark.parametrize("seed", [0, 1, [7, 2]])
def test_sample_is_the_naive_reference(seed):
    rng = random.Random(3)
    items = [(f"s{i}", rng.choice("abcd") if i % 11 else "e") for i in range(400)]
    for n in (1, 7, 50, 399):
        got = sample(items, n, key=lambda r: r[0], label=lambda r: r[1], seed=seed)
        assert got == naive(items, n, lambda r: r[0], lambda r: r[1], seed)
        assert len(got) == n


def test_the_draw_does_not_depend_on_the_order_of_the_rows_and_changes_with_the_seed():
    rows = cyclic(100)
    shuffled = rows[:]
    random.Random(0).shuffle(shuffled)
    first = sample(rows, 60, key=lambda r: r[0], label=lambda r: r[1])
    assert set(sample(shuffled, 60, key=lambda r: r[0], label=lambda r: r[1])) == set(first)
    assert sample(rows, 60, key=lambda r: r[0], label=lambda r: r[1]) == first  # the same every time
    assert set(sample(rows, 60, key=lambda r: r[0], label=lambda r: r[1], seed=1)) != set(first)


def test_rows_with_one_key_share_their_fate_across_lists():
    """Translations keyed by their link: every language's draw holds the same sentences, whatever
    each language's own ids and order, and a language missing some rows still gets n."""
    de = [(f"de-{i}", str(i), LABELS[i % 3]) for i in range(300)]
    fr = [(f"fr-{i}", str(i), LABELS[i % 3]) for i in reversed(range(300))]
    link, label = (lambda r: r[1]), (lambda r: r[2])
    assert {r[1] for r in sample(de, 30, key=link, label=label)} == {r[1] for r in sample(fr, 30, key=link, label=label)}
    gappy = [r for r in fr if int(r[1]) % 10]  # every tenth sentence untranslated
    kept = {r[1] for r in sample(gappy, 30, key=link, label=label)}
    assert len(kept) == 30 and kept & {r[1] for r in sample(de, 30, key=link, label=label)}


def test_all_or_none_and_unlabelled_rows():
    rows = cyclic(5)
    assert sample(rows, 0, key=lambda r: r[0]) == rows and sample(rows, 99, key=lambda r: r[0]) == rows
    partly = [(i, None if i == "r3" else lab) for i, lab in rows]  # a label missing: not stratified
    assert len(sample(partly, 4, key=lambda r: r[0], label=lambda r: r[1])) == 4
    with pytest.raises(ValueError, match="n=-1 must be >= 0"):
        sample(rows, -1, key=lambda r: r[0])
