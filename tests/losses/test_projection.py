"""The contrastive objectives on a projection head (``xlt.losses.projection``): the loss of g(Φ),
against a naive MLP written out layer by layer and the naive objectives of ``naive_sentence``."""

from __future__ import annotations

import pytest
import torch

from xlt.losses import ObjectiveConfig, build_objective, build_objectives
from xlt.losses.projection import Projection, ProjectionHead, projected_key

from .naive_sentence import (naive_contrastive_alignment, naive_label_alignment, naive_semantic_alignment,
                             naive_supervised_contrastive_alignment, random_view_batch)

PROJECTION = {"dims": [6, 4]}


def naive_projection(head: ProjectionHead, x: torch.Tensor) -> torch.Tensor:
    """g(x) = W2 · max(0, W1 · x + b1) + b2, row by row, with the head's weights."""
    (w1, b1), (w2, b2) = [(layer.weight, layer.bias) for layer in head if isinstance(layer, torch.nn.Linear)]
    rows = []
    for row in x:
        hidden = torch.stack([torch.clamp(torch.dot(w1[k], row) + b1[k], min=0) for k in range(w1.shape[0])])
        rows.append(torch.stack([torch.dot(w2[k], hidden) + b2[k] for k in range(w2.shape[0])]))
    return torch.stack(rows)


NAIVE = {
    "contrastive_alignment": lambda b, z: naive_contrastive_alignment(z, b["group"], b["is_anchor"], 0.5),
    "supervised_contrastive_alignment":
        lambda b, z: naive_supervised_contrastive_alignment(z, b["labels"], b["group"], b["is_anchor"], 0.5),
    "label_alignment": lambda b, z: naive_label_alignment(z, b["labels"], 0.5),
    "semantic_alignment": lambda b, z: naive_semantic_alignment(z, b["labels"], b["group"], b["is_anchor"], 0.5),
}


@pytest.mark.parametrize("name", sorted(NAIVE))
@pytest.mark.parametrize("seed", [0, 1])
def test_an_objective_on_its_projection_is_the_naive_loss_of_the_naive_mlp(name, seed):
    batch = random_view_batch([3, 2, 2, 1], n_labels=2, seed=seed)
    torch.manual_seed(seed)
    head = ProjectionHead(8, Projection((6, 4))).double()
    objective = build_objective(name, temperature=0.5, projection=PROJECTION)
    assert projected_key(name) in objective.requires and "features" not in objective.requires
    x = batch["features"]
    loss = objective({**batch, projected_key(name): head(x)})
    expected = NAIVE[name](batch, naive_projection(head, x))
    assert torch.allclose(loss, expected)
    # gradients reach the features through g, and g's own weights
    params = [x, *head.parameters()]
    for grad, expected_grad in zip(torch.autograd.grad(loss, params), torch.autograd.grad(expected, params)):
        assert torch.allclose(grad, expected_grad)


def test_the_head_is_linear_relu_linear_and_one_width_is_one_linear_layer():
    head = ProjectionHead(8, Projection((6, 4)))
    assert [type(m).__name__ for m in head] == ["Linear", "ReLU", "Linear"]
    assert (head[0].in_features, head[0].out_features, head[2].out_features) == (8, 6, 4)
    assert [type(m).__name__ for m in ProjectionHead(8, Projection((5,)))] == ["Linear"]


@pytest.mark.parametrize("value, message", [
    ({"dims": []}, r"projection.dims=\[\] is invalid"),
    ({"dims": [384, 0]}, r"projection.dims=\[384, 0\] is invalid"),
    ({"width": 128}, r"expected \{dims: \[width, ...\]\}"),
    ([384, 128], r"expected \{dims: \[width, ...\]\}"),
])
def test_a_bad_projection_is_refused_naming_what_is_expected(value, message):
    with pytest.raises(ValueError, match=message):
        build_objective("supervised_contrastive_alignment", projection=value)


def test_the_weighted_sum_lists_the_heads_its_objectives_need():
    objectives = build_objectives([ObjectiveConfig("supervised_contrastive_alignment", 1.0, {"projection": PROJECTION}),
                                   ObjectiveConfig("multiview_alignment", 1.0)])
    assert objectives.projections == {"supervised_contrastive_alignment": Projection((6, 4))}
    # SCL reads its projection; MVA (cosine) still reads the features themselves
    assert {projected_key("supervised_contrastive_alignment"), "features"} <= objectives.requires
