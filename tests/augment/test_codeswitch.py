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


def test_a_word_swap_pair_is_switched_consistently_on_both_sides() -> None:
    """PAWS-style pairs (the same words in another order): a word and its repeats get the same
    outcome on both sides, so each side stays a permutation of the other; over many words about
    r_c of the distinct words switch, each into one of its several translations."""
    d = BilingualDictionary([(w, f"{t}{w}") for w in VOCAB for t in ("xx", "yy", "zz")], "en", "de")
    rng = random.Random(3)
    examples = []
    for i in range(150):
        words = rng.sample(VOCAB, 6) + ["and", "the"]
        words += words[:2]  # repeats within a side
        swapped = words[:]
        rng.shuffle(swapped)
        examples.append(Example(id=f"p{i}", text=" ".join(words), text_pair=" ".join(swapped), lang="en", label="1"))
    r_c = 0.5
    out = CodeSwitch(r_c, ["de"], [d], seed=2)(batch_of(examples))
    again = CodeSwitch(r_c, ["de"], [d], seed=2)(batch_of(examples))
    assert [list(v) for v in out["view_pairs"]] == [list(v) for v in again["view_pairs"]]  # seeded

    distinct = switched = 0
    translations = set()
    for example, (text,), (pair,) in zip(examples, out["views"], out["view_pairs"]):
        assert sorted(text.split()) == sorted(pair.split())  # the overlap survives whole
        outcome: dict[str, str] = {}
        for source, target in zip(example.text.split() + example.text_pair.split(), text.split() + pair.split()):
            assert outcome.setdefault(source, target) == target  # every occurrence alike, on either side
        for source, target in outcome.items():
            if source in VOCAB:
                distinct += 1
                switched += target != source
                translations.add(target[:2]) if target != source else None
    sd = math.sqrt(r_c * (1 - r_c) / distinct)
    assert abs(switched / distinct - r_c) < 4 * sd, (switched, distinct)
    assert translations == {"xx", "yy", "zz"}  # the translation is drawn, then shared
