"""Full and partial translation (Wang et al. 2022, §3.1 items 2 and 3): both sides of a pair, one side whole, one
contiguous span of a single text."""

from __future__ import annotations

import random

from xlt.augment.translation import FullTranslation, PartialTranslation, partial_span
from xlt.data.records import Example
from xlt.translate import DictionaryTranslator

from .helpers import batch_of, rows_of, zz_dictionary


def test_full_translation_of_pairs_and_partial_side() -> None:
    t = DictionaryTranslator(zz_dictionary("de"))
    pair = Example(id="p", text="w1 w2", text_pair="w3 w4.", lang="en")
    (full,) = rows_of(FullTranslation(["de"], t)(batch_of([pair])))
    assert full["views"] == ["zzw1 zzw2"] and full["view_pairs"] == ["zzw3 zzw4."]
    (part,) = rows_of(PartialTranslation(["de"], t, n_views=4)(batch_of([pair])))
    for text, other in zip(part["views"], part["view_pairs"]):  # exactly one side translated, whole
        assert (text, other) in {("zzw1 zzw2", "w3 w4."), ("w1 w2", "zzw3 zzw4.")}


def test_partial_translation_replaces_one_contiguous_span() -> None:
    t = DictionaryTranslator(zz_dictionary("de"))
    text = "w0, w1 w2; w3 w4 w5 w6 w7 w8 w9!"
    ex = [Example(id=f"e{i}", text=text, lang="en") for i in range(30)]
    out = PartialTranslation(["de"], t, fraction=0.3)(batch_of(ex))
    starts = set()
    for (view,) in out["views"]:
        marks = [w.startswith("zz") for w in view.replace(",", "").replace(";", "").replace("!", "").split()]
        assert sum(marks) == 3  # round(0.3 * 10) words
        first = marks.index(True)
        assert marks[first:first + 3] == [True] * 3  # contiguous
        assert view.count(",") == 1 and view.count(";") == 1 and view.endswith("!")
        starts.add(first)
    assert len(starts) > 3  # the span start is drawn
    assert partial_span(1, 0.5, random.Random(0)) == (0, 1)
    assert all(partial_span(4, 1.0, random.Random(s))[1] - partial_span(4, 1.0, random.Random(s))[0] == 3
               for s in range(5))  # an anchor word always remains
