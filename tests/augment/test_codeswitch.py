"""Code-switching (Wang et al. 2022, §3.1 item 1): the switched share is r_c of the dictionary words; case and
punctuation kept."""

from __future__ import annotations

import math
import random

from xlt.augment.codeswitch import CodeSwitch
from xlt.data.dictionary import BilingualDictionary
from xlt.data.records import Example

from .helpers import VOCAB, batch_of, zz_dictionary


def test_code_switch_ratio_is_r_c_over_dictionary_words() -> None:
    rng = random.Random(0)
    examples = []
    for i in range(200):  # 20 words each: ~half in the dictionary, ~half not
        words = [rng.choice(VOCAB) if rng.random() < 0.5 else f"other{rng.randrange(99)}" for _ in range(20)]
        examples.append(Example(id=f"s{i}", text=" ".join(words) + ".", lang="en", label="x"))
    r_c = 0.3
    out = CodeSwitch(r_c, ["de", "fr"], [zz_dictionary("de"), zz_dictionary("fr")], seed=1)(batch_of(examples))

    switchable = switched = 0
    for example, views in zip(examples, out["views"]):
        (view,) = views
        source, target = example.text[:-1].split(), view[:-1].split()
        assert len(source) == len(target) and view.endswith(".")
        for s, t in zip(source, target):
            if s in VOCAB:
                switchable += 1
                switched += t == "zz" + s
                assert t in (s, "zz" + s)
            else:
                assert t == s  # words without an entry are never touched
    assert switchable >= 1800
    sd = math.sqrt(r_c * (1 - r_c) / switchable)
    assert abs(switched / switchable - r_c) < 4 * sd, (switched, switchable)
    assert {lang for langs in out["view_langs"] for lang in langs} == {"de", "fr"}  # drawn per view


def test_code_switch_preserves_case_and_punctuation() -> None:
    d = BilingualDictionary([("the", "die"), ("cat", "katze"), ("hello", "hallo"), ("paris", "paris")], "en", "de")
    ex = Example(id="a", text="The CAT, said: «Hello»! (Paris)", lang="en")
    out = CodeSwitch(1.0, ["de"], [d])(batch_of([ex]))
    # identity entries (paris -> paris) are not a switch; everything between words is kept
    assert list(out["views"][0]) == ["Die KATZE, said: «Hallo»! (Paris)"]
