"""Token positions and dictionary-aligned token pairs / spans (Zhang et al. 2023, §3.2; Li et al. 2021, §2.3)."""

from __future__ import annotations

import pytest
import torch

from presets import task
from xlt.data import Lexicon, read_muse
from xlt.models import load_encoder
from xlt.models.tiny import tiny_tokenizer
from xlt.pretrain import DictionaryAligner, Tokenization, consistent_phrase_pairs
from xlt.text.words import Word

from .conftest import pair

CAT = pair("The cat sees the red house.", "Die Katze sieht das rote Haus.")
#           0123456789012345678901234567   0123456789012345678901234567890
# Tiny tokenizer: position = character + 1 for ASCII text.


def test_tokenized_text_positions_prefix_and_truncation(tiny):
    enc = tiny.encode("red house")
    assert enc.word_tokens(Word("house", 4, 9)) == (5, 6, 7, 8, 9)
    assert enc.spans[0] is None and enc.spans[4] is None  # <s>, the space
    prefixed = Tokenization(tiny_tokenizer(), prefix="query: ").encode("red house")
    assert prefixed.word_tokens(Word("house", 4, 9)) == (12, 13, 14, 15, 16)
    short = Tokenization(tiny_tokenizer(), max_length=8).encode("red house")  # <s> + 6 bytes + </s>
    assert short.word_tokens(Word("red", 0, 3)) == (1, 2, 3)
    assert short.word_tokens(Word("house", 4, 9)) is None  # partly cut off


def test_tokenization_requires_fast_right_padded_tokenizer():
    tok = tiny_tokenizer()
    tok.padding_side = "left"
    with pytest.raises(ValueError, match="right padding"):
        Tokenization(tok)

    class Slow:
        is_fast = False

    with pytest.raises(ValueError, match="offset_mapping"):
        Tokenization(Slow())


def test_alignment_of_a_hand_built_pair(en_de, tiny):
    aligner = DictionaryAligner(en_de, tiny)
    got = [(a.src.text, a.tgt.text, a.src_tokens[0], a.tgt_tokens[0]) for a in aligner.align(CAT)]
    # "the" twice, die / das once each: four links, none one-to-one, all dropped.
    assert got == [("cat", "katze", 5, 5), ("sees", "sieht", 9, 11), ("red", "rote", 18, 21), ("house", "haus", 22, 26)]
    out = aligner([CAT])
    assert out["alignment"].dtype == torch.long
    assert out["alignment"].tolist() == [[0, 5, 5], [0, 9, 11], [0, 18, 21], [0, 22, 26]]


def test_subword_all_and_without_one_to_one(en_de, tiny):
    all_tokens = DictionaryAligner(en_de, tiny, subword="all")([CAT])["alignment"]
    assert all_tokens.shape == (3 * 5 + 4 * 5 + 3 * 4 + 5 * 4, 3)
    assert [0, 7, 9] in all_tokens.tolist()  # last byte of "cat", last byte of "Katze"
    loose = DictionaryAligner(en_de, tiny, one_to_one=False)([CAT])
    extra = {(0, 1, 1), (0, 1, 17), (0, 14, 1), (0, 14, 17)}  # The/the x Die/das
    strict_links = {(0, 5, 5), (0, 9, 11), (0, 18, 21), (0, 22, 26)}
    assert {tuple(r) for r in loose["alignment"].tolist()} == extra | strict_links
    # Spans come from the one-to-one links in either case.
    strict = DictionaryAligner(en_de, tiny)([CAT])
    assert torch.equal(loose["src_spans"], strict["src_spans"]) and torch.equal(loose["tgt_spans"], strict["tgt_spans"])


def test_ragged_batch(en_de, tiny):
    pairs = [CAT, pair("Hello.", "Hallo."), pair("Paris is big.", "Paris ist groß.")]
    out = DictionaryAligner(en_de, tiny)(pairs)
    assert out["alignment"].tolist() == [[0, 5, 5], [0, 9, 11], [0, 18, 21], [0, 22, 26], [2, 10, 11]]
    assert out["src_spans"].shape == out["tgt_spans"].shape and out["src_spans"].shape[1] == 3
    assert set(out["src_spans"][:, 0].tolist()) == {0}
    empty = DictionaryAligner(en_de, tiny)([pair("Hello.", "Hallo.")])
    assert all(v.shape == (0, 3) and v.dtype == torch.long for v in empty.values())


def test_spans_of_a_hand_built_pair(en_de, tiny):
    out = DictionaryAligner(en_de, tiny)([CAT])
    spans = list(zip(map(tuple, out["src_spans"].tolist()), map(tuple, out["tgt_spans"].tolist())))
    decode = tiny.tokenizer.decode
    ids_src, ids_tgt = tiny.encode(CAT.src).input_ids, tiny.encode(CAT.tgt).input_ids
    pairs = [(decode(ids_src[s0:s1]), decode(ids_tgt[t0:t1])) for (_, s0, s1), (_, t0, t1) in spans]
    assert pairs == [("cat sees", "Katze sieht"), ("cat sees the red", "Katze sieht das rote"),
                     ("sees the red", "sieht das rote"), ("sees the red house", "sieht das rote Haus"),
                     ("red house", "rote Haus")]


