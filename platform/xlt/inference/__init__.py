"""Inference at scale: ship a trained classifier to Ray actors and pseudo-label a pool (Yu & Joty 2021, Alg. 1)."""

from .pseudo_label import OUTPUT_COLUMNS, PseudoLabelUDF, prediction_column, pseudo_label, pseudo_label_here
from .spec import ClassifierSpec, build_classifier, share_classifier

__all__ = ["OUTPUT_COLUMNS", "ClassifierSpec", "PseudoLabelUDF", "build_classifier", "prediction_column", "pseudo_label",
           "pseudo_label_here", "share_classifier"]
