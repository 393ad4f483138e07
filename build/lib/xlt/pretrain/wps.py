"""Parallel word-positioned samples (WPS): Chen et al. 2022, §2.1 and Algorithm 1.

A WPS is a sentence plus the position of one of its words; a parallel WPS pair holds a
sentence, its translation and a word of each that translate each other. The ML-CTL encoder
turns each side into a concatenated contextual embedding (``xlt.losses.cce``) and the pair is
a positive of the contrastive loss (Chen et al. 2022, §2.3).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from xlt.data.dictionary import Lexicon
from xlt.data.records import ParallelPair
from xlt.text.words import Word

from .alignment import TokenizedText, Tokenization


@dataclass(frozen=True)
class WordPositionedSample:
    """A sentence with one word's position: ``text[start:end]`` is the word.

    ``token_span`` is ``[start, end)`` of the word's sub-tokens in the sequence the encoder
    sees (the ``Tokenization`` it was built with: ``<s>`` = 0, prefix included), or ``None`` when
    the samples were built without a tokenizer.
    """

    text: str
    start: int
    end: int
    token_span: tuple[int, int] | None = None

    @property
    def word(self) -> str:
        return self.text[self.start:self.end]


@dataclass(frozen=True)
class ParallelWPS:
    """A positive pair of WPSs: ``src.word`` and ``tgt.word`` translate each other (Alg. 1, step 11)."""

    pair_id: str
    src: WordPositionedSample
    tgt: WordPositionedSample


def _token_condition(enc: TokenizedText | None, word: Word) -> tuple[bool, tuple[int, int] | None]:
    """Alg. 1's TK(A).count(TK(a)) == 1, and the word's token span."""
    if enc is None:
        return True, None
    tokens = enc.word_tokens(word)
    if tokens is None or enc.count(tokens) != 1:
        return False, None
    return True, (tokens[0], tokens[-1] + 1)


def parallel_wps(pair: ParallelPair, lexicon: Lexicon, tokenization: Tokenization | None = None) -> list[ParallelWPS]:
    """Every parallel WPS pair Algorithm 1 of Chen et al. (2022) admits for one parallel pair, in source order.

    Algorithm 1, for each dictionary word a_i (in the dictionary without stop words)::

        3: if A.count(a_i) == TK(A).count(TK(a_i)) == 1:      S   = (A, start, end of a_i)
        7:   b_i = V[a_i]
        8:   if B.count(b_i) == 1:
        9:     if TK(B).count(TK(b_i)) == 1:                  S^t = (B, start, end of b_i)
       11:       return S, S^t

    Readings:

    - ``A.count(a)``: occurrences of a among the words of A (``Lexicon.segment``: lowercase,
      punctuation stripped; dictionary substring matches in unspaced scripts), as Alg. 1 takes
      A = {a_1, ..., a_N} as a word string. Iterating "a_i in V_A" over the whole dictionary is
      the same as iterating over A's words that have a translation.
    - ``b_i = V[a_i]`` with a many-to-many dictionary (MUSE): B.count(b_i) counts the words of B
      that are *any* translation of a_i, and must be 1. Alg. 1 assumes one translation per word;
      counting them all keeps its purpose, "accurate word alignment" (§2.1): when "house" ->
      haus/gebäude and B holds both, there is no single partner and no sample.
    - ``TK(A).count(TK(a))``: with the ``tokenization``, TK(a) is the word's sub-token sequence
      *as tokenized inside A* (its own tokens, ``TokenizedText.word_tokens``), which must occur
      exactly once in TK(A) as a contiguous run of ids. Alg. 1 was written for BERT's WordPiece,
      where a separated word tokenizes the same alone and in context; a SentencePiece
      tokenizer prefixes "▁" to a word alone but not after "(" or inside Chinese text, so the
      literal TK('a') would miss words that are there. A word sharing a token with a neighbour
      (no tokens of its own) fails the condition, as does one cut off by ``max_length``; the
      count is over the truncated sequence, i.e. what the encoder sees.
    - Without a ``tokenization`` only the word-count conditions apply and ``token_span`` is None.
    - "return" yields one pair where Alg. 1 stops; all admissible pairs are returned here and
      ``word_positioned_samples`` draws from them (Chen et al. 2022, §4.1 "randomly construct" WPSs).
    """
    lexicon.check_pair(pair)
    src_words, tgt_words = lexicon.segment(pair.src, "src"), lexicon.segment(pair.tgt, "tgt")
    src_count = Counter(w.text for w in src_words)
    src_enc = tokenization.encode(pair.src) if tokenization else None
    tgt_enc = tokenization.encode(pair.tgt) if tokenization else None
    out = []
    for a in src_words:
        translations = lexicon.translations(a.text)
        if src_count[a.text] != 1 or not translations:
            continue
        ok, a_span = _token_condition(src_enc, a)
        if not ok:
            continue
        found = [b for b in tgt_words if b.text in translations]  # B.count over all of V[a_i]
        if len(found) != 1:
            continue
        ok, b_span = _token_condition(tgt_enc, found[0])
        if ok:
            out.append(ParallelWPS(pair.id, WordPositionedSample(pair.src, a.start, a.end, a_span),
                                   WordPositionedSample(pair.tgt, found[0].start, found[0].end, b_span)))
    return out


def word_positioned_samples(pairs: Sequence[ParallelPair], lexicon: Lexicon, tokenization: Tokenization | None = None,
                            *, per_pair: int | None = 1, seed: int = 0) -> list[ParallelWPS]:
    """Parallel WPSs of a list of pairs: up to ``per_pair`` drawn at random per pair (``None``: all).

    Chen et al. (2022, §4.1) "randomly construct" their WPSs; Alg. 1 returns one per sentence pair, hence
    ``per_pair=1``. The draw for a pair depends only on ``seed`` and the pair's ``id`` (its own
    ``random.Random``), so it is the same whatever the batch, shard or order the pair arrives in.
    Pairs with no admissible word pair yield nothing. Output: in input order, then source order.
    """
    if per_pair is not None and per_pair < 1:
        raise ValueError(f"per_pair={per_pair} must be >= 1, or None for every admissible word pair")
    out: list[ParallelWPS] = []
    for pair in pairs:
        candidates = parallel_wps(pair, lexicon, tokenization)
        if per_pair is not None and len(candidates) > per_pair:
            rng = random.Random(f"{seed}:{pair.id}")
            keep = sorted(rng.sample(range(len(candidates)), per_pair))
            candidates = [candidates[k] for k in keep]
        out.extend(candidates)
    return out


def word_spans(samples: Sequence[WordPositionedSample]) -> torch.Tensor:
    """(B, 2) long ``[start, end)`` token spans of the samples' words: the ``word_spans`` of
    ``ConcatenatedContextualEmbedding`` for a batch tokenized with the same ``Tokenization``."""
    missing = [k for k, s in enumerate(samples) if s.token_span is None]
    if missing:
        raise ValueError(f"samples {missing[:5]} have no token span: build them with a Tokenization")
    return torch.tensor([s.token_span for s in samples], dtype=torch.long).reshape(-1, 2)
