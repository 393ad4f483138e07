"""Classifier = encoder + dropout + linear head; ``predict`` gives label, confidence, probabilities."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn

from .encoder import Item, TextEncoder


@dataclass(frozen=True)
class Predictions:
    """Predictions for N texts: label names (N,), confidence = max probability (N,), probabilities (N, C)."""

    labels: list[str]
    confidence: np.ndarray
    probabilities: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


class Classifier(nn.Module):
    """Sequence classifier over any ``TextEncoder``; a frozen encoder trains only the head.

    ``paired``: the inputs are ``(text, text_pair)`` items; the head reads the encoder's pair
    features (4D wide for a combining sentence encoder, see ``xlt.models.encoder``).
    """

    def __init__(self, encoder: TextEncoder, labels: Sequence[str], dropout: float = 0.1,
                 paired: bool = False) -> None:
        super().__init__()
        if len(labels) < 2 or len(set(labels)) != len(labels):
            raise ValueError(f"labels must be at least two distinct names, got {list(labels)}")
        self.encoder, self.labels, self.paired = encoder, list(labels), paired
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(encoder.feature_dim(paired), len(labels))

    def forward(self, texts: list[Item]) -> torch.Tensor:
        """Logits (B, C)."""
        if self.encoder.trainable:
            features = self.encoder.embed(texts)
        else:
            with torch.no_grad():
                features = self.encoder.embed(texts)
        return self.head(self.dropout(features.to(self.head.weight.device)))

    @torch.no_grad()
    def predict(self, texts: Sequence[Item], batch_size: int = 64, sort_by_length: bool = True,
                tokens_per_batch: int = 0) -> Predictions:
        """Inference in batches (length-bucketed unless ``sort_by_length`` is false, and within a
        token budget if ``tokens_per_batch`` > 0: the encoder's ``encode``), then the head."""
        was_training = self.training
        self.eval()
        try:
            features = torch.from_numpy(self.encoder.encode(texts, batch_size=batch_size, sort_by_length=sort_by_length,
                                                            tokens_per_batch=tokens_per_batch))
            probs = torch.softmax(self.head(features.to(self.head.weight.device)).float(), dim=-1).cpu().numpy()
        finally:
            self.train(was_training)
        best = probs.argmax(1)
        return Predictions([self.labels[i] for i in best], probs.max(1), probs)
