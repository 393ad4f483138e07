"""Parallel-data batches for alignment pretraining (design.md, "Alignment pretraining").

- ``wps``: word-positioned samples from a dictionary (seed 001 §2.1, Algorithm 1)
- ``alignment``: words and token positions inside a pair; dictionary-aligned token pairs
  (seed 004 §3.2) and span pairs (seed 003 §2.3) in the ``alignment`` / ``src_spans`` /
  ``tgt_spans`` formats of ``xlt.losses.base``
"""

from __future__ import annotations

from .alignment import (
    AlignedWords,
    DictionaryAligner,
    Lexicon,
    Segmenter,
    TokenizedText,
    Tokenization,
    Word,
    consistent_phrase_pairs,
    segment_words,
)
from .wps import ParallelWPS, WordPositionedSample, parallel_wps, word_positioned_samples, word_spans

__all__ = [
    "AlignedWords",
    "DictionaryAligner",
    "Lexicon",
    "ParallelWPS",
    "Segmenter",
    "TokenizedText",
    "Tokenization",
    "Word",
    "WordPositionedSample",
    "consistent_phrase_pairs",
    "parallel_wps",
    "segment_words",
    "word_positioned_samples",
    "word_spans",
]
