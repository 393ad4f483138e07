"""``DictionaryTranslator``: word by word, unknown words, case and punctuation kept; seeded random choice."""

from __future__ import annotations

import pytest

from xlt.data.dictionary import BilingualDictionary
from xlt.translate import DictionaryTranslator, Translator

EN_DE = BilingualDictionary(
    [("the", "die"), ("the", "der"), ("cat", "katze"), ("sat", "saß"), ("mat", "matte"), ("hello", "hallo"),
     ("cat", "kater")],
    "en", "de",
)


def test_dictionary_translator_keeps_unknown_words_case_and_punctuation() -> None:
    t = DictionaryTranslator(EN_DE)
    assert isinstance(t, Translator) and t.languages == {"de"} and t.supports("en", "de")
    out = t.translate(["The cat sat on the MAT, quietly!", "«Hello», she said.", "Nothing known here."], "en", "de")
    assert out == ["Die katze saß on die MATTE, quietly!", "«Hallo», she said.", None]  # None: nothing translated


def test_dictionary_translator_random_choice_is_seeded_per_text() -> None:
    t = DictionaryTranslator(EN_DE, choice="random", seed=3)
    texts = [f"the cat number {i}" for i in range(40)]
    once = t.translate(texts, "en", "de")
    assert once == t.translate(texts[::-1], "en", "de")[::-1]  # independent of batch order
    assert {text.split()[0] for text in once} == {"die", "der"}  # both translations drawn
    assert {text.split()[1] for text in once} == {"katze", "kater"}


def test_dictionary_translator_errors() -> None:
    with pytest.raises(ValueError, match="choice='best' is not valid"):
        DictionaryTranslator(EN_DE, choice="best")
    with pytest.raises(ValueError, match="two dictionaries for en->de"):
        DictionaryTranslator([EN_DE, EN_DE])
    with pytest.raises(ValueError, match=r"no en->fr dictionary; DictionaryTranslator translates en into: de"):
        DictionaryTranslator(EN_DE).translate(["the cat"], "en", "fr")
