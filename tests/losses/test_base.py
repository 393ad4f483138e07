"""The shared interface: objectives read named outputs; the weighted sum never branches on type."""

from __future__ import annotations

import pytest
import torch

from xlt.losses import Objective, WeightedObjectives


class MeanSquare(Objective):
    name = "mean_square"
    requires = ("features",)

    def forward(self, outputs):
        (features,) = self.inputs(outputs)
        return features.pow(2).mean()


class Offset(Objective):
    name = "offset"
    requires = ("features", "labels")

    def forward(self, outputs):
        features, labels = self.inputs(outputs)
        return (features.sum(1) - labels.float()).abs().mean()


def test_weighted_sum_and_parts():
    features = torch.randn(4, 3, requires_grad=True)
    outputs = {"features": features, "labels": torch.tensor([0, 1, 0, 2])}
    mix = WeightedObjectives({"ms": (10.0, MeanSquare()), "off": (0.5, Offset())})
    total, parts = mix(outputs)
    assert torch.allclose(total, 10 * parts["ms"] + 0.5 * parts["off"])
    assert mix.requires == {"features", "labels"}
    total.backward()
    assert features.grad is not None and torch.isfinite(features.grad).all()


def test_missing_output_is_named():
    with pytest.raises(KeyError, match="offset needs outputs labels; the step provided features"):
        WeightedObjectives({"off": (1.0, Offset())})({"features": torch.zeros(2, 2)})


def test_rejects_bad_weights_and_types():
    with pytest.raises(ValueError, match="weights λ must be >= 0"):
        WeightedObjectives({"ms": (-1.0, MeanSquare())})
    with pytest.raises(TypeError, match="not an xlt Objective"):
        WeightedObjectives({"ce": (1.0, torch.nn.CrossEntropyLoss())})
    with pytest.raises(ValueError, match="no objectives"):
        WeightedObjectives({})({"features": torch.zeros(1, 1)})


def test_a_term_with_a_start_epoch_is_left_out_before_it():
    """``start_epochs``: before it the term is not computed and logs 0; from it on it is summed."""
    outputs = {"features": torch.randn(4, 3), "labels": torch.tensor([0, 1, 0, 2])}
    calls = []
    late = Offset()
    late.register_forward_hook(lambda *_: calls.append(1))
    mix = WeightedObjectives({"ms": (10.0, MeanSquare()), "off": (0.5, late)}, start_epochs={"off": 2})
    for epoch in (0, 1):
        total, parts = mix(outputs, epoch)
        assert float(parts["off"]) == 0.0 and torch.allclose(total, 10 * parts["ms"])
    assert not calls
    total, parts = mix(outputs, 2)
    assert calls and float(parts["off"]) > 0 and torch.allclose(total, 10 * parts["ms"] + 0.5 * parts["off"])
    only_late = WeightedObjectives({"off": (1.0, Offset())}, start_epochs={"off": 1})
    total, parts = only_late(outputs, 0)
    assert float(total) == 0.0 and set(parts) == {"off"}
