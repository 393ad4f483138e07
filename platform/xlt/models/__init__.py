"""Model sources, encoders with pooling, and the classifier."""

from .classifier import Classifier, CombinedClassifier, Predictions, load_pretrained
from .encoder import POOLINGS, TextEncoder, TransformerEncoder, UseEncoder, pool
from .loader import EncoderConfig, load_encoder
from .sources import ModelSpec, cache_dir, parse_source
from .state import frozen_names, load_trained, trained_state

__all__ = ["Classifier", "CombinedClassifier", "Predictions", "load_pretrained", "POOLINGS", "TextEncoder",
           "TransformerEncoder", "UseEncoder", "pool",
           "EncoderConfig", "load_encoder", "ModelSpec", "cache_dir", "parse_source",
           "frozen_names", "load_trained", "trained_state"]
