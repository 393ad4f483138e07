"""Inference at scale: ship a trained classifier to Ray actors and pseudo-label a pool (Yu & Joty 2021, Alg. 1)."""

from .pseudo_label import OUTPUT_COLUMNS, PseudoLabelUDF, prediction_column
from .settings import EXACT, InferenceSettings
from .spec import ClassifierSpec, build_classifier, share_classifier

__all__ = ["OUTPUT_COLUMNS", "EXACT", "ClassifierSpec", "InferenceSettings", "PseudoLabelUDF", "build_classifier",
           "prediction_column", "share_classifier"]
