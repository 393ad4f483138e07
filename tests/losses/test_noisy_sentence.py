"""NoisySentenceContrast against the naive loop, edge cases, a property, validation."""

from __future__ import annotations

import math

import pytest
import torch

from xlt.losses.noisy_sentence import NoisySentenceContrast

from .naive_parallel import naive_noisy_sentence_contrast

KEYS = ("src_features", "tgt_features", "src_noisy_features", "tgt_noisy_features")


def sentence_batch(seed: int, n: int = 5, d: int = 8, noise: float = 0.8,
                   dtype: torch.dtype = torch.float64) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(n, d, generator=g, dtype=dtype)
    tgt = src + noise * torch.randn(n, d, generator=g, dtype=dtype)
    src_bt = src + noise * torch.randn(n, d, generator=g, dtype=dtype)
    tgt_bt = tgt + noise * torch.randn(n, d, generator=g, dtype=dtype)
    return {k: v.requires_grad_() for k, v in zip(KEYS, (src, tgt, src_bt, tgt_bt))}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_matches_naive_loss_and_gradients(seed: int) -> None:
    batch = sentence_batch(seed)
    wrt = [batch[k] for k in KEYS]
    loss = NoisySentenceContrast(temperature=0.2)(batch)
    want = naive_noisy_sentence_contrast(**batch, temperature=0.2)
    assert torch.allclose(loss, want)
    for g, w in zip(torch.autograd.grad(loss, wrt), torch.autograd.grad(want, wrt)):
        assert torch.allclose(g, w)


def test_clean_noisy_equals_sum_of_plain_in_batch_contrasts() -> None:
    # With x̂ = x and ŷ = y the four combinations coincide: 4 × (one symmetric in-batch contrast).
    batch = sentence_batch(0)
    clean = dict(batch, src_noisy_features=batch["src_features"], tgt_noisy_features=batch["tgt_features"])
    one = NoisySentenceContrast()(clean) / 4
    x = torch.nn.functional.normalize(batch["src_features"], dim=-1)
    y = torch.nn.functional.normalize(batch["tgt_features"], dim=-1)
    logits = x @ y.T / 0.1
    labels = torch.arange(len(x))
    expected = torch.nn.functional.cross_entropy(logits, labels) + torch.nn.functional.cross_entropy(logits.T, labels)
    assert torch.allclose(one, expected)


def test_batch_of_one_is_a_connected_zero() -> None:
    batch = sentence_batch(0, n=1)
    loss = NoisySentenceContrast()(batch)
    assert loss.item() == 0.0 and loss.requires_grad
    grads = torch.autograd.grad(loss, [batch[k] for k in KEYS])
    assert all(torch.equal(g, torch.zeros_like(g)) for g in grads)


def test_identical_embeddings_give_8_log_b() -> None:
    same = torch.ones(4, 8, requires_grad=True)
    loss = NoisySentenceContrast()(dict.fromkeys(KEYS, same))
    assert loss.item() == pytest.approx(8 * math.log(4), rel=1e-5)
    (grad,) = torch.autograd.grad(loss, same)
    assert torch.isfinite(grad).all()
    assert torch.isfinite(NoisySentenceContrast()(dict.fromkeys(KEYS, torch.zeros(3, 8))))


def test_bf16_inputs_are_finite_and_close_to_fp32() -> None:
    batch = {k: v.detach().float() for k, v in sentence_batch(1, n=16, d=32).items()}
    full = NoisySentenceContrast()(batch)
    low = NoisySentenceContrast()({k: v.bfloat16() for k, v in batch.items()})
    assert low.dtype == torch.float32 and torch.isfinite(low)
    assert low.item() == pytest.approx(full.item(), rel=0.05)


def test_autocast_does_not_lower_the_similarity_precision() -> None:
    batch = {k: v.detach().float() for k, v in sentence_batch(1, n=16, d=32).items()}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = NoisySentenceContrast()(batch)
    assert mixed.item() == pytest.approx(NoisySentenceContrast()(batch).item(), rel=1e-5)


def test_aligned_pairs_score_lower_than_shuffled() -> None:
    batch = {k: v.detach().float() for k, v in sentence_batch(0, n=8, d=16, noise=0.1).items()}
    roll = torch.roll(torch.arange(8), 1)
    shuffled = dict(batch, tgt_features=batch["tgt_features"][roll],
                    tgt_noisy_features=batch["tgt_noisy_features"][roll])
    assert NoisySentenceContrast()(batch) < NoisySentenceContrast()(shuffled)


@pytest.mark.parametrize("temperature", [0, -0.1, float("inf")])
def test_temperature_must_be_positive(temperature: float) -> None:
    with pytest.raises(ValueError, match=r"temperature=.* is invalid; τ must be a finite number > 0"):
        NoisySentenceContrast(temperature=temperature)


def test_inputs_are_validated() -> None:
    batch = sentence_batch(0)
    with pytest.raises(ValueError, match=r"same shape, got \(5, 8\), \(5, 8\), \(4, 8\), \(5, 8\)"):
        NoisySentenceContrast()(dict(batch, src_noisy_features=batch["src_noisy_features"][:4]))
    with pytest.raises(KeyError, match="tgt_noisy_features"):
        NoisySentenceContrast()({k: batch[k] for k in KEYS[:3]})
