"""``Seq2SeqTranslator`` on a tiny local Marian: batching independent of order, pickling without weights, NLLB-style
language tokens."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from xlt.translate import Seq2SeqTranslator

from .conftest import GEN


def test_seq2seq_translator_batches_in_order(tiny_marian: Path) -> None:
    t = Seq2SeqTranslator({"de": tiny_marian}, batch_size=2, max_new_tokens=6, generate_kwargs=GEN)
    assert t.languages == {"de"} and t.supports("en", "de") and not t.supports("en", "fr")
    texts = ["A long sentence that needs more tokens than the others.", "Hi.", "Medium length text.", "Ok"]
    out = t.translate(texts, "en", "de")
    assert len(out) == 4 and all(isinstance(x, str) and x for x in out)
    # Batching sorts by length; each text's output must not depend on its neighbours' order.
    assert t.translate(texts[::-1], "en", "de") == out[::-1]
    assert [t.translate([x], "en", "de")[0] for x in texts] == out
    # Pickles without weights (what Ray ships to each actor), and reloads on first use.
    clone = pickle.loads(pickle.dumps(t))
    assert clone._loaded is None
    assert clone.translate(texts[:1], "en", "de") == out[:1]
    with pytest.raises(ValueError, match=r"cannot translate en->fr"):
        t.translate(texts, "en", "fr")


def test_seq2seq_translator_multilingual_language_tokens(tiny_marian: Path) -> None:
    t = Seq2SeqTranslator(tiny_marian, languages=["de", "fr"], max_new_tokens=4, generate_kwargs=GEN)
    assert t.languages == {"de", "fr"}
    assert all(isinstance(x, str) for x in t.translate(["Hello there."], "en", "fr"))
    with pytest.raises(ValueError, match="no language token for es"):
        Seq2SeqTranslator(tiny_marian, languages=["es"]).load()
    with pytest.raises(ValueError, match="only if languages is given"):
        Seq2SeqTranslator(tiny_marian)
    with pytest.raises(OSError, match="cannot load the seq2seq model"):
        Seq2SeqTranslator({"de": tiny_marian / "missing"}).load()
