"""Word-positioned samples (Chen et al. 2022, Alg. 1): exactly which pairs, uniqueness, positions, CJK, real tokenizer."""

from __future__ import annotations

import pytest
import torch

from xlt.data import BilingualDictionary, Lexicon
from xlt.losses.cce import ConcatenatedContextualEmbedding
from xlt.models import load_encoder
from xlt.pretrain import Tokenization, parallel_wps, word_positioned_samples, word_spans

from .conftest import EN_DE, pair


def words(samples) -> list[tuple[str, str]]:
    return [(s.src.word, s.tgt.word) for s in samples]


def test_exactly_the_unique_translated_words(en_de):
    p = pair("The cat sees the red house.", "Die Katze sieht das rote Haus.")
    got = parallel_wps(p, en_de)
    # "the" occurs twice in the source: excluded although die/das are in the target.
    assert words(got) == [("cat", "Katze"), ("sees", "sieht"), ("red", "rote"), ("house", "Haus")]
    for s in got:
        assert s.pair_id == "p" and s.src.text == p.src and s.tgt.text == p.tgt and s.src.token_span is None
    assert [(s.src.start, s.src.end, s.tgt.start, s.tgt.end) for s in got] == \
        [(4, 7, 4, 9), (8, 12, 10, 15), (17, 20, 20, 24), (21, 26, 25, 29)]


def test_target_uniqueness_over_all_translations(en_de):
    # "dog" once, "Hund" twice: B.count(b) != 1.
    assert parallel_wps(pair("I see one dog.", "Ich sehe einen Hund und noch einen Hund."), en_de) == []
    # house -> haus / gebäude, both in B: no single partner. "the" is unique here: die/das -> das once.
    got = parallel_wps(pair("The house.", "Das Haus ist ein Gebäude."), en_de)
    assert words(got) == [("The", "Das")]
    no_stop = Lexicon(BilingualDictionary(EN_DE, "en", "de"), stop_words={"The"})
    assert parallel_wps(pair("The house.", "Das Haus ist ein Gebäude."), no_stop) == []


def test_identity_entries_dropped_unless_kept(en_de):
    p = pair("Paris is big.", "Paris ist groß.")
    assert words(parallel_wps(p, en_de)) == [("big", "groß")]
    keep = Lexicon(BilingualDictionary(EN_DE, "en", "de"), keep_identity=True)
    assert words(parallel_wps(p, keep)) == [("Paris", "Paris"), ("big", "groß")]


def test_token_condition_and_token_spans(en_de, tiny):
    p = pair("The cat sees the red house.", "Die Katze sieht das rote Haus.")
    got = parallel_wps(p, en_de, tiny)
    assert words(got) == [("cat", "Katze"), ("sees", "sieht"), ("red", "rote"), ("house", "Haus")]
    for s in got:  # byte-level, ASCII: token p + 1 is character p
        assert s.src.token_span == (s.src.start + 1, s.src.end + 1)
        assert s.tgt.token_span == (s.tgt.start + 1, s.tgt.end + 1)
    # "cat" is one word of A but its tokens occur twice in TK(A) (inside "cathedral"): excluded with a tokenizer.
    p = pair("The cat sees the cathedral.", "Die Katze sieht die Kathedrale.")
    assert words(parallel_wps(p, en_de)) == [("cat", "Katze"), ("sees", "sieht"), ("cathedral", "Kathedrale")]
    assert words(parallel_wps(p, en_de, tiny)) == [("sees", "sieht"), ("cathedral", "Kathedrale")]


def test_truncated_words_are_not_samples(en_de):
    from xlt.models.tiny import tiny_tokenizer

    short = Tokenization(tiny_tokenizer(), max_length=12)  # <s> + 10 bytes + </s>
    got = parallel_wps(pair("The cat sees the red house.", "Die Katze sieht das rote Haus."), en_de, short)
    assert words(got) == [("cat", "Katze")]


