"""Each recipe's batch construction on hand-built pairs: token positions, alignments, spans, masks, MLM inputs."""

from __future__ import annotations

import re

import torch

from xlt.losses import ObjectiveConfig
from xlt.losses.mlm import IGNORE_INDEX, tlm_inputs
from xlt.pretrain.batches import PretrainBatcher, annotation_columns, keep_row, tokenization_of

from .helpers import CAT, DOG, NONE, annotated, tiny_config


def sentence_mask(text: str, length: int) -> list[bool]:
    """Byte-level tokens of an ASCII text: <s>, one per character (spaces are blank), </s>, padding."""
    mask = [False] + [c != " " for c in text] + [False]
    return mask + [False] * (length - len(mask))


def batcher_of(cfg) -> PretrainBatcher:
    return PretrainBatcher(tokenization_of(cfg.model), cfg.requires, cfg.batch.features, cfg.batch.mlm_input,
                           cfg.batch.mask_probability)


def check_sentence_rows(batch, texts, tokenizer):
    ids, attention, mask = batch["input_ids"], batch["attention_mask"], batch["token_mask"]
    assert ids.shape == (len(texts), max(len(t) for t in texts) + 2)
    for row, text in enumerate(texts):
        n = len(text) + 2
        assert tokenizer.decode(ids[row, 1:n - 1]) == text
        assert attention[row].tolist() == [1] * n + [0] * (ids.shape[1] - n)
        assert mask[row].tolist() == sentence_mask(text, ids.shape[1])


def check_masking(masked, labels, original, maskable, vocab_size):
    """Labels only at maskable positions, holding the original id; other positions untouched."""
    predicted = labels != IGNORE_INDEX
    assert predicted.any() and not (predicted & ~maskable).any()
    assert torch.equal(labels[predicted], original[predicted])
    assert torch.equal(masked[~predicted], original[~predicted])
    assert bool((masked >= 0).all() and (masked < vocab_size).all())
    n = maskable.sum(1).float()
    assert bool(((predicted.sum(1) - 0.15 * n).abs() < 1).all())  # ⌊p·n + u⌋ per row


def test_veco2_aligned_tokens_masks_and_tlm():
    cfg = tiny_config("veco2")
    assert annotation_columns(cfg.requires, "pooled") == ("alignment",)
    rows = annotated(cfg)
    # cat/Katze, sees/sieht, red/rote, house/Haus (the -> die/das is not one-to-one); dog/Hund; nothing.
    assert [r["alignment"] for r in rows] == [[5, 5, 9, 11, 18, 21, 22, 26], [7, 7], []]
    assert all(keep_row(r) for r in rows)
    batcher = batcher_of(cfg)
    batch = batcher(rows, generator=torch.Generator().manual_seed(0))
    assert set(batch) == {"input_ids", "attention_mask", "token_mask", "alignment", "mlm_input_ids",
                          "mlm_attention_mask", "mlm_labels"}
    texts = [CAT.src, DOG.src, NONE.src, CAT.tgt, DOG.tgt, NONE.tgt]
    check_sentence_rows(batch, texts, batcher.tokenizer)
    assert batch["alignment"].tolist() == [[0, 5, 5], [0, 9, 11], [0, 18, 21], [0, 22, 26], [1, 7, 7]]
    pair, i, j = batch["alignment"].unbind(1)
    assert bool(batch["token_mask"][pair, i].all() and batch["token_mask"][3 + pair, j].all())
    # TLM: "<s> src </s></s> tgt </s>" per pair, without the text prefix; masked within real tokens.
    tlm = tlm_inputs(batcher.tokenizer, [CAT.src, DOG.src, NONE.src], [CAT.tgt, DOG.tgt, NONE.tgt], max_length=64)
    assert torch.equal(batch["mlm_attention_mask"], tlm["attention_mask"])
    special = torch.isin(tlm["input_ids"], torch.tensor(batcher.tokenizer.all_special_ids))
    check_masking(batch["mlm_input_ids"], batch["mlm_labels"], tlm["input_ids"],
                  tlm["attention_mask"].bool() & ~special, len(batcher.tokenizer))
    again = batcher(rows, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again["mlm_input_ids"], batch["mlm_input_ids"])  # the generator decides the masking


