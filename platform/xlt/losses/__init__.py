"""Alignment and contrastive objectives of the seed papers, one per module, behind one interface."""

from .base import Objective, Outputs, WeightedObjectives

__all__ = ["Objective", "Outputs", "WeightedObjectives"]
