"""One interface for every objective, so a training loop combines them without knowing which is which.

A training step computes a dict of named tensors (``Outputs``): whatever the model produced for
the batch. Each ``Objective`` declares the keys it ``requires``, reads them in ``forward``, and
hands plain tensors to its tensor-only core ``compute_loss_from_embeddings``, where the
equation lives. ``WeightedObjectives`` sums ``λ_k · objective_k(outputs)`` and returns the parts
for logging. A loop never branches on the loss type: it fills the keys that the configured
objectives require (``WeightedObjectives.requires``) and calls the sum.

The shared vocabulary of ``Outputs`` keys (shapes; B = batch rows, D = embedding size):

- ``features`` (N, D): sentence embeddings of every row of a view batch (originals and views)
- ``labels`` (N,) long: class of each row; ``-1`` where unknown
- ``group`` (N,) long: index of the original example a row is (a view of); originals point to themselves
- ``is_anchor`` (N,) bool: the rows that are originals (anchors of CL / SCL)
- ``logits`` (N, C): classifier logits of each row (MVA with KL similarities)
- ``src_features``, ``tgt_features`` (B, D): embeddings of the two sides of parallel pairs
- ``src_noisy_features``, ``tgt_noisy_features`` (B, D): embeddings of their noisy versions
  (back-translations, Li et al. 2021, §2.4)
- ``src_tokens`` (B, Ls, D), ``tgt_tokens`` (B, Lt, D), ``src_mask`` (B, Ls), ``tgt_mask`` (B, Lt):
  token states and attention masks of the two sides
- ``alignment`` (P, 3) long: aligned token pairs ``(pair index, src position, tgt position)``
- ``src_spans``, ``tgt_spans`` (S, 3) long: aligned spans ``(pair index, start, end)``, end exclusive
- ``mlm_logits`` (B, L, V), ``mlm_labels`` (B, L) long with ``-100`` where not predicted
- ``projected/<objective>`` (N, P): ``features`` through that objective's own projection head, for an
  objective given ``projection`` (``projection``: CL, SCL, LA, SA)
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

import torch
from torch import nn

from .projection import Projection, projected_key

Outputs = Mapping[str, torch.Tensor]


class Objective(nn.Module):
    """Base of every loss in ``xlt.losses``: ``forward(outputs) -> scalar``.

    Subclasses set ``name`` and ``requires`` and implement ``compute_loss_from_embeddings``, which
    takes the required tensors in ``requires`` order; ``forward`` unpacks ``outputs`` into it.
    """

    name: ClassVar[str]
    requires: ClassVar[tuple[str, ...]]
    projection: Projection | None = None  # its own projection head, which the training step runs

    def project(self, projection: Mapping[str, Any] | None) -> None:
        """Read ``features`` through a projection head of its own (``projection.py``) when
        ``projection`` (``{dims: [...]}``) is given: the training step builds the head and fills
        ``projected/<name>``, which replaces ``features`` among the inputs."""
        self.projection = Projection.of(projection)
        if self.projection is not None:
            self.requires = tuple(projected_key(self.name) if key == "features" else key for key in self.requires)

    def inputs(self, outputs: Outputs) -> list[torch.Tensor]:
        """The required tensors in ``requires`` order; a missing key is named with what was given."""
        missing = [k for k in self.requires if k not in outputs]
        if missing:
            raise KeyError(f"{self.name} needs outputs {', '.join(missing)}; the step provided "
                           f"{', '.join(sorted(outputs)) or 'nothing'}")
        return [outputs[k] for k in self.requires]

    def forward(self, outputs: Outputs) -> torch.Tensor:
        return self.compute_loss_from_embeddings(*self.inputs(outputs))

    def extra_repr(self) -> str:
        temperature = getattr(self, "temperature", None)
        parts = [] if temperature is None else [f"temperature={temperature}"]
        return ", ".join(parts + ([f"projection={list(self.projection.dims)}"] if self.projection else []))


class WeightedObjectives(nn.Module):
    """``Σ_k λ_k · L_k(outputs)``; returns the total and each weighted-before part for logging.

    ``start_epochs[k]`` > 0 leaves term k out (not computed; its part logged as 0) while fewer epochs
    than that have been completed: CE alone first, the term added once CE has left its plateau (an
    auxiliary term from the first step can hold CE on its plateau: ``benchmarks/fidelity/scl-pawsx-diagnosis.md``)."""

    def __init__(self, objectives: Mapping[str, tuple[float, Objective]],
                 start_epochs: Mapping[str, int] | None = None) -> None:
        super().__init__()
        for key, (weight, obj) in objectives.items():
            if not isinstance(obj, Objective):
                raise TypeError(f"objective {key!r} is a {type(obj).__name__}, not an xlt Objective")
            if not weight >= 0:
                raise ValueError(f"weight of {key!r} is {weight}; weights λ must be >= 0")
        self.objectives = nn.ModuleDict({k: obj for k, (_, obj) in objectives.items()})
        self.weights = {k: float(w) for k, (w, _) in objectives.items()}
        self.start_epochs = {k: int((start_epochs or {}).get(k, 0)) for k in objectives}

    @property
    def requires(self) -> set[str]:
        """Every output key some objective reads: what the training step has to compute."""
        return {key for obj in self.objectives.values() for key in obj.requires}

    @property
    def projections(self) -> dict[str, Projection]:
        """The projection head each objective that has one reads through, by objective name."""
        return {obj.name: obj.projection for obj in self.objectives.values() if obj.projection is not None}

    def forward(self, outputs: Outputs, epoch: int = 0) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The weighted sum and its parts in an epoch after ``epoch`` completed ones."""
        if not self.objectives:
            raise ValueError("WeightedObjectives has no objectives to sum")
        parts = {k: obj(outputs) for k, obj in self.objectives.items() if epoch >= self.start_epochs[k]}
        zero = torch.zeros((), device=next(iter(outputs.values())).device)
        total = sum(self.weights[k] * v for k, v in parts.items()) if parts else zero
        return total, {k: parts.get(k, zero) for k in self.objectives}
