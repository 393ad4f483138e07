"""TokenAlignment, WordHard/SoftContrast and SpanContrast: naive loops, edge cases, properties, validation."""

from __future__ import annotations

import pytest
import torch

from xlt.losses.token_alignment import SpanContrast, TokenAlignment, WordHardContrast, WordSoftContrast

from .naive_parallel import (naive_span_contrast, naive_token_alignment, naive_word_hard_contrast,
                             naive_word_soft_contrast)

B, LS, LT, D = 4, 6, 5, 8


def token_batch(seed: int, dtype: torch.dtype = torch.float64) -> dict[str, torch.Tensor]:
    """Ragged pairs with garbage in the padding, a ragged many-to-many alignment.

    Pair 1 has no alignment; pair 3 is one token on each side (its anchors have no negative).
    """
    g = torch.Generator().manual_seed(seed)
    src_len = [int(torch.randint(2, LS + 1, (), generator=g)), LS, int(torch.randint(2, LS + 1, (), generator=g)), 1]
    tgt_len = [int(torch.randint(2, LT + 1, (), generator=g)), 3, LT, 1]
    src_mask = torch.arange(LS) < torch.tensor(src_len).unsqueeze(1)
    tgt_mask = torch.arange(LT) < torch.tensor(tgt_len).unsqueeze(1)
    src = torch.randn(B, LS, D, generator=g, dtype=dtype).masked_fill(~src_mask.unsqueeze(2), 50.0)
    tgt = torch.randn(B, LT, D, generator=g, dtype=dtype).masked_fill(~tgt_mask.unsqueeze(2), -50.0)
    rows = []
    for b in (0, 2):
        for _ in range(int(torch.randint(1, 5, (), generator=g))):
            rows.append([b, int(torch.randint(0, src_len[b], (), generator=g)),
                         int(torch.randint(0, tgt_len[b], (), generator=g))])
    rows.append([0, 0, 0])
    rows.append([0, 0, 1])  # one source token aligned to two target tokens
    rows.append([3, 0, 0])
    return dict(src_tokens=src.requires_grad_(), tgt_tokens=tgt.requires_grad_(), src_mask=src_mask.long(),
                tgt_mask=tgt_mask, alignment=torch.tensor(rows))


