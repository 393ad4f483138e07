"""Evaluation: per-language classification metrics and cross-lingual retrieval.

- ``classification``: accuracy and macro-F1 per language, target average and transfer gap (Zhang
  et al. 2023, §4.6.1), named by ``xlt.metrics``.
- ``retrieval``: exact faiss kNN, Tatoeba top-1 accuracy, ratio-margin scoring and BUCC-style
  mining (Artetxe & Schwenk 2019; XTREME). faiss is imported only when a retrieval runs.
"""

from __future__ import annotations

from xlt.eval.classification import TransferSummary, accuracy_by_language, summarize_transfer, to_metrics
from xlt.eval.retrieval import (
    METRICS,
    MINING_MODES,
    MarginCandidates,
    MiningResult,
    RetrievalResult,
    knn,
    margin_scores,
    mine_bitext,
    score_pairs,
    tatoeba_accuracy,
    tatoeba_hits,
)

__all__ = [
    "METRICS",
    "MINING_MODES",
    "MarginCandidates",
    "MiningResult",
    "RetrievalResult",
    "TransferSummary",
    "accuracy_by_language",
    "knn",
    "margin_scores",
    "mine_bitext",
    "score_pairs",
    "summarize_transfer",
    "tatoeba_accuracy",
    "tatoeba_hits",
    "to_metrics",
]