def test_chinese_substring_words(en_zh, tiny):
    got = parallel_wps(pair("I drink water.", "我喝水。", tgt_lang="zh"), en_zh, tiny)
    assert words(got) == [("I", "我"), ("drink", "喝"), ("water", "水")]
    # Three UTF-8 bytes (tokens) per character.
    assert [s.tgt.token_span for s in got] == [(1, 4), (4, 7), (7, 10)]
    # Longest match first: 飲水 is one word, so water -> 飲水 (and not its 水).
    assert words(parallel_wps(pair("I drink water.", "我喝飲水。", tgt_lang="zh"), en_zh)) == \
        [("I", "我"), ("drink", "喝"), ("water", "飲水")]
    # 水 inside 水平 is not the word 水.
    assert words(parallel_wps(pair("The water level rises.", "水平上升。", tgt_lang="zh"), en_zh)) == \
        [("level", "水平"), ("rises", "上升")]


def test_japanese_substring_words(en_ja):
    got = parallel_wps(pair("This is a Japanese sentence.", "これは日本語の文です。", tgt_lang="ja"), en_ja)
    assert words(got) == [("This", "これ"), ("Japanese", "日本語"), ("sentence", "文")]
    assert [(s.tgt.start, s.tgt.end) for s in got] == [(0, 2), (3, 6), (7, 8)]


def test_seeded_draw_is_deterministic_and_order_free(en_de):
    pairs = [pair(f"The cat sees the red house {i}.", "Die Katze sieht das rote Haus.", id=str(i)) for i in range(12)]
    a = word_positioned_samples(pairs, en_de, seed=0)
    assert len(a) == 12 and a == word_positioned_samples(pairs, en_de, seed=0)
    assert word_positioned_samples(pairs[::-1], en_de, seed=0) == a[::-1]
    assert words(a) != words(word_positioned_samples(pairs, en_de, seed=1))
    assert len(word_positioned_samples(pairs, en_de, per_pair=None)) == 48
    two = word_positioned_samples(pairs[:1], en_de, per_pair=2)
    assert len(two) == 2 and two[0].src.start < two[1].src.start
    with pytest.raises(ValueError, match="per_pair"):
        word_positioned_samples(pairs, en_de, per_pair=0)


def test_pair_direction_must_match_dictionary(en_de):
    with pytest.raises(ValueError, match="de->en but the dictionary is en->de"):
        parallel_wps(pair("Die Katze.", "The cat.", "de", "en"), en_de)


def test_word_spans_feed_the_cce_of_a_tiny_encoder(en_de):
    enc = load_encoder("tiny:xlm-roberta")
    tokenization = Tokenization.from_encoder(enc)
    pairs = [pair("The cat sees the red house.", "Die Katze sieht das rote Haus.", id="a"),
             pair("Paris is big.", "Paris ist groß.", id="b")]
    samples = word_positioned_samples(pairs, en_de, tokenization)
    batch = enc.tokenize([s.tgt.text for s in samples])
    spans = word_spans([s.tgt for s in samples])
    for row, (s, (start, end)) in enumerate(zip(samples, spans.tolist())):
        assert enc.tokenizer.decode(batch["input_ids"][row, start:end]) == s.tgt.word
    states = enc.backbone(**batch, output_hidden_states=True).hidden_states
    out = ConcatenatedContextualEmbedding(enc.dim)(states, batch["attention_mask"], spans)
    assert out.shape == (2, enc.dim) and torch.isfinite(out).all()
    with pytest.raises(ValueError, match="no token span"):
        word_spans([s.src for s in word_positioned_samples(pairs, en_de)])


@pytest.mark.slow
def test_real_tokenizer_subtoken_positions(en_de, en_zh, xlmr_tokenizer):
    tokenization = Tokenization(xlmr_tokenizer, prefix="query: ")
    cases = [(pair("The cat sees the red house.", "Die Katze sieht das rote Haus."), en_de),
             (pair("I drink water.", "我喝水。", tgt_lang="zh"), en_zh)]
    for p, lexicon in cases:
        got = parallel_wps(p, lexicon, tokenization)
        assert len(got) >= 3, words(got)
        for s in got:
            for side in (s.src, s.tgt):
                ids = tokenization.encode(side.text).input_ids
                start, end = side.token_span
                assert start >= 4  # after <s> and the three tokens of "query:"
                decoded = xlmr_tokenizer.decode(ids[start:end]).strip()
                assert decoded == side.word, (side.word, xlmr_tokenizer.convert_ids_to_tokens(ids[start:end]))
