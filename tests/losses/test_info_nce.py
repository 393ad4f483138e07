"""ParallelInfoNCE and CrossZeroNCE against the naive loops, edge cases, a property, validation."""

from __future__ import annotations

import math

import pytest
import torch

from xlt.losses.info_nce import CrossZeroNCE, ParallelInfoNCE

from .naive_parallel import naive_cross_zero_nce, naive_parallel_info_nce


def pairs(seed: int, n: int = 5, d: int = 8, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(n, d, generator=g, dtype=dtype)
    tgt = src + 0.8 * torch.randn(n, d, generator=g, dtype=dtype)
    return src.requires_grad_(), tgt.requires_grad_()


def loss_and_grads(fn, src: torch.Tensor, tgt: torch.Tensor) -> tuple[torch.Tensor, ...]:
    loss = fn(src, tgt)
    return (loss, *torch.autograd.grad(loss, (src, tgt)))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("positive_in_denominator", [True, False])
def test_matches_naive_loss_and_gradients(seed: int, symmetric: bool, positive_in_denominator: bool) -> None:
    src, tgt = pairs(seed)
    obj = ParallelInfoNCE(temperature=0.1, symmetric=symmetric, positive_in_denominator=positive_in_denominator)
    got = loss_and_grads(obj.compute_loss_from_embeddings, src, tgt)
    want = loss_and_grads(lambda s, t: naive_parallel_info_nce(s, t, 0.1, symmetric, positive_in_denominator), src, tgt)
    for g, w in zip(got, want):
        assert torch.allclose(g, w)


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("symmetric", [True, False])
def test_cross_zero_nce_matches_naive_and_is_the_option(seed: int, symmetric: bool) -> None:
    src, tgt = pairs(seed, n=4)
    got = loss_and_grads(CrossZeroNCE(symmetric=symmetric).compute_loss_from_embeddings, src, tgt)
    want = loss_and_grads(lambda s, t: naive_cross_zero_nce(s, t, 0.07, symmetric), src, tgt)
    same = loss_and_grads(ParallelInfoNCE(symmetric=symmetric, positive_in_denominator=False)
                          .compute_loss_from_embeddings, src, tgt)
    for g, w, s in zip(got, want, same):
        assert torch.allclose(g, w) and torch.allclose(g, s)


def test_forward_reads_outputs() -> None:
    src, tgt = pairs(0)
    obj = ParallelInfoNCE()
    assert torch.equal(obj({"src_features": src, "tgt_features": tgt}), obj.compute_loss_from_embeddings(src, tgt))
    with pytest.raises(KeyError, match="tgt_features"):
        obj({"src_features": src})


def test_cross_zero_nce_crosses_zero() -> None:
    src = torch.eye(4)  # orthogonal sentences, each with its exact translation
    assert CrossZeroNCE()(dict(src_features=src, tgt_features=src.clone())) < 0
    assert ParallelInfoNCE()(dict(src_features=src, tgt_features=src.clone())) > 0


@pytest.mark.parametrize("obj", [ParallelInfoNCE(), CrossZeroNCE()], ids=["infonce", "cznce"])
def test_batch_of_one_contributes_nothing(obj: ParallelInfoNCE) -> None:
    src, tgt = pairs(0, n=1)
    loss = obj.compute_loss_from_embeddings(src, tgt)
    assert loss.item() == 0.0 and loss.requires_grad
    grads = torch.autograd.grad(loss, (src, tgt))
    assert all(torch.equal(g, torch.zeros_like(g)) for g in grads)


@pytest.mark.parametrize("obj, expected", [(ParallelInfoNCE(), math.log(2 * 4 - 1)),
                                           (CrossZeroNCE(), math.log(2 * 4 - 2))], ids=["infonce", "cznce"])
def test_identical_embeddings_are_finite(obj: ParallelInfoNCE, expected: float) -> None:
    same = torch.ones(4, 8, requires_grad=True)
    loss = obj.compute_loss_from_embeddings(same, same)
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    (grad,) = torch.autograd.grad(loss, same)
    assert torch.isfinite(grad).all()
    assert torch.isfinite(obj.compute_loss_from_embeddings(torch.zeros(3, 8), torch.zeros(3, 8)))


@pytest.mark.parametrize("obj", [ParallelInfoNCE(), CrossZeroNCE()], ids=["infonce", "cznce"])
def test_bf16_inputs_are_finite_and_close_to_fp32(obj: ParallelInfoNCE) -> None:
    src, tgt = (t.detach().float() for t in pairs(1, n=16, d=32))
    low = obj.compute_loss_from_embeddings(src.bfloat16(), tgt.bfloat16())
    assert low.dtype == torch.float32 and torch.isfinite(low)
    assert low.item() == pytest.approx(obj.compute_loss_from_embeddings(src, tgt).item(), rel=0.05, abs=0.05)


@pytest.mark.parametrize("obj", [ParallelInfoNCE(), CrossZeroNCE()], ids=["infonce", "cznce"])
def test_autocast_does_not_lower_the_similarity_precision(obj: ParallelInfoNCE) -> None:
    # Well-separated pairs: the InfoNCE value is ~3e-3, which bf16 cosines would round to 0.
    src, tgt = (t.detach().float() for t in pairs(0, n=16, d=32))
    tgt = src + 0.5 * (tgt - src)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = obj.compute_loss_from_embeddings(src, tgt)
    assert mixed.item() == pytest.approx(obj.compute_loss_from_embeddings(src, tgt).item(), rel=1e-5)


@pytest.mark.parametrize("obj", [ParallelInfoNCE(), ParallelInfoNCE(symmetric=False), CrossZeroNCE()],
                         ids=["infonce", "one-way", "cznce"])
def test_aligned_pairs_score_lower_than_shuffled(obj: ParallelInfoNCE) -> None:
    g = torch.Generator().manual_seed(0)
    src = torch.randn(8, 16, generator=g)
    tgt = src + 0.1 * torch.randn(8, 16, generator=g)
    shuffled = tgt[torch.roll(torch.arange(8), 1)]
    assert obj.compute_loss_from_embeddings(src, tgt) < obj.compute_loss_from_embeddings(src, shuffled)


@pytest.mark.parametrize("temperature", [0, -0.5, float("nan"), float("inf")])
def test_temperature_must_be_positive(temperature: float) -> None:
    with pytest.raises(ValueError, match=r"temperature=.* is invalid; τ must be a finite number > 0"):
        ParallelInfoNCE(temperature=temperature)
    with pytest.raises(ValueError, match="temperature"):
        CrossZeroNCE(temperature=temperature)


def test_mismatched_shapes_are_named() -> None:
    with pytest.raises(ValueError, match=r"\(4, 8\) and \(3, 8\)"):
        ParallelInfoNCE().compute_loss_from_embeddings(torch.randn(4, 8), torch.randn(3, 8))
