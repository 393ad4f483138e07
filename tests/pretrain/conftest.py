"""Hand-built dictionaries and pairs with known answers; the real XLM-R tokenizer (converted e5)."""

from __future__ import annotations

import pytest

from xlt.data import BilingualDictionary, Lexicon, ParallelPair
from xlt.models.tiny import tiny_tokenizer
from xlt.pretrain import Tokenization

EN_DE = [("the", "die"), ("the", "das"), ("cat", "katze"), ("sees", "sieht"), ("red", "rote"),
         ("red", "rot"), ("house", "haus"), ("house", "gebäude"), ("dog", "hund"), ("big", "groß"), ("paris", "paris"),
         ("one", "one"), ("cathedral", "kathedrale")]
EN_ZH = [("i", "我"), ("drink", "喝"), ("water", "水"), ("water", "飲水"), ("level", "水平"), ("rises", "上升")]
EN_JA = [("this", "これ"), ("japanese", "日本語"), ("japan", "日本"), ("sentence", "文"), ("nasa", "nasa")]


def pair(src: str, tgt: str, src_lang: str = "en", tgt_lang: str = "de", id: str = "p") -> ParallelPair:
    return ParallelPair(id, src, tgt, src_lang, tgt_lang)


@pytest.fixture(scope="session")
def en_de() -> Lexicon:
    return Lexicon(BilingualDictionary(EN_DE, "en", "de"))


@pytest.fixture(scope="session")
def en_zh() -> Lexicon:
    return Lexicon(BilingualDictionary(EN_ZH, "en", "zh"))


@pytest.fixture(scope="session")
def en_ja() -> Lexicon:
    return Lexicon(BilingualDictionary(EN_JA, "en", "ja"))


@pytest.fixture(scope="session")
def tiny() -> Tokenization:
    """Byte-level: token p + 1 is byte p of the text, one token per ASCII character."""
    return Tokenization(tiny_tokenizer())


@pytest.fixture(scope="session")
def xlmr_tokenizer():
    """The XLM-R sentencepiece tokenizer of the converted multilingual-e5-small (converts on first use)."""
    from transformers import AutoTokenizer

    from xlt.models.sources import bundled_e5_dir

    return AutoTokenizer.from_pretrained(bundled_e5_dir())