def test_ml_ctl_word_positioned_samples_and_monolingual_mlm():
    cfg = tiny_config("ml-ctl")
    assert (cfg.batch.features, cfg.batch.mlm_input) == ("cce", "monolingual")
    rows = annotated(cfg)
    # Every admissible word pair of Alg. 1 as token spans [src start, src end, tgt start, tgt end].
    assert rows[0]["wps"] == [5, 8, 5, 10, 9, 13, 11, 16, 18, 21, 21, 25, 22, 27, 26, 30]
    assert rows[1]["wps"] == [7, 10, 7, 11]
    assert rows[2]["wps"] == [] and not keep_row(rows[2])
    kept = [r for r in rows if keep_row(r)]
    batcher = batcher_of(cfg)
    batch = batcher(kept, generator=torch.Generator().manual_seed(0), draw_seed="0:0")
    check_sentence_rows(batch, [CAT.src, DOG.src, CAT.tgt, DOG.tgt], batcher.tokenizer)
    spans = batch["word_spans"]
    assert spans.shape == (4, 2)
    decode = batcher.tokenizer.decode
    words = [(decode(batch["input_ids"][b, spans[b, 0]:spans[b, 1]]),
              decode(batch["input_ids"][2 + b, spans[2 + b, 0]:spans[2 + b, 1]])) for b in range(2)]
    assert words[0] in {("cat", "Katze"), ("sees", "sieht"), ("red", "rote"), ("house", "Haus")}
    assert words[1] == ("dog", "Hund")
    # One word pair per pair and epoch, the same for the same (seed, epoch), another for others.
    assert torch.equal(batcher(kept, draw_seed="0:0")["word_spans"], spans)
    drawn = {tuple(batcher(kept[:1], draw_seed=f"0:{epoch}")["word_spans"][0].tolist()) for epoch in range(12)}
    assert len(drawn) > 1
    # MLM on each sentence alone, only the sentence's own tokens predicted.
    assert batch["mlm_input_ids"].shape == batch["input_ids"].shape
    check_masking(batch["mlm_input_ids"], batch["mlm_labels"], batch["input_ids"], batch["token_mask"],
                  len(batcher.tokenizer))


def test_mgc_spans_and_noisy_positives():
    cfg = tiny_config("mgc")
    assert annotation_columns(cfg.requires, "pooled") == ("alignment", "spans", "src_noisy", "tgt_noisy")
    rows = annotated(cfg)
    assert rows[0]["spans"] == [5, 13, 5, 16, 5, 21, 5, 25, 9, 21, 11, 25, 9, 27, 11, 30, 18, 27, 21, 30]
    assert rows[1]["spans"] == rows[2]["spans"] == []  # one link is a word pair, not a span
    # x̂: y glossed back into English; ŷ: x glossed into German (a random choice among translations,
    # in the case of the source word).
    assert rows[0]["src_noisy"] == "The Cat sees the red House."
    assert re.fullmatch(r"(Die|Das) katze sieht (die|das) (rote|rot) (haus|gebäude)\.", rows[0]["tgt_noisy"])
    assert (rows[1]["src_noisy"], rows[1]["tgt_noisy"]) == ("Hallo Dog.", "Hello hund.")
    assert (rows[2]["src_noisy"], rows[2]["tgt_noisy"]) == (NONE.src, NONE.tgt)  # nothing to change: clean
    batcher = batcher_of(cfg)
    batch = batcher(rows, generator=torch.Generator().manual_seed(0))
    texts = [r["src"] for r in rows] + [r["tgt"] for r in rows] + [r["src_noisy"] for r in rows] + \
        [r["tgt_noisy"] for r in rows]
    assert batch["input_ids"].shape[0] == 12
    for row, text in enumerate(texts):
        assert batcher.tokenizer.decode(batch["input_ids"][row], skip_special_tokens=True) == text
    assert batch["src_spans"].tolist() == [[0, 5, 13], [0, 5, 21], [0, 9, 21], [0, 9, 27], [0, 18, 27]]
    assert batch["tgt_spans"].tolist() == [[0, 5, 16], [0, 5, 25], [0, 11, 25], [0, 11, 30], [0, 21, 30]]
    decode = batcher.tokenizer.decode
    assert decode(batch["input_ids"][0, 5:13]) == "cat sees" and decode(batch["input_ids"][3, 5:16]) == "Katze sieht"
    assert batch["mlm_input_ids"].shape[0] == 3  # the concatenated pairs


def test_soft_contrast_needs_no_dictionary_columns():
    cfg = tiny_config("custom", (ObjectiveConfig("word_soft_contrast"), ObjectiveConfig("parallel_info_nce")))
    assert annotation_columns(cfg.requires, cfg.batch.features) == ()
    rows = annotated(cfg)
    batch = batcher_of(cfg)(rows)
    assert set(batch) == {"input_ids", "attention_mask", "token_mask"}
