"""Objectives by name: a config lists ``{name, weight, params}`` and gets one ``WeightedObjectives``.

The names are each class's ``name``; an unknown name or a parameter the objective does not take
fails with the valid choices, so a sweep typo never trains something else silently.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..config import check
from .base import Objective, WeightedObjectives
from .contrastive import ContrastiveAlignment
from .info_nce import CrossZeroNCE, ParallelInfoNCE
from .mlm import MaskedLanguageModeling
from .multiview import MultiViewAlignment
from .noisy_sentence import NoisySentenceContrast
from .semantic_alignment import SemanticAlignment
from .supcon import LabelAlignment, SupervisedContrastiveAlignment
from .token_alignment import SpanContrast, TokenAlignment, WordHardContrast, WordSoftContrast

OBJECTIVES: dict[str, type[Objective]] = {cls.name: cls for cls in (
    MultiViewAlignment, ContrastiveAlignment, SupervisedContrastiveAlignment, LabelAlignment, SemanticAlignment,
    ParallelInfoNCE, CrossZeroNCE, TokenAlignment, WordHardContrast, WordSoftContrast, SpanContrast,
    NoisySentenceContrast, MaskedLanguageModeling,
)}


@dataclass(frozen=True)
class ObjectiveConfig:
    """One term λ · L of the training loss: ``name`` from ``OBJECTIVES``, ``params`` for its constructor,
    added from epoch ``start_epoch`` on (counted from 0: the epochs before it train without the term)."""

    name: str
    weight: float = 1.0
    params: dict[str, Any] = field(default_factory=dict)
    start_epoch: int = 0

    def __post_init__(self) -> None:
        check(self.name in OBJECTIVES, "name", self.name, "one of " + ", ".join(OBJECTIVES))
        check(self.weight >= 0, f"{self.name}.weight", self.weight, "a number >= 0 (λ)")
        check(self.start_epoch >= 0, f"{self.name}.start_epoch", self.start_epoch,
              "an integer >= 0 (the epoch, from 0, whose steps first add the term)")
        accepted = list(inspect.signature(OBJECTIVES[self.name]).parameters)
        unknown = sorted(set(self.params) - set(accepted))
        check(not unknown, f"{self.name}.params", self.params,
              f"parameters among ({', '.join(accepted) or 'none'}); unknown: {', '.join(unknown)}")


def build_objective(name: str, **params: Any) -> Objective:
    """One objective by name."""
    return OBJECTIVES[ObjectiveConfig(name, params=params).name](**params)


def build_objectives(configs: Sequence[ObjectiveConfig]) -> WeightedObjectives:
    """``Σ λ_k · L_k`` for the configured terms; each name at most once."""
    names = [c.name for c in configs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"objectives {repeated} are listed more than once; give each one weight")
    return WeightedObjectives({c.name: (c.weight, OBJECTIVES[c.name](**c.params)) for c in configs},
                              {c.name: c.start_epoch for c in configs})