def test_consistent_phrase_pairs():
    assert consistent_phrase_pairs([(0, 1), (1, 0)]) == [(0, 1, 0, 1)]  # crossing links
    # 0-0, 1-2, 2-1: [0,1] covers targets 0..2, which holds 2-1 from outside: inconsistent.
    assert consistent_phrase_pairs([(0, 0), (1, 2), (2, 1)]) == [(0, 2, 0, 2), (1, 2, 1, 2)]
    assert consistent_phrase_pairs([(0, 0), (5, 1)], max_words=4) == []  # source range too long
    assert consistent_phrase_pairs([(0, 0), (1, 5)], max_words=4) == []  # target range too long
    assert consistent_phrase_pairs([(0, 0), (2, 1)]) == [(0, 2, 0, 1)]  # unlinked word inside
    with pytest.raises(ValueError, match="one-to-one"):
        consistent_phrase_pairs([(0, 0), (0, 1)])


def test_chinese_and_japanese_pairs(en_zh, en_ja, tiny):
    aligner = DictionaryAligner(en_zh, tiny)
    out = aligner([pair("I drink water.", "我喝水。", tgt_lang="zh"),
                   pair("The water level rises.", "水平上升。", tgt_lang="zh")])
    # 3 byte-tokens per character: 我 1-3, 喝 4-6, 水 7-9; 水平 0-1 chars -> 1-6, 上升 -> 7-12.
    assert out["alignment"].tolist() == [[0, 1, 1], [0, 3, 4], [0, 9, 7], [1, 11, 1], [1, 17, 7]]
    ja_pair = pair("This is a Japanese sentence.", "これは日本語の文です。", tgt_lang="ja")
    ja = DictionaryAligner(en_ja, tiny).align(ja_pair)
    assert [(a.src.text, a.tgt.text, a.tgt.start) for a in ja] == \
        [("this", "これ", 0), ("japanese", "日本語", 3), ("sentence", "文", 7)]
    assert ja[1].tgt_tokens == tuple(range(10, 19))


def test_positions_line_up_with_the_encoder_batch(en_de):
    enc = load_encoder("tiny:xlm-roberta")
    aligner = DictionaryAligner(en_de, Tokenization.from_encoder(enc))
    pairs = [pair("Paris is big.", "Paris ist groß."), CAT]
    out = aligner(pairs)
    src = enc.tokenize([p.src for p in pairs])["input_ids"]
    tgt = enc.tokenize([p.tgt for p in pairs])["input_ids"]
    for b, i, j in out["alignment"].tolist():
        src_word = next(a.src for a in aligner.align(pairs[b]) if a.src_tokens[0] == i)
        assert enc.tokenizer.decode(src[b, i:i + len(src_word.text)]).lower() == src_word.text
        assert tgt[b, j] not in enc.tokenizer.all_special_ids


def test_direction_and_script_mismatch(data_dir):
    lexicon = Lexicon(read_muse(data_dir, "en", "zh"))
    with pytest.raises(ValueError, match="Traditional"):
        DictionaryAligner(lexicon, Tokenization(tiny_tokenizer())).align(pair("I drink water.", "我喝水。", tgt_lang="zh"))


@pytest.mark.slow
def test_real_sib200_pairs_with_muse_en_de(data_dir, xlmr_tokenizer):
    sib = task("sib200", data_dir)
    en = sib.examples("train", "en")
    de = {e.source_id: e.text for e in sib.examples("train", "de")}
    pairs = [pair(e.text, de[e.source_id], id=e.source_id) for e in en[:40]]
    tokenization = Tokenization(xlmr_tokenizer, prefix="query: ")
    aligner = DictionaryAligner(Lexicon(read_muse(data_dir, "en", "de")), tokenization)
    out = aligner(pairs)
    assert out["alignment"].shape[0] >= 3 * len(pairs)  # measured: ~6 links per pair
    turkey = next(p for p in pairs if p.id == "431")  # "Turkey is encircled by seas on three sides: ..."
    links = {(a.src.text, a.tgt.text) for a in aligner.align(turkey)}
    shown = "\n".join(f"{a.src.text} -> {a.tgt.text}" for a in aligner.align(turkey))
    assert {("turkey", "türkei"), ("three", "drei"), ("north", "norden"), ("south", "süden")} <= links, shown
    # Every position is the first sub-token of its word, in the sequence the encoder sees.
    for b, i, j in out["alignment"].tolist():
        for text, pos, side in ((pairs[b].src, i, "src"), (pairs[b].tgt, j, "tgt")):
            ids = tokenization.encode(text).input_ids
            piece = xlmr_tokenizer.convert_ids_to_tokens(ids[pos]).lstrip("▁").lower()
            words = {a.src.text if side == "src" else a.tgt.text for a in aligner.align(pairs[b])}
            assert piece and any(w.startswith(piece) for w in words), (side, piece, shown)
