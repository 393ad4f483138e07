from __future__ import annotations

import math

import pytest
import torch

from xlt.losses.contrastive import ContrastiveAlignment

from .naive_sentence import naive_contrastive_alignment, random_view_batch

# one view per original; the XNLI mix t_f + t_p + t_c = 5 views (Wang et al. 2022, §4.1) beside originals
# with fewer or no views; two originals only
COMPOSITIONS = [[1, 1, 1, 1], [5, 5, 2, 0, 3], [2, 3]]


@pytest.mark.parametrize("temperature", [1.0, 0.1])
@pytest.mark.parametrize("views", COMPOSITIONS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_naive_loss_and_gradient(temperature: float, views: list[int], seed: int) -> None:
    batch = random_view_batch(views, seed=seed)
    x = batch["features"]
    loss = ContrastiveAlignment(temperature)(batch)
    expected = naive_contrastive_alignment(x, batch["group"], batch["is_anchor"], temperature)
    (grad,) = torch.autograd.grad(loss, x)
    (expected_grad,) = torch.autograd.grad(expected, x)
    assert torch.allclose(loss, expected)
    assert torch.allclose(grad, expected_grad)


def test_interface() -> None:
    cl = ContrastiveAlignment()
    assert cl.temperature == 1.0
    assert cl.requires == ("features", "group", "is_anchor")


@pytest.mark.parametrize("bad", [0, -0.5, float("nan"), float("inf"), "1.0"])
def test_bad_temperature_is_named(bad: object) -> None:
    with pytest.raises(ValueError, match=r"temperature=.* must be a finite number > 0"):
        ContrastiveAlignment(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("views", [[0], [3], [0, 0], [2, 0]])
def test_no_negative_or_no_view_gives_a_connected_zero(views: list[int]) -> None:
    """A batch of one, one original with views (no negatives), originals without views."""
    batch = random_view_batch(views)
    loss = ContrastiveAlignment().compute_loss_from_embeddings(batch["features"], batch["group"], batch["is_anchor"])
    assert loss.item() == 0 and loss.grad_fn is not None
    loss.backward()
    assert torch.equal(batch["features"].grad, torch.zeros_like(batch["features"]))


def test_hand_computed_reading() -> None:
    """Original a with views v1, v2; original b with view w (τ = 1). a's other own view is not
    among its negatives, other originals are never negatives, one term per pair, mean."""
    a, v1, v2, b, w = [1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [-1.0, 0.0]
    x = torch.tensor([a, v1, v2, b, w])
    group = torch.tensor([0, 0, 0, 3, 3])
    is_anchor = torch.tensor([True, False, False, True, False])
    e = math.e
    terms = [
        -math.log(e / (e + 1 / e)),  # (a, v1): negative w only
        -math.log(1 / (1 + 1 / e)),  # (a, v2): negative w only
        -math.log(1 / (1 + 1 + e)),  # (b, w): negatives v1, v2
    ]
    loss = ContrastiveAlignment(1.0).compute_loss_from_embeddings(x, group, is_anchor)
    assert loss.item() == pytest.approx(sum(terms) / 3)


def test_identical_embeddings_give_log_of_candidates() -> None:
    batch = random_view_batch([2, 2, 2])
    x = torch.ones(len(batch["group"]), 4, requires_grad=True)
    loss = ContrastiveAlignment(0.05).compute_loss_from_embeddings(x, batch["group"], batch["is_anchor"])
    assert loss.item() == pytest.approx(math.log(1 + 4))  # own view + the 4 views of the others
    loss.backward()
    assert torch.isfinite(x.grad).all()


@pytest.mark.parametrize("temperature", [1.0, 0.05])
def test_bf16_is_finite(temperature: float) -> None:
    batch = random_view_batch([2, 2, 1, 3], dtype=torch.bfloat16)
    x = batch["features"]
    loss = ContrastiveAlignment(temperature).compute_loss_from_embeddings(x, batch["group"], batch["is_anchor"])
    reference = ContrastiveAlignment(temperature).compute_loss_from_embeddings(
        x.detach().double(), batch["group"], batch["is_anchor"]
    )
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss) and torch.isfinite(x.grad.float()).all()
    assert loss.item() == pytest.approx(reference.item(), rel=1e-4)


def test_aligned_views_beat_shuffled_views() -> None:
    g = torch.Generator().manual_seed(0)
    n, v = 6, 3
    centers = torch.randn(n, 16, generator=g)
    views = centers.repeat_interleave(v, 0) + 0.1 * torch.randn(n * v, 16, generator=g)
    group = torch.cat([torch.arange(n), torch.arange(n).repeat_interleave(v)])
    is_anchor = torch.arange(n * (1 + v)) < n
    cl = ContrastiveAlignment(0.1)
    aligned = cl.compute_loss_from_embeddings(torch.cat([centers, views]), group, is_anchor)
    shuffled = cl.compute_loss_from_embeddings(torch.cat([centers, views.roll(v, dims=0)]), group, is_anchor)
    assert aligned < shuffled
