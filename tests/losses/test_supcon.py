from __future__ import annotations

import math

import pytest
import torch

from xlt.losses.supcon import LabelAlignment, SupervisedContrastiveAlignment

from .naive_sentence import naive_label_alignment, naive_supervised_contrastive_alignment, random_view_batch

COMPOSITIONS = [[1, 1, 1, 1], [5, 5, 2, 0, 3], [2, 3, 1]]


def _scl_inputs(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    return batch["features"], batch["labels"], batch["group"], batch["is_anchor"]


# --- SCL (Wang et al. 2022, §3.3) ------------------------------------------------------------------------


@pytest.mark.parametrize("n_labels", [2, 3])
@pytest.mark.parametrize("views", COMPOSITIONS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scl_matches_naive_loss_and_gradient(n_labels: int, views: list[int], seed: int) -> None:
    batch = random_view_batch(views, n_labels=n_labels, seed=seed)
    if seed == 2:  # unknown labels on a few rows (an anchor and/or views)
        batch["labels"][::3] = -1
    x = batch["features"]
    loss = SupervisedContrastiveAlignment(0.5)(batch)
    expected = naive_supervised_contrastive_alignment(*_scl_inputs(batch), temperature=0.5)
    (grad,) = torch.autograd.grad(loss, x)
    (expected_grad,) = torch.autograd.grad(expected, x)
    assert torch.allclose(loss, expected)
    assert torch.allclose(grad, expected_grad)


def test_scl_interface() -> None:
    scl = SupervisedContrastiveAlignment()
    assert scl.temperature == 1.0
    assert scl.requires == ("features", "labels", "group", "is_anchor")


@pytest.mark.parametrize("cls", [SupervisedContrastiveAlignment, LabelAlignment])
@pytest.mark.parametrize("bad", [0.0, -1, float("nan")])
def test_bad_temperature_is_named(cls: type, bad: float) -> None:
    with pytest.raises(ValueError, match=r"temperature=.* must be a finite number > 0"):
        cls(temperature=bad)


def test_scl_hand_computed_same_class_views_are_not_negatives() -> None:
    """a (label 0) with view va; b (label 0) with view vb; c (label 1) with view vc; τ = 1.
    For a, vb has its class: not a negative; vc is the only one."""
    a, va, b, vb, c, vc = [1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [-1.0, 0.0], [-1.0, 0.0]
    x = torch.tensor([a, va, b, vb, c, vc])
    labels = torch.tensor([0, 0, 0, 0, 1, 1])
    group = torch.tensor([0, 0, 2, 2, 4, 4])
    is_anchor = torch.tensor([True, False, True, False, True, False])
    e = math.e
    terms = [
        -math.log(e / (e + 1 / e)),  # (a, va): negative vc (cos −1)
        -math.log(e / (e + 1)),  # (b, vb): negative vc (cos 0)
        -math.log(e / (e + 1 / e + 1)),  # (c, vc): negatives va (cos −1), vb (cos 0)
    ]
    loss = SupervisedContrastiveAlignment(1.0).compute_loss_from_embeddings(x, labels, group, is_anchor)
    assert loss.item() == pytest.approx(sum(terms) / 3)


@pytest.mark.parametrize("views", [[0], [3], [2, 2, 1]])
def test_scl_no_negative_gives_a_connected_zero(views: list[int]) -> None:
    """A batch of one, one original with views, several originals of one class."""
    batch = random_view_batch(views, n_labels=1)
    loss = SupervisedContrastiveAlignment().compute_loss_from_embeddings(*_scl_inputs(batch))
    assert loss.item() == 0 and loss.grad_fn is not None
    loss.backward()
    assert torch.equal(batch["features"].grad, torch.zeros_like(batch["features"]))


def test_scl_unlabelled_anchors_contribute_nothing() -> None:
    batch = random_view_batch([2, 2, 2], n_labels=3, seed=1)
    batch["labels"][batch["is_anchor"]] = -1
    loss = SupervisedContrastiveAlignment().compute_loss_from_embeddings(*_scl_inputs(batch))
    assert loss.item() == 0 and loss.grad_fn is not None


def test_scl_class_seen_once() -> None:
    """Three originals of class 0 and one of class 1: the class-1 original is seen once (every
    other view is its negative); every class-0 pair has only its views as negatives."""
    batch = random_view_batch([2, 1, 3, 2], n_labels=1, seed=4)
    last_original = batch["group"][batch["is_anchor"]].max()
    batch["labels"][batch["group"] == last_original] = 1
    loss = SupervisedContrastiveAlignment().compute_loss_from_embeddings(*_scl_inputs(batch))
    expected = naive_supervised_contrastive_alignment(*_scl_inputs(batch))
    assert torch.isfinite(loss) and loss.item() > 0 and torch.allclose(loss, expected)


def test_scl_identical_embeddings_are_finite() -> None:
    batch = random_view_batch([2, 2, 2], shuffle=False)
    labels = batch["group"] % 2  # originals at rows 0, 3, 6: classes 0, 1, 0
    x = torch.ones(len(labels), 4, requires_grad=True)
    scl = SupervisedContrastiveAlignment(0.05)
    loss = scl.compute_loss_from_embeddings(x, labels, batch["group"], batch["is_anchor"])
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(x.grad).all()
    # 4 class-0 pairs with 2 negatives each, 2 class-1 pairs with 4: log(1 + #negatives)
    assert loss.item() == pytest.approx((4 * math.log(3) + 2 * math.log(5)) / 6)


def test_scl_bf16_is_finite() -> None:
    batch = random_view_batch([2, 2, 1, 3], n_labels=2, seed=5, dtype=torch.bfloat16)
    x, rest = batch["features"], _scl_inputs(batch)[1:]
    loss = SupervisedContrastiveAlignment(0.05).compute_loss_from_embeddings(x, *rest)
    reference = SupervisedContrastiveAlignment(0.05).compute_loss_from_embeddings(x.detach().double(), *rest)
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss) and torch.isfinite(x.grad.float()).all()
    assert loss.item() == pytest.approx(reference.item(), rel=1e-4)


def test_scl_aligned_views_beat_shuffled_views() -> None:
    g = torch.Generator().manual_seed(0)
    n, v = 6, 3
    centers = torch.randn(n, 16, generator=g)
    views = centers.repeat_interleave(v, 0) + 0.1 * torch.randn(n * v, 16, generator=g)
    group = torch.cat([torch.arange(n), torch.arange(n).repeat_interleave(v)])
    labels = group % 2
    is_anchor = torch.arange(n * (1 + v)) < n
    scl = SupervisedContrastiveAlignment(0.1)
    aligned = scl.compute_loss_from_embeddings(torch.cat([centers, views]), labels, group, is_anchor)
    shuffled = scl.compute_loss_from_embeddings(torch.cat([centers, views.roll(v, dims=0)]), labels, group, is_anchor)
    assert aligned < shuffled


# --- LA (Yu & Joty 2021, Eq. 2) ------------------------------------------------------------------------


LABELINGS = [
    [0, 1, 0, 1, 0, 1],
    [0, 0, 0, 1, 2, 2, 1, 0],  # uneven classes
    [0, 0, 1, 2, -1, 1, 0, -1, 3],  # a class seen once (2 and 3), unknown labels
]


@pytest.mark.parametrize("temperature", [1.0, 0.1])
@pytest.mark.parametrize("labels", LABELINGS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_la_matches_naive_loss_and_gradient(temperature: float, labels: list[int], seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(len(labels), 8, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.tensor(labels)
    loss = LabelAlignment(temperature)({"features": x, "labels": y})
    expected = naive_label_alignment(x, y, temperature)
    (grad,) = torch.autograd.grad(loss, x)
    (expected_grad,) = torch.autograd.grad(expected, x)
    assert torch.allclose(loss, expected)
    assert torch.allclose(grad, expected_grad)


def test_la_interface() -> None:
    la = LabelAlignment()
    assert la.temperature == 1.0 and la.requires == ("features", "labels")


def test_la_hand_computed_sum_over_anchors() -> None:
    """Rows p, p, q (labels 0, 0, 1), τ = 1. Anchor 0: positive 1, denominator over rows 1, 2;
    anchor 1 likewise; anchor 2 has no positive. Eq. 2 sums the two (N_y − 1 = 1)."""
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    y = torch.tensor([0, 0, 1])
    term = -math.log(math.e / (math.e + 1))
    assert LabelAlignment(1.0).compute_loss_from_embeddings(x, y).item() == pytest.approx(2 * term)


@pytest.mark.parametrize("labels", [[0], [1, 1, 1], [0, -1, -1], [0, 1, 2]])
def test_la_nothing_to_contrast_gives_a_connected_zero(labels: list[int]) -> None:
    """A batch of one, one class, one labelled row, every class seen once."""
    x = torch.randn(len(labels), 4, requires_grad=True)
    loss = LabelAlignment().compute_loss_from_embeddings(x, torch.tensor(labels))
    assert loss.item() == 0 and loss.grad_fn is not None
    loss.backward()
    assert torch.equal(x.grad, torch.zeros_like(x))


def test_la_identical_embeddings() -> None:
    x = torch.ones(4, 3, requires_grad=True)
    loss = LabelAlignment(0.05).compute_loss_from_embeddings(x, torch.tensor([0, 0, 1, 1]))
    loss.backward()
    assert loss.item() == pytest.approx(4 * math.log(3)) and torch.isfinite(x.grad).all()


def test_la_bf16_is_finite() -> None:
    x = torch.randn(10, 8, dtype=torch.bfloat16, requires_grad=True)
    y = torch.tensor([0, 1, 2] * 3 + [0])
    loss = LabelAlignment(0.05).compute_loss_from_embeddings(x, y)
    reference = LabelAlignment(0.05).compute_loss_from_embeddings(x.detach().double(), y)
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss) and torch.isfinite(x.grad.float()).all()
    assert loss.item() == pytest.approx(reference.item(), rel=1e-4)


def test_la_clustered_by_label_beats_shuffled_labels() -> None:
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(3, 16, generator=g)
    y = torch.arange(3).repeat_interleave(4)  # (12,)
    x = centers[y] + 0.1 * torch.randn(12, 16, generator=g)
    la = LabelAlignment(0.1)
    assert la.compute_loss_from_embeddings(x, y) < la.compute_loss_from_embeddings(x, y.roll(1))


def test_la_rejects_bad_labels() -> None:
    with pytest.raises(ValueError, match=r"labels must have shape \(3,\)"):
        LabelAlignment().compute_loss_from_embeddings(torch.randn(3, 2), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="integer class ids"):
        LabelAlignment().compute_loss_from_embeddings(torch.randn(2, 2), torch.tensor([0.0, 1.0]))
