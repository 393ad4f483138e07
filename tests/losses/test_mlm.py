"""BERT masking statistics and invariants, the MLM loss against a naive loop, TLM inputs."""

from __future__ import annotations

import math

import pytest
import torch

from xlt.losses.base import WeightedObjectives
from xlt.losses.mlm import (IGNORE_INDEX, MLM_WEIGHT, MaskedLanguageModeling, MaskingVocabulary,
                            _random_non_special, mask_tokens, tlm_inputs)
from xlt.models.tiny import tiny_tokenizer

# The tiny tokenizer's layout: <s>=0 <pad>=1 </s>=2 <unk>=3 <mask>=4, then 256 byte tokens.
VOCAB = MaskingVocabulary(mask_token_id=4, vocab_size=261, special_ids=frozenset({0, 1, 2, 3, 4}))


def padded_batch(seed: int, rows: int = 64, length: int = 48) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``<s> bytes </s> <pad>...`` of random lengths (some of 1 content token)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 261, (rows, length), generator=g)
    lengths = torch.randint(3, length + 1, (rows,), generator=g)
    lengths[0] = 3
    pos = torch.arange(length)
    ids[:, 0] = 0
    ids = torch.where(pos == (lengths - 1).unsqueeze(1), torch.full_like(ids, 2), ids)
    attention = (pos < lengths.unsqueeze(1)).long()
    return ids.masked_fill(attention == 0, 1), attention


def within(count: int, n: int, p: float, sigmas: float = 4.5) -> bool:
    return abs(count - n * p) <= sigmas * math.sqrt(n * p * (1 - p)) + 1


def test_masked_fraction_and_80_10_10_split():
    chosen = masked = replaced = kept = maskable_total = 0
    for seed in range(20):
        ids, attention = padded_batch(seed)
        out, labels = mask_tokens(ids, VOCAB, generator=torch.Generator().manual_seed(seed), attention_mask=attention)
        sel = labels != IGNORE_INDEX
        maskable = (ids >= 5) & attention.bool()
        # Per row, exactly floor(p·n) or ceil(p·n) of its n maskable tokens (stochastic rounding).
        n, k = maskable.sum(1).double(), sel.sum(1).double()
        assert bool(((k == (0.15 * n).floor()) | (k == (0.15 * n).ceil())).all())
        chosen += int(sel.sum())
        maskable_total += int(maskable.sum())
        masked += int((out[sel] == 4).sum())
        same = out[sel] == ids[sel]
        kept += int(same.sum())
        replaced += int((~same & (out[sel] != 4)).sum())
    assert within(chosen, maskable_total, 0.15)
    # A random replacement equals the original with probability 1/256 and then counts as kept.
    assert within(masked, chosen, 0.8)
    assert within(replaced, chosen, 0.1 * 255 / 256)
    assert within(kept, chosen, 0.1 + 0.1 / 256)


def test_specials_and_padding_never_masked_labels_exactly_where_chosen():
    ids, attention = padded_batch(7)
    attention[3, 5:] = 0  # attention 0 on real ids: must be excluded too
    out, labels = mask_tokens(ids, VOCAB, probability=0.5, generator=torch.Generator().manual_seed(1),
                              attention_mask=attention)
    sel = labels != IGNORE_INDEX
    protected = (ids < 5) | (attention == 0)
    assert not bool(sel[protected].any())
    assert torch.equal(out[~sel], ids[~sel])  # nothing changes outside the chosen positions
    assert torch.equal(labels[sel], ids[sel])  # labels hold the original ids
    assert bool((out[sel & (out != ids)] != 0).all())
    random_ids = out[sel & (out != ids) & (out != 4)]
    assert bool((random_ids >= 5).all()), "a random replacement must never be a special token"


def test_probability_one_and_zero():
    ids, attention = padded_batch(3)
    maskable = (ids >= 5) & attention.bool()
    _, labels = mask_tokens(ids, VOCAB, probability=1.0, generator=torch.Generator().manual_seed(0))
    assert torch.equal(labels != IGNORE_INDEX, maskable)
    out, labels = mask_tokens(ids, VOCAB, probability=0.0, generator=torch.Generator().manual_seed(0))
    assert bool((labels == IGNORE_INDEX).all()) and torch.equal(out, ids)


def test_deterministic_under_seed():
    ids, attention = padded_batch(11)
    a = mask_tokens(ids, VOCAB, generator=torch.Generator().manual_seed(5))
    b = mask_tokens(ids, VOCAB, generator=torch.Generator().manual_seed(5))
    c = mask_tokens(ids, VOCAB, generator=torch.Generator().manual_seed(6))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])


def test_random_replacements_are_uniform_over_non_special_ids():
    vocab = MaskingVocabulary(mask_token_id=11, vocab_size=12, special_ids=frozenset({0, 2, 7, 9}))
    draws = _random_non_special(torch.Size([80_000]), vocab, torch.Generator().manual_seed(0), torch.device("cpu"))
    counts = torch.bincount(draws, minlength=12)
    allowed = [1, 3, 4, 5, 6, 8, 10]
    assert counts[[0, 2, 7, 9, 11]].sum() == 0
    for i in allowed:
        assert within(int(counts[i]), 80_000, 1 / len(allowed)), counts.tolist()


