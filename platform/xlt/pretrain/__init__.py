"""Alignment pretraining on parallel text (Chen et al. 2022, Li et al. 2021,
Zhang et al. 2023).

- ``wps``: word-positioned samples from a dictionary (Chen et al. 2022, §2.1, Algorithm 1)
- ``alignment``: token positions inside a pair (words: ``xlt.text.words``; dictionary lookups:
  ``xlt.data.dictionary.Lexicon``); dictionary-aligned token pairs
  (Zhang et al. 2023, §3.2) and span pairs (Li et al. 2021, §2.3) in the ``alignment`` / ``src_spans`` /
  ``tgt_spans`` formats of ``xlt.losses.base``
- ``config``: ``PretrainConfig`` and the recipes ``ml-ctl``, ``mgc``, ``veco2`` (or ``custom``)
- ``parallel``: the sources' pairs (``xlt.tasks.read_bitext``), held-apart evaluation, the q_i ∝ p_i^α mixture
  (Zhang et al. 2023, Eq. 9)
- ``batches``: per-pair annotation (Ray Data UDF) and per-micro-batch tensors for every recipe
- ``model``: encoder + CCE / LM heads + objectives -> the ``Outputs`` the objectives require
- ``workload``: the ``PRETRAIN`` workload for ``xlt.engine`` (batcher, step, retrieval of the held-apart pairs
  after every epoch)
- ``trainer``: ``prepare`` / ``build_trainer`` / ``resume_config``; ``encoder_dir`` of a checkpoint
"""

from __future__ import annotations

from .alignment import AlignedWords, DictionaryAligner, TokenizedText, Tokenization, consistent_phrase_pairs
from .config import RECIPES, PretrainConfig, load_pretrain_config
from .wps import ParallelWPS, WordPositionedSample, parallel_wps, word_positioned_samples, word_spans

__all__ = [
    "RECIPES",
    "AlignedWords",
    "DictionaryAligner",
    "ParallelWPS",
    "PretrainConfig",
    "TokenizedText",
    "Tokenization",
    "WordPositionedSample",
    "consistent_phrase_pairs",
    "load_pretrain_config",
    "parallel_wps",
    "word_positioned_samples",
    "word_spans",
]
