"""A projection head for the contrastive objectives: the loss contrasts g(Φ), the classifier reads Φ.

Khosla et al. 2020 (supervised contrastive learning, which SCL adapts) contrast the output of a
projection network g, an MLP on the encoder's representation Φ, and classify Φ itself; the
projection is discarded after training. Wang et al. 2022, §3.3 contrast the [s] state "before the
softmax projection" of XLM-R's classification head, which has a dense + tanh layer between the
encoder and that projection. Without any layer in between, a contrastive loss and CE pull on the
one vector the linear head reads (``benchmarks/fidelity/scl-pawsx-diagnosis.md``).

``params: {projection: {dims: [384, 128]}}`` on CL, SCL, LA or SA gives that objective its own g:
Linear(D, 384) → ReLU → Linear(384, 128) (ReLU between layers, none after the last, as Khosla et
al.'s MLP). The training step computes g(Φ) inside its own forward pass (so DDP synchronises g's
gradients) under the outputs key ``projected/<objective name>``, which the objective then reads
instead of ``features``. g trains with the model and is saved with the optimizer's state for
resuming (``train_state.pt``), never with the classifier (``model.pt``, exports).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from torch import nn

PROJECTED = "projected/"  # the Outputs key prefix of an objective's projected features


def projected_key(objective: str) -> str:
    """The ``Outputs`` key of the features projected by ``objective``'s own head."""
    return PROJECTED + objective


@dataclass(frozen=True)
class Projection:
    """The widths of g's layers, the last one the contrasted vector's."""

    dims: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in self.dims):
            raise ValueError(f"projection.dims={list(self.dims)!r} is invalid: expected a list of layer widths, "
                             "integers >= 1, e.g. [384, 128]")

    @classmethod
    def of(cls, value: Mapping[str, Any] | None) -> "Projection | None":
        """An objective's ``projection`` parameter (``{dims: [...]}`` or ``None``) as a ``Projection``."""
        if value is None:
            return None
        if not isinstance(value, Mapping) or set(value) != {"dims"} or not isinstance(value["dims"], Sequence):
            raise ValueError(f"projection={value!r} is invalid: expected {{dims: [width, ...]}}, e.g. "
                             "{dims: [384, 128]}")
        return cls(tuple(value["dims"]))


class ProjectionHead(nn.Sequential):
    """g: ``Linear(in_dim, dims[0])``, then ReLU and the next Linear for each further width."""

    def __init__(self, in_dim: int, projection: Projection) -> None:
        widths = (in_dim, *projection.dims)
        layers: list[nn.Module] = []
        for k, (a, b) in enumerate(zip(widths, widths[1:])):
            if k:
                layers.append(nn.ReLU())
            layers.append(nn.Linear(a, b))
        super().__init__(*layers)