def test_vocabulary_from_tokenizer_and_validation():
    vocab = MaskingVocabulary.from_tokenizer(tiny_tokenizer())
    assert vocab == VOCAB
    assert MaskingVocabulary(3, 10, frozenset({0})).special_ids == {0, 3}  # the mask token is always special
    with pytest.raises(ValueError, match="probability"):
        mask_tokens(torch.zeros(1, 3, dtype=torch.long), VOCAB, probability=1.5)
    with pytest.raises(ValueError, match="mask_ratio"):
        mask_tokens(torch.zeros(1, 3, dtype=torch.long), VOCAB, mask_ratio=0.95, random_ratio=0.1)
    with pytest.raises(ValueError, match=r"\(B, L\)"):
        mask_tokens(torch.zeros(3, dtype=torch.long), VOCAB)


def naive_mlm(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    terms = []
    for b in range(labels.shape[0]):
        for t in range(labels.shape[1]):
            if labels[b, t] != IGNORE_INDEX:
                row = logits[b, t]
                terms.append(-(row[labels[b, t]] - torch.log(torch.exp(row).sum())))
    return sum(terms) / len(terms)


def test_loss_matches_naive_loop_with_gradient():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 7, generator=g, dtype=torch.float64, requires_grad=True)
    labels = torch.randint(0, 7, (3, 5), generator=g)
    labels[torch.rand(3, 5, generator=g) < 0.5] = IGNORE_INDEX
    labels[1] = IGNORE_INDEX  # a row with nothing to predict
    labels[0, 0] = 2
    loss = MaskedLanguageModeling()({"mlm_logits": logits, "mlm_labels": labels})
    want = naive_mlm(logits, labels)
    assert torch.allclose(loss, want)
    (got_grad,) = torch.autograd.grad(loss, logits)
    (want_grad,) = torch.autograd.grad(want, logits)
    assert torch.allclose(got_grad, want_grad)
    assert bool((got_grad[1] == 0).all())


def test_no_masked_position_gives_connected_zero():
    logits = torch.full((2, 3, 5), 60000.0, dtype=torch.float16, requires_grad=True)  # sum overflows fp16
    loss = MaskedLanguageModeling().compute_loss_from_embeddings(logits, torch.full((2, 3), IGNORE_INDEX))
    assert loss.item() == 0.0 and loss.requires_grad
    loss.backward()
    assert bool((logits.grad == 0).all())


def test_half_precision_logits_are_upcast():
    g = torch.Generator().manual_seed(1)
    logits = (torch.randn(2, 4, 9, generator=g) * 30).half()
    labels = torch.randint(0, 9, (2, 4), generator=g)
    loss = MaskedLanguageModeling().compute_loss_from_embeddings(logits, labels)
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    assert torch.allclose(loss, naive_mlm(logits.double(), labels).float(), rtol=1e-4)


def test_objective_interface():
    mlm = MaskedLanguageModeling()
    assert mlm.requires == ("mlm_logits", "mlm_labels")
    with pytest.raises(KeyError, match="mlm_labels"):
        mlm({"mlm_logits": torch.zeros(1, 2, 3)})
    with pytest.raises(ValueError, match=r"\(B, L, V\)"):
        mlm({"mlm_logits": torch.zeros(1, 2, 3), "mlm_labels": torch.zeros(2, 2, dtype=torch.long)})
    total, parts = WeightedObjectives({"mlm": (MLM_WEIGHT, mlm)})(
        {"mlm_logits": torch.zeros(1, 2, 4), "mlm_labels": torch.tensor([[1, IGNORE_INDEX]])})
    assert torch.allclose(parts["mlm"], torch.tensor(math.log(4)))
    assert torch.allclose(total, 0.1 * parts["mlm"])


def test_tlm_inputs_concatenate_the_pair():
    tok = tiny_tokenizer()
    enc = tlm_inputs(tok, ["ab", "a"], ["cd", "c"])
    a, b, c, d = (tok.convert_tokens_to_ids(x) for x in "abcd")
    # <s> src </s></s> tgt </s>, the shorter pair right-padded.
    assert enc["input_ids"].tolist() == [[0, a, b, 2, 2, c, d, 2], [0, a, 2, 2, c, 2, 1, 1]]
    assert enc["attention_mask"].tolist() == [[1] * 8, [1] * 6 + [0, 0]]
    assert "position_ids" not in enc  # positions run on through the pair (no reset)
    out, labels = mask_tokens(enc["input_ids"], tok, probability=1.0, generator=torch.Generator().manual_seed(0),
                              attention_mask=enc["attention_mask"])
    assert (labels != IGNORE_INDEX).tolist() == [[False, True, True, False, False, True, True, False],
                                                [False, True, False, False, True, False, False, False]]
    with pytest.raises(ValueError, match="aligned lists"):
        tlm_inputs(tok, ["a"], [])
