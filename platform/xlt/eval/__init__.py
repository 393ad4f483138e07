"""Evaluation: per-language classification metrics and cross-lingual retrieval.

- ``classification``: accuracy per language, target average and transfer gap (Zhang et al. 2023,
  §4.6.1), and metric names ``<split>/<metric>[/<lang>]``.
- ``retrieval``: exact faiss kNN, Tatoeba top-1 accuracy, ratio-margin scoring and BUCC-style
  mining (Artetxe & Schwenk 2019; XTREME). faiss is imported only when a retrieval runs.
"""

from __future__ import annotations

from xlt.eval.classification import (
    ACC,
    AVG_TARGET,
    SPLITS,
    TRANSFER_GAP,
    VAL_AVG_TARGET_ACC,
    VAL_TRANSFER_GAP,
    TransferSummary,
    accuracy_by_language,
    metric_name,
    summarize_transfer,
    to_metrics,
)
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
    "ACC",
    "AVG_TARGET",
    "METRICS",
    "MINING_MODES",
    "SPLITS",
    "TRANSFER_GAP",
    "VAL_AVG_TARGET_ACC",
    "VAL_TRANSFER_GAP",
    "MarginCandidates",
    "MiningResult",
    "RetrievalResult",
    "TransferSummary",
    "accuracy_by_language",
    "knn",
    "margin_scores",
    "metric_name",
    "mine_bitext",
    "score_pairs",
    "summarize_transfer",
    "tatoeba_accuracy",
    "tatoeba_hits",
    "to_metrics",
]