def span_batch(seed: int, dtype: torch.dtype = torch.float64) -> dict[str, torch.Tensor]:
    """Spans of varied lengths; pair 0 repeats a target span (aligned to two source spans); pair 2 has one span."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(3, 7, D, generator=g, dtype=dtype)
    tgt = torch.randn(3, 6, D, generator=g, dtype=dtype)
    src_spans = torch.tensor([[0, 0, 2], [0, 2, 3], [0, 3, 7], [0, 5, 6], [1, 0, 1], [1, 1, 4], [2, 0, 7]])
    tgt_spans = torch.tensor([[0, 0, 1], [0, 1, 4], [0, 4, 6], [0, 1, 4], [1, 3, 6], [1, 0, 3], [2, 2, 3]])
    return dict(src_tokens=src.requires_grad_(), tgt_tokens=tgt.requires_grad_(), src_spans=src_spans,
                tgt_spans=tgt_spans)


def loss_and_grads(loss: torch.Tensor, wrt: list[torch.Tensor]) -> list[torch.Tensor]:
    return [loss, *torch.autograd.grad(loss, wrt)]


def assert_all_close(got: list[torch.Tensor], want: list[torch.Tensor]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert torch.allclose(g, w), (g, w)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("cls, naive", [(TokenAlignment, naive_token_alignment),
                                        (WordHardContrast, naive_word_hard_contrast)], ids=["veco", "hard"])
def test_aligned_token_objectives_match_naive(seed: int, cls: type, naive) -> None:
    batch = token_batch(seed)
    wrt = [batch["src_tokens"], batch["tgt_tokens"]]
    obj = cls(temperature=0.2)
    assert_all_close(loss_and_grads(obj(batch), wrt), loss_and_grads(naive(**batch, temperature=0.2), wrt))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_word_soft_contrast_matches_naive(seed: int) -> None:
    torch.manual_seed(seed)
    obj = WordSoftContrast(embed_dim=D, num_heads=2, temperature=0.2).double()
    batch = token_batch(seed)
    del batch["alignment"]
    wrt = [batch["src_tokens"], batch["tgt_tokens"], *obj.attention.parameters()]
    want = loss_and_grads(naive_word_soft_contrast(**batch, attention=obj.attention, temperature=0.2), wrt)
    assert_all_close(loss_and_grads(obj(batch), wrt), want)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_span_contrast_matches_naive(seed: int) -> None:
    batch = span_batch(seed)
    wrt = [batch["src_tokens"], batch["tgt_tokens"]]
    assert_all_close(loss_and_grads(SpanContrast(temperature=0.2)(batch), wrt),
                     loss_and_grads(naive_span_contrast(**batch, temperature=0.2), wrt))


@pytest.mark.parametrize("cls", [TokenAlignment, WordHardContrast])
def test_pair_without_alignment_contributes_nothing(cls: type) -> None:
    batch = token_batch(0)
    obj = cls()
    kept = torch.tensor([0, 2])  # pair 1 has no alignment row, pair 3's anchors have no negative
    alignment = batch["alignment"][torch.isin(batch["alignment"][:, 0], kept)]
    alignment[:, 0] = torch.where(alignment[:, 0] == 2, 1, 0)
    smaller = {k: batch[k][kept] for k in ("src_tokens", "tgt_tokens", "src_mask", "tgt_mask")}
    assert torch.allclose(obj(batch), obj(dict(smaller, alignment=alignment)))


def no_contribution_cases() -> list:
    batch = token_batch(0)
    empty = dict(batch, alignment=torch.zeros(0, 3, dtype=torch.long))
    lonely = dict(batch, alignment=torch.tensor([[3, 0, 0]]))  # only the one-token pair
    ones = dict(src_tokens=torch.randn(2, 3, D, requires_grad=True),
                tgt_tokens=torch.randn(2, 4, D, requires_grad=True),
                src_mask=torch.tensor([[1, 0, 0], [1, 0, 0]]),  # one word per source sentence
                tgt_mask=torch.tensor([[1, 0, 0, 0], [0, 0, 0, 0]]))  # one word, then an empty sentence
    spans = span_batch(0)
    return [(TokenAlignment(), empty), (WordHardContrast(), empty), (TokenAlignment(), lonely),
            (WordHardContrast(), lonely), (WordSoftContrast(D, num_heads=2), ones),
            (SpanContrast(), dict(spans, src_spans=spans["src_spans"][-1:], tgt_spans=spans["tgt_spans"][-1:])),
            (SpanContrast(), dict(spans, src_spans=torch.zeros(0, 3, dtype=torch.long),
                                  tgt_spans=torch.zeros(0, 3, dtype=torch.long)))]


@pytest.mark.parametrize("obj, batch", no_contribution_cases(),
                         ids=["veco-empty", "hard-empty", "veco-no-negative", "hard-no-negative", "soft-one-word",
                              "span-one", "span-empty"])
def test_nothing_contributing_is_a_connected_zero(obj, batch: dict[str, torch.Tensor]) -> None:
    loss = obj(batch)
    assert loss.item() == 0.0 and loss.requires_grad
    grads = torch.autograd.grad(loss, [batch["src_tokens"], batch["tgt_tokens"]])
    assert all(torch.equal(g, torch.zeros_like(g)) for g in grads)


def all_objectives() -> list:
    return [TokenAlignment(), WordHardContrast(), WordSoftContrast(D, num_heads=2), SpanContrast()]


def batch_for(obj, seed: int = 0, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    if isinstance(obj, SpanContrast):
        return span_batch(seed, dtype)
    return token_batch(seed, dtype)


@pytest.mark.parametrize("obj", all_objectives(), ids=lambda o: o.name)
def test_identical_embeddings_give_a_finite_loss(obj) -> None:
    batch = batch_for(obj)
    same = {k: torch.ones_like(batch[k]).requires_grad_() for k in ("src_tokens", "tgt_tokens")}
    loss = obj({**batch, **same})
    assert torch.isfinite(loss) and loss > 0
    assert all(torch.isfinite(g).all() for g in torch.autograd.grad(loss, list(same.values())))
    zeros = {k: torch.zeros_like(batch[k]) for k in ("src_tokens", "tgt_tokens")}
    assert torch.isfinite(obj({**batch, **zeros}))


@pytest.mark.parametrize("obj", all_objectives(), ids=lambda o: o.name)
def test_batch_of_one(obj) -> None:
    batch = batch_for(obj)
    if isinstance(obj, SpanContrast):
        one = dict(src_tokens=batch["src_tokens"][:1], tgt_tokens=batch["tgt_tokens"][:1],
                   src_spans=batch["src_spans"][:4], tgt_spans=batch["tgt_spans"][:4])
    else:
        one = {k: batch[k][:1] for k in ("src_tokens", "tgt_tokens", "src_mask", "tgt_mask")}
        one["alignment"] = batch["alignment"][batch["alignment"][:, 0] == 0]
    loss = obj(one)
    assert torch.isfinite(loss) and loss > 0


@pytest.mark.parametrize("obj", all_objectives(), ids=lambda o: o.name)
def test_bf16_inputs_are_finite_and_close_to_fp32(obj) -> None:
    batch = batch_for(obj, dtype=torch.float32)
    full = obj(batch)
    low = obj({k: v.detach().bfloat16() if v.is_floating_point() else v for k, v in batch.items()})
    assert low.dtype == torch.float32 and torch.isfinite(low)
    assert low.item() == pytest.approx(full.item(), rel=0.05, abs=0.05)


@pytest.mark.parametrize("obj", all_objectives(), ids=lambda o: o.name)
def test_autocast_does_not_lower_the_similarity_precision(obj) -> None:
    batch = batch_for(obj, dtype=torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = obj(batch)
    # the attention of the soft contrast itself runs under autocast; the similarities never do
    rel = 0.05 if isinstance(obj, WordSoftContrast) else 1e-5
    assert mixed.dtype == torch.float32 and mixed.item() == pytest.approx(obj(batch).item(), rel=rel)


def aligned_and_shuffled(seed: int = 0) -> tuple[dict, dict]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(4, 8, 16, generator=g)
    tgt = src + 0.1 * torch.randn(4, 8, 16, generator=g)
    mask = torch.ones(4, 8, dtype=torch.bool)
    identity = torch.stack(torch.meshgrid(torch.arange(4), torch.arange(8), indexing="ij"), -1).reshape(-1, 2)
    alignment = torch.cat([identity, identity[:, 1:]], 1)  # (b, t, t)
    aligned = dict(src_tokens=src, tgt_tokens=tgt, src_mask=mask, tgt_mask=mask, alignment=alignment)
    return aligned, dict(aligned, tgt_tokens=tgt[:, torch.roll(torch.arange(8), 3)])


@pytest.mark.parametrize("cls", [TokenAlignment, WordHardContrast])
def test_aligned_tokens_score_lower_than_shuffled(cls: type) -> None:
    aligned, shuffled = aligned_and_shuffled()
    assert cls()(aligned) < cls()(shuffled)


def test_soft_contrast_with_a_sharp_identity_attention_prefers_aligned_pairs() -> None:
    obj = WordSoftContrast(16, num_heads=1)
    with torch.no_grad():  # attention ≈ "pick the most similar target token, return it"
        eye = torch.eye(16)
        obj.attention.in_proj_weight.copy_(torch.cat([3 * eye, 3 * eye, eye]))
        obj.attention.in_proj_bias.zero_()
        obj.attention.out_proj.weight.copy_(eye)
        obj.attention.out_proj.bias.zero_()
    aligned, _ = aligned_and_shuffled()
    del aligned["alignment"]
    other_pairs = dict(aligned, tgt_tokens=aligned["tgt_tokens"][torch.roll(torch.arange(4), 1)])
    assert obj(aligned) < obj(other_pairs)


def test_aligned_spans_score_lower_than_shuffled() -> None:
    aligned, _ = aligned_and_shuffled()
    bounds = torch.tensor([[0, 2], [2, 3], [3, 6], [6, 8]])
    spans = torch.cat([torch.arange(4).repeat_interleave(4).unsqueeze(1), bounds.repeat(4, 1)], 1)
    shuffled = spans.clone()
    shuffled[:, 1:] = bounds[torch.roll(torch.arange(4), 1)].repeat(4, 1)
    batch = dict(src_tokens=aligned["src_tokens"], tgt_tokens=aligned["tgt_tokens"], src_spans=spans)
    assert SpanContrast()(dict(batch, tgt_spans=spans)) < SpanContrast()(dict(batch, tgt_spans=shuffled))


@pytest.mark.parametrize("cls", [TokenAlignment, WordHardContrast, SpanContrast])
@pytest.mark.parametrize("temperature", [0.0, -1.0, float("nan")])
def test_temperature_must_be_positive(cls: type, temperature: float) -> None:
    with pytest.raises(ValueError, match=r"temperature=.* is invalid; τ must be a finite number > 0"):
        cls(temperature=temperature)


def test_soft_contrast_constructor_validation() -> None:
    with pytest.raises(ValueError, match="num_heads must be a positive int dividing embed_dim=10, got 4"):
        WordSoftContrast(10, num_heads=4)
    with pytest.raises(ValueError, match="embed_dim must be a positive int"):
        WordSoftContrast(0)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\), got 1.5"):
        WordSoftContrast(8, num_heads=2, dropout=1.5)
    with pytest.raises(ValueError, match="temperature"):
        WordSoftContrast(8, num_heads=2, temperature=0)
    with pytest.raises(ValueError, match="embed_dim=8"):
        WordSoftContrast(8, num_heads=2)(dict(src_tokens=torch.randn(1, 2, 4), tgt_tokens=torch.randn(1, 2, 4),
                                               src_mask=torch.ones(1, 2), tgt_mask=torch.ones(1, 2)))


def test_bad_alignment_is_named() -> None:
    batch = token_batch(0)
    with pytest.raises(ValueError, match=r"alignment row \[0, 0, 9\] is out of range"):
        TokenAlignment()(dict(batch, alignment=torch.tensor([[0, 0, 9]])))
    with pytest.raises(ValueError, match=r"alignment row \[3, 0, 1\] points at a padded position"):
        WordHardContrast()(dict(batch, alignment=torch.tensor([[3, 0, 1]])))
    with pytest.raises(ValueError, match=r"alignment must be an \(N, 3\) integer tensor"):
        TokenAlignment()(dict(batch, alignment=torch.zeros(2, 2, dtype=torch.long)))
    with pytest.raises(ValueError, match="src_mask must be"):
        TokenAlignment()(dict(batch, src_mask=batch["src_mask"][:, :2]))


def test_bad_spans_are_named() -> None:
    batch = span_batch(0)
    with pytest.raises(ValueError, match=r"src_spans row \[0, 3, 3\] is invalid"):
        SpanContrast()(dict(batch, src_spans=torch.tensor([[0, 3, 3]]), tgt_spans=torch.tensor([[0, 0, 1]])))
    with pytest.raises(ValueError, match=r"tgt_spans row \[0, 0, 9\] is invalid"):
        SpanContrast()(dict(batch, src_spans=torch.tensor([[0, 0, 1]]), tgt_spans=torch.tensor([[0, 0, 9]])))
    with pytest.raises(ValueError, match="row-aligned"):
        SpanContrast()(dict(batch, src_spans=torch.tensor([[0, 0, 1]]), tgt_spans=torch.tensor([[1, 0, 1]])))
