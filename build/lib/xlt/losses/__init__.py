"""Alignment and contrastive objectives of the papers in docs/references.md, one per module, behind one interface.

``build_objectives([ObjectiveConfig("supervised_contrastive_alignment", 1.0, {"temperature": 1.0})])``
gives the weighted sum a training loop calls with its named outputs (see ``base``).
"""

from .base import Objective, Outputs, WeightedObjectives
from .registry import OBJECTIVES, ObjectiveConfig, build_objective, build_objectives

__all__ = ["Objective", "Outputs", "WeightedObjectives", "OBJECTIVES", "ObjectiveConfig", "build_objective",
           "build_objectives"]
