from __future__ import annotations

import pytest
import torch

from xlt.losses.multiview import SIMILARITIES, MultiViewAlignment

from .naive_sentence import naive_multiview_alignment, random_view_batch

# views per original: one view each; t_f + t_p + t_c = 2 + 2 + 1 (XNLI, Wang et al. 2022, §4.1) mixed with
# originals without views; a single original with several views
COMPOSITIONS = [[1, 1, 1, 1], [5, 5, 2, 0, 3], [3]]


def _phi(batch: dict[str, torch.Tensor], similarity: str) -> torch.Tensor:
    return batch["features"] if similarity in ("cosine", "mse") else batch["logits"]


@pytest.mark.parametrize("similarity", SIMILARITIES)
@pytest.mark.parametrize("views", COMPOSITIONS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_naive_loss_and_gradient(similarity: str, views: list[int], seed: int) -> None:
    batch = random_view_batch(views, seed=seed)
    x = _phi(batch, similarity)
    loss = MultiViewAlignment(similarity)({k: batch[k] for k in ("features", "logits", "group", "is_anchor")})
    expected = naive_multiview_alignment(x, batch["group"], batch["is_anchor"], similarity)
    (grad,) = torch.autograd.grad(loss, x)
    (expected_grad,) = torch.autograd.grad(expected, x)
    assert loss.dtype == torch.float64
    assert torch.allclose(loss, expected)
    assert torch.allclose(grad, expected_grad)


@pytest.mark.parametrize("similarity", SIMILARITIES)
def test_requires_reads_phi_from_the_right_key(similarity: str) -> None:
    key = "features" if similarity in ("cosine", "mse") else "logits"
    assert MultiViewAlignment(similarity).requires == (key, "group", "is_anchor")


def test_default_is_cosine_and_missing_key_is_named() -> None:
    mva = MultiViewAlignment()
    assert mva.similarity == "cosine"
    with pytest.raises(KeyError, match="features"):
        mva({"logits": torch.zeros(2, 3), "group": torch.tensor([0, 0]), "is_anchor": torch.tensor([True, False])})


def test_bad_similarity_is_named_with_the_valid_set() -> None:
    with pytest.raises(ValueError, match=r"similarity='dot'.*'cosine', 'kl', 'symmetric_kl', 'mse'"):
        MultiViewAlignment("dot")  # type: ignore[arg-type]


@pytest.mark.parametrize("similarity", SIMILARITIES)
def test_no_views_gives_a_connected_zero(similarity: str) -> None:
    for views in ([0], [0, 0, 0]):  # a batch of one; originals only
        batch = random_view_batch(views)
        x = _phi(batch, similarity)
        loss = MultiViewAlignment(similarity).compute_loss_from_embeddings(x, batch["group"], batch["is_anchor"])
        assert loss.item() == 0 and loss.grad_fn is not None
        loss.backward()
        assert torch.equal(x.grad, torch.zeros_like(x))


@pytest.mark.parametrize("similarity", SIMILARITIES)
def test_identical_rows(similarity: str) -> None:
    batch = random_view_batch([2, 3])
    x = torch.ones(len(batch["group"]), 4, requires_grad=True)
    loss = MultiViewAlignment(similarity).compute_loss_from_embeddings(x, batch["group"], batch["is_anchor"])
    assert loss.item() == pytest.approx(-1.0 if similarity == "cosine" else 0.0, abs=1e-6)
    loss.backward()
    assert torch.isfinite(x.grad).all()


@pytest.mark.parametrize("similarity", SIMILARITIES)
def test_bf16_is_finite_and_computed_in_float32(similarity: str) -> None:
    batch = random_view_batch([2, 2, 1], dtype=torch.bfloat16)
    x = _phi(batch, similarity)
    loss = MultiViewAlignment(similarity).compute_loss_from_embeddings(x, batch["group"], batch["is_anchor"])
    reference = MultiViewAlignment(similarity).compute_loss_from_embeddings(
        x.detach().double(), batch["group"], batch["is_anchor"]
    )
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss) and torch.isfinite(x.grad.float()).all()
    assert loss.item() == pytest.approx(reference.item(), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("similarity", SIMILARITIES)
def test_aligned_views_beat_shuffled_views(similarity: str) -> None:
    g = torch.Generator().manual_seed(0)
    n, v = 6, 2
    centers = torch.randn(n, 16, generator=g) * 3
    originals = centers
    views = centers.repeat_interleave(v, 0) + 0.1 * torch.randn(n * v, 16, generator=g)
    group = torch.cat([torch.arange(n), torch.arange(n).repeat_interleave(v)])
    is_anchor = torch.arange(n * (1 + v)) < n
    mva = MultiViewAlignment(similarity)
    aligned = mva.compute_loss_from_embeddings(torch.cat([originals, views]), group, is_anchor)
    shuffled_views = views.roll(v, dims=0)  # every view now belongs to the next original
    shuffled = mva.compute_loss_from_embeddings(torch.cat([originals, shuffled_views]), group, is_anchor)
    assert aligned < shuffled


def test_inconsistent_group_is_rejected() -> None:
    x = torch.randn(3, 4)
    mva = MultiViewAlignment()
    with pytest.raises(ValueError, match=r"row 1 \(anchor\) has group 0"):
        mva.compute_loss_from_embeddings(x, torch.tensor([0, 0, 0]), torch.tensor([True, True, False]))
    with pytest.raises(ValueError, match=r"row 1 \(view\) has group 1"):
        mva.compute_loss_from_embeddings(x, torch.tensor([0, 1, 1]), torch.tensor([True, False, False]))
    with pytest.raises(ValueError, match="shape"):
        mva.compute_loss_from_embeddings(x, torch.tensor([0, 0]), torch.tensor([True, False]))
