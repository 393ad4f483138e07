"""Translators: provided (by source_id), dictionary word-by-word, seq2seq (tiny local Marian) and its actor pool."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from xlt.data.dictionary import BilingualDictionary
from xlt.data.ray_data import to_ray_dataset
from xlt.data.records import Example
from xlt.data.sib200 import read_sib200
from xlt.data.translate import (
    DictionaryTranslator,
    ProvidedTranslations,
    Seq2SeqTranslator,
    TranslateUDF,
    Translator,
    match_case,
    translate_dataset,
)

EN_DE = BilingualDictionary(
    [("the", "die"), ("the", "der"), ("cat", "katze"), ("sat", "saß"), ("mat", "matte"), ("hello", "hallo"),
     ("cat", "kater")],
    "en", "de",
)


def test_match_case() -> None:
    assert match_case("the", "die") == "die"
    assert match_case("The", "die") == "Die"
    assert match_case("THE", "die") == "DIE"
    assert match_case("I", "ich") == "Ich"  # one capital letter: capitalised, not all caps
    assert match_case("Cat", "猫") == "猫"


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


def _example(lang: str, sid: str, text: str, pair: str | None = None) -> Example:
    return Example(id=f"{lang}/{sid}", text=text, lang=lang, label="x", text_pair=pair, source_id=sid)


def test_provided_translations_match_text_and_side() -> None:
    p = ProvidedTranslations([
        _example("en", "1", "Hello.", "How are you?"), _example("de", "1", "Hallo.", "Wie geht's?"),
        _example("en", "2", "Bye."),
    ])
    assert p.languages == {"en", "de"} and not p.translates_segments
    out = p.translate(["Hello.", "How are you?", "Bye.", "Hello", "Hello."], "en", "de",
                      source_ids=["1", "1", "2", "1", None])
    # text -> text, text_pair -> text_pair; no de row for 2; a span is no stored text; no id
    assert out == ["Hallo.", "Wie geht's?", None, None, None]
    with pytest.raises(ValueError, match="pass one source_id per text"):
        p.translate(["Hello."], "en", "de")
    with pytest.raises(ValueError, match="no provided translations en->fr"):
        p.translate(["Hello."], "en", "fr", source_ids=["1"])
    with pytest.raises(ValueError, match="both de with source_id '1'"):
        ProvidedTranslations([_example("de", "1", "a"), Example(id="other", text="b", lang="de", source_id="1")])
    with pytest.raises(ValueError, match="has no source_id"):
        ProvidedTranslations([Example(id="x", text="a", lang="de")])


def test_provided_translations_from_sib200_train(data_dir: Path) -> None:
    p = ProvidedTranslations.from_sib200(data_dir, ["en", "de", "sw"])
    en = read_sib200(data_dir, "en", "train")[:20]
    sw = {e.source_id: e.text for e in read_sib200(data_dir, "sw", "train")}
    out = p.translate([e.text for e in en], "en", "sw", source_ids=[e.source_id for e in en])
    assert out == [sw[e.source_id] for e in en]
    dev = read_sib200(data_dir, "en", "dev")[0]  # train only: a dev sentence has no translation here
    assert p.translate([dev.text], "en", "de", source_ids=[dev.source_id]) == [None]


@pytest.fixture(scope="module")
def tiny_marian(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised 1-layer, 16-wide MarianMT with a byte-level tokenizer, saved locally.

    Its translations are gibberish; the plumbing (tokenize, batch, generate, decode) is real.
    The tokenizer also has the FLORES tokens deu_Latn / fra_Latn, so it can play an NLLB-style
    multilingual model.
    """
    import torch
    from transformers import MarianConfig, MarianMTModel

    from xlt.models.tiny import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    tokenizer.add_tokens(["deu_Latn", "fra_Latn"], special_tokens=True)
    config = MarianConfig(
        vocab_size=len(tokenizer), d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id, forced_eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-marian")
    MarianMTModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# min_new_tokens: a random model may emit </s> at once; the tests want a non-empty output.
GEN = {"min_new_tokens": 3}


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


def test_translate_udf_by_hand_and_as_actor_pool(ray_cluster, tiny_marian: Path) -> None:
    t = Seq2SeqTranslator({"de": tiny_marian}, batch_size=4, max_new_tokens=5, generate_kwargs=GEN)
    examples = [Example(id=f"e{i}", text=f"Sentence number {i} " + "word " * (i % 5), lang="en", label="a",
                        source_id=str(i)) for i in range(12)]
    expected = t.translate([e.text for e in examples], "en", "de")

    udf = TranslateUDF(t, "en", "de")
    batch = {"id": np.array(["a", "b"], dtype=object), "text": np.array([examples[0].text, examples[1].text],
                                                                         dtype=object)}
    assert list(udf(batch)["translation"]) == expected[:2]

    ds = translate_dataset(to_ray_dataset(examples), t, "en", "de", batch_size=4, num_actors=1)
    rows = sorted(ds.take_all(), key=lambda r: int(r["source_id"]))
    assert [r["translation"] for r in rows] == expected
    assert all(r["text_pair"] is None and r["label"] == "a" for r in rows)  # other columns untouched
    with pytest.raises(ValueError, match="cannot translate en->fr"):
        TranslateUDF(t, "en", "fr")
