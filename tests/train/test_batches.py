"""Rows with their views -> one flat batch: group, is_anchor and inherited labels."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xlt.train.batches import UNKNOWN_LABEL, batches_of, flatten_batch

from .helpers import LABELS, rows_with_views

INDEX = {label: i for i, label in enumerate(LABELS)}


def test_each_example_is_followed_by_its_views():
    (batch,) = batches_of(rows_with_views(), 4)
    flat = flatten_batch(batch, INDEX)
    rows = rows_with_views()
    assert flat.texts == [rows[0]["text"], *rows[0]["views"], rows[1]["text"], *rows[1]["views"],
                          rows[2]["text"], rows[3]["text"], *rows[3]["views"]]
    assert flat.group.tolist() == [0, 0, 0, 3, 3, 5, 6, 6]
    assert flat.is_anchor.tolist() == [True, False, False, True, False, True, True, False]
    assert flat.labels.tolist() == [0, 0, 0, 1, 1, 2, 0, 0]  # views inherit the label of their original
    assert flat.num_examples == 4 and len(flat) == 8
    assert flat.group.dtype == torch.long and flat.is_anchor.dtype == torch.bool


def test_ray_numpy_batch_layout():
    """Ray Data hands list columns over as object arrays of object arrays."""
    batch = {"text": np.array(["a b", "c d"], dtype=object), "label": np.array(["sports", None], dtype=object),
             "views": np.array([np.array(["x y"], dtype=object), np.array([], dtype=object)], dtype=object)}
    flat = flatten_batch(batch, INDEX)
    assert flat.texts == ["a b", "x y", "c d"]
    assert flat.group.tolist() == [0, 0, 2]
    assert flat.labels.tolist() == [1, 1, UNKNOWN_LABEL]


def test_rows_without_views_are_plain_fine_tuning():
    rows = [{"text": r["text"], "label": r["label"]} for r in rows_with_views()]
    flat = flatten_batch(batches_of(rows, 4)[0], INDEX)
    assert flat.texts == [r["text"] for r in rows]
    assert flat.group.tolist() == [0, 1, 2, 3] and bool(flat.is_anchor.all())


def test_outputs_are_the_losses_vocabulary():
    flat = flatten_batch(batches_of(rows_with_views(), 4)[0], INDEX)
    out = flat.outputs(torch.zeros(len(flat), 5), torch.zeros(len(flat), 3))
    assert set(out) == {"features", "logits", "labels", "group", "is_anchor", "is_translation"}


@pytest.mark.parametrize("change, message", [
    (lambda r: r.update(label="cooking"), "unknown label 'cooking'"),
    (lambda r: r.update(view_langs=["de"]), "the view columns must be aligned"),
    (lambda r: r.update(views="not a list"), "expected a list of strings"),
    (lambda r: r.update(text=" "), "is not a non-empty string"),
    (lambda r: r.update(text_pair="a second sentence"), "a task is single texts or sentence pairs, not both"),
])
def test_bad_rows_are_named(change, message):
    rows = rows_with_views()
    for r in rows:
        r["text_pair"] = None
    change(rows[0])
    with pytest.raises(ValueError, match=message):
        flatten_batch(batches_of(rows, 4)[0], INDEX)


def test_pairs_and_their_views_become_tuples_in_one_layout():
    rows = [{"text": "a man sleeps", "text_pair": "a person rests", "label": "science", "lang": "en",
             "views": ["ein Mann schläft"], "view_pairs": ["eine Person ruht"], "view_kinds": ["full"],
             "view_langs": ["de"]},
            {"text": "it rains", "text_pair": "the sun shines", "label": "sports", "lang": "en",
             "views": [], "view_pairs": [], "view_kinds": [], "view_langs": []}]
    batch = flatten_batch({k: [r[k] for r in rows] for k in rows[0]}, {label: i for i, label in enumerate(LABELS)})
    assert batch.texts == [("a man sleeps", "a person rests"), ("ein Mann schläft", "eine Person ruht"),
                           ("it rains", "the sun shines")]
    assert batch.group.tolist() == [0, 0, 2] and batch.is_translation.tolist() == [False, True, False]
    broken = {**{k: [r[k] for r in rows] for k in rows[0]}, "view_pairs": [[], []]}
    with pytest.raises(ValueError, match="row 0: 0 view_pairs but 1 views"):
        flatten_batch(broken, {label: i for i, label in enumerate(LABELS)})
