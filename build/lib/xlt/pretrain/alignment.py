"""Token positions inside parallel pairs; dictionary-aligned token pairs.

The shared layer under word-positioned samples (``wps.py``, Chen et al. 2022, Alg. 1) and the aligned
token pairs and spans of the token-level objectives (Zhang et al. 2023, §3.2; Li et al. 2021, §2.2–2.3),
on top of the words of a sentence (``xlt.text.words``) and the dictionary lookups of a
``Lexicon`` (``xlt.data.dictionary``):

- ``Tokenization`` / ``TokenizedText``: the tokenizer settings of the encoder and, through the
  fast tokenizer's ``offset_mapping``, the token positions of a character span, indexing the
  same sequence the encoder sees (prefix, special tokens, truncation included).
- ``DictionaryAligner``: per parallel pair the dictionary-aligned words, and per batch the
  ``alignment`` (P, 3) and ``src_spans`` / ``tgt_spans`` (S, 3) tensors of ``xlt.losses.base``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from xlt.data.dictionary import Lexicon
from xlt.data.records import ParallelPair
from xlt.text.words import Word

Subword = Literal["first", "all"]


@dataclass(frozen=True)
class TokenizedText:
    """One tokenized sentence: ``input_ids`` as the encoder sees them and each token's characters.

    ``spans[p]`` is token p's ``[start, end)`` in the sentence *without* the prefix, or ``None``
    for a token that belongs to no character of it (special tokens, prefix tokens, and
    content-less tokens such as XLM-R's lone "▁", whose offsets overlap the next token's).
    """

    input_ids: tuple[int, ...]
    spans: tuple[tuple[int, int] | None, ...]

    def word_tokens(self, word: Word) -> tuple[int, ...] | None:
        """Positions of the tokens that make up ``word``, or ``None`` if it has no tokens of its own.

        ``None`` when the word was truncated away (partly or fully) or shares a token with a
        neighbour (the XLM-R token 水平 when the word is 水): then no run of tokens represents
        the word and nothing else. Otherwise the tokens overlapping the word, which tile it
        exactly.
        """
        hits = [p for p, span in enumerate(self.spans) if span and span[0] < word.end and span[1] > word.start]
        if not hits:
            return None
        inside = all(word.start <= self.spans[p][0] and self.spans[p][1] <= word.end for p in hits)
        covered = self.spans[hits[0]][0] == word.start and self.spans[hits[-1]][1] == word.end
        contiguous = hits[-1] - hits[0] + 1 == len(hits)
        return tuple(hits) if inside and covered and contiguous else None

    def count(self, tokens: Sequence[int]) -> int:
        """Occurrences of the id sequence of positions ``tokens`` as a contiguous run of ``input_ids``."""
        needle = [self.input_ids[p] for p in tokens]
        m = len(needle)
        return sum(1 for i in range(len(self.input_ids) - m + 1) if list(self.input_ids[i:i + m]) == needle)


@dataclass(frozen=True)
class Tokenization:
    """How the encoder tokenizes a sentence: a fast tokenizer, ``max_length`` and text ``prefix``.

    Token positions computed here index ``tokenizer(prefix + text, truncation=True,
    max_length=max_length)`` — what ``TransformerEncoder.tokenize`` feeds the backbone — so they
    line up with its token states (right padding leaves positions unchanged).
    ``from_encoder`` copies the settings of a ``TransformerEncoder`` (e5's "query: " prefix).
    """

    tokenizer: Any
    max_length: int | None = 128
    prefix: str = ""
    _blank: dict[int, bool] = field(default_factory=dict, init=False, repr=False, compare=False)  # id -> no text

    def __post_init__(self) -> None:
        if not getattr(self.tokenizer, "is_fast", False):
            raise ValueError(f"{type(self.tokenizer).__name__} is not a fast tokenizer; token positions need its "
                             "offset_mapping (load it with use_fast=True)")
        if getattr(self.tokenizer, "padding_side", "right") != "right":
            raise ValueError(f"padding_side={self.tokenizer.padding_side!r}: token positions assume right padding; "
                             "set tokenizer.padding_side = 'right'")

    @classmethod
    def from_encoder(cls, encoder: Any) -> Tokenization:
        return cls(encoder.tokenizer, max_length=encoder.max_length, prefix=encoder.prefix)

    def _is_blank(self, token_id: int) -> bool:
        blank = self._blank.get(token_id)
        if blank is None:
            token = self.tokenizer.convert_ids_to_tokens(token_id)
            blank = self._blank[token_id] = not self.tokenizer.convert_tokens_to_string([token]).strip()
        return blank

    def encode(self, text: str) -> TokenizedText:
        enc = self.tokenizer(self.prefix + text, truncation=self.max_length is not None, max_length=self.max_length,
                             return_offsets_mapping=True, return_special_tokens_mask=True)
        shift = len(self.prefix)
        spans: list[tuple[int, int] | None] = []
        for token_id, (s, e), special in zip(enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"]):
            s, e = max(s - shift, 0), e - shift
            # Offsets may include surrounding whitespace (byte-level BPE without trim_offsets).
            while s < e and text[s].isspace():
                s += 1
            while e > s and text[e - 1].isspace():
                e -= 1
            spans.append(None if special or e <= s or self._is_blank(token_id) else (s, e))
        return TokenizedText(tuple(enc["input_ids"]), tuple(spans))


@dataclass(frozen=True)
class AlignedWords:
    """A dictionary-aligned word pair of one parallel pair, with its token positions on each side."""

    src: Word
    tgt: Word
    src_tokens: tuple[int, ...]
    tgt_tokens: tuple[int, ...]


class DictionaryAligner:
    """Dictionary-aligned token pairs (Zhang et al. 2023, §3.2) and aligned spans (Li et al. 2021, §2.3) of a batch.

    Zhang et al. 2023, §3.2: "for parallel corpus (x_i, y_i), we assume that there are several synonym
    pairs that can be exploited via the mapping and filter from thesaurus dictionary" (MUSE,
    §4.2); the synonym pairs S_i are the positives of the token contrast (Eq. 4–7). The paper
    does not spell out mapping or filter. Reading chosen:

    1. mapping: source word a and target word b are linked when b is a translation of a in the
       ``Lexicon`` (lowercase; identity and stop-word entries filtered there).
    2. filter (``one_to_one``, default): keep a link only if it is the only link of a *and* of
       b — the "mutually aligned word pairs" of Li et al. 2021, §2.2 for a dictionary, which has no
       alignment scores to break ties. A repeated or ambiguous word ("the" -> die/der/das, a
       word occurring twice) has no reliable partner and is dropped rather than guessed.
    3. tokens: a word counts only if it has tokens of its own (``TokenizedText.word_tokens``);
       ``subword="first"`` (default) aligns the first sub-token of each word, the usual choice
       for word-level tasks on subword models, so each word pair yields exactly one positive
       and the word's other sub-tokens act as negatives; ``"all"`` aligns every source
       sub-token of the word with every target sub-token.

    Spans (Li et al. 2021, §2.3, ``consistent_phrase_pairs``): MGC takes span pairs from "the phrase
    table via statistical machine translation tools", i.e. the phrase pairs consistent with a
    word alignment. They are extracted from the one-to-one word links of step 2 (whatever
    ``one_to_one`` says for token pairs, as the extraction takes a one-to-one alignment;
    before step 3, so a link whose word lost its tokens still counts for consistency); a span
    pair whose four boundary words all have tokens becomes rows ``(pair, first token of the
    first word, last token of the last word + 1)``.

    Positions index ``tokenization``'s sequence (``<s>`` = 0), so they line up with
    ``src_tokens`` / ``tgt_tokens`` of an encoder using the same ``Tokenization``.
    """

    def __init__(self, lexicon: Lexicon, tokenization: Tokenization, *, one_to_one: bool = True,
                 subword: Subword = "first", max_span_words: int = 4) -> None:
        if subword not in ("first", "all"):
            raise ValueError(f"subword={subword!r} is not valid; valid: 'first', 'all'")
        if max_span_words < 2:
            raise ValueError(f"max_span_words={max_span_words} must be >= 2 (a span pair has at least two links)")
        self.lexicon, self.tokenization = lexicon, tokenization
        self.one_to_one, self.subword, self.max_span_words = one_to_one, subword, max_span_words

    def _links(self, pair: ParallelPair) -> tuple[list[Word], list[Word], list[tuple[int, int]]]:
        self.lexicon.check_pair(pair)
        src_words = self.lexicon.segment(pair.src, "src")
        tgt_words = self.lexicon.segment(pair.tgt, "tgt")
        links = candidate_links(src_words, tgt_words, self.lexicon)
        return src_words, tgt_words, one_to_one(links) if self.one_to_one else links

    def align(self, pair: ParallelPair) -> list[AlignedWords]:
        """The dictionary-aligned word pairs of one parallel pair with their tokens, in source order."""
        return self._align(pair)[0]

    def _align(self, pair: ParallelPair) -> tuple[list[AlignedWords], list[tuple[int, int, int, int]]]:
        src_words, tgt_words, links = self._links(pair)
        src_enc, tgt_enc = self.tokenization.encode(pair.src), self.tokenization.encode(pair.tgt)
        src_tok = [src_enc.word_tokens(w) for w in src_words]
        tgt_tok = [tgt_enc.word_tokens(w) for w in tgt_words]
        aligned = [AlignedWords(src_words[i], tgt_words[j], src_tok[i], tgt_tok[j])
                   for i, j in links if src_tok[i] and tgt_tok[j]]
        spans = []
        for i1, i2, j1, j2 in consistent_phrase_pairs(one_to_one(links), self.max_span_words):
            if src_tok[i1] and src_tok[i2] and tgt_tok[j1] and tgt_tok[j2]:
                spans.append((src_tok[i1][0], src_tok[i2][-1] + 1, tgt_tok[j1][0], tgt_tok[j2][-1] + 1))
        return aligned, spans

    def __call__(self, pairs: Sequence[ParallelPair]) -> dict[str, torch.Tensor]:
        """A batch of pairs -> ``alignment`` (P, 3), ``src_spans`` and ``tgt_spans`` (S, 3), long.

        ``alignment`` rows are ``(pair index, src position, tgt position)``; span rows are
        ``(pair index, start, end)`` with ``end`` exclusive, row k of ``src_spans`` aligned with
        row k of ``tgt_spans``. A pair with no alignment contributes no rows (ragged batches).
        """
        links: list[tuple[int, int, int]] = []
        src_spans: list[tuple[int, int, int]] = []
        tgt_spans: list[tuple[int, int, int]] = []
        for b, pair in enumerate(pairs):
            aligned, spans = self._align(pair)
            for a in aligned:
                if self.subword == "first":
                    links.append((b, a.src_tokens[0], a.tgt_tokens[0]))
                else:
                    links.extend((b, i, j) for i in a.src_tokens for j in a.tgt_tokens)
            for s0, s1, t0, t1 in spans:
                src_spans.append((b, s0, s1))
                tgt_spans.append((b, t0, t1))

        def as_tensor(rows: list[tuple[int, int, int]]) -> torch.Tensor:
            return torch.tensor(rows, dtype=torch.long).reshape(-1, 3)

        return {"alignment": as_tensor(links), "src_spans": as_tensor(src_spans), "tgt_spans": as_tensor(tgt_spans)}


def consistent_phrase_pairs(links: Iterable[tuple[int, int]], max_words: int = 4) -> list[tuple[int, int, int, int]]:
    """Span pairs ``(i1, i2, j1, j2)`` (word indices, inclusive) consistent with a one-to-one alignment.

    Li et al. (2021, §2.3) take span pairs from a phrase table induced by SMT tools; those tools
    extract the phrase pairs consistent with a word alignment (Och & Ney 2004; Koehn et al.
    2003): every link with one end inside a range has its other end inside the other range.
    Reading chosen: only minimal pairs — both ranges begin and end on linked words; unlinked
    words inside are included, none are added at the borders, since nothing says which side
    they belong to (with a sparse dictionary alignment most words are unlinked, and extending
    over them would multiply arbitrary spans) — with at least 2 links (one link is a word pair)
    and at most ``max_words`` words per side. Sorted by (i1, i2).
    """
    by_src = sorted(set(links))
    if len({i for i, _ in by_src}) != len(by_src) or len({j for _, j in by_src}) != len(by_src):
        raise ValueError("consistent_phrase_pairs needs a one-to-one alignment (each word in at most one link)")
    out = []
    for x, (i1, _) in enumerate(by_src):
        for y in range(x + 1, len(by_src)):
            i2 = by_src[y][0]
            if i2 - i1 + 1 > max_words:
                break
            targets = [j for _, j in by_src[x:y + 1]]
            j1, j2 = min(targets), max(targets)
            # Consistent when the target range holds exactly the links of the source range.
            if j2 - j1 + 1 <= max_words and sum(j1 <= j <= j2 for _, j in by_src) == len(targets):
                out.append((i1, i2, j1, j2))
    return out


def candidate_links(src_words: Sequence[Word], tgt_words: Sequence[Word], lexicon: Lexicon) -> list[tuple[int, int]]:
    """All (i, j) with ``tgt_words[j]`` a translation of ``src_words[i]``, sorted."""
    at: dict[str, list[int]] = {}
    for j, w in enumerate(tgt_words):
        at.setdefault(w.text, []).append(j)
    return sorted((i, j) for i, w in enumerate(src_words) for t in lexicon.translations(w.text) for j in at.get(t, ()))


def one_to_one(links: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The links (i, j) that are the only link of i and the only link of j."""
    links = list(links)
    src_n: dict[int, int] = {}
    tgt_n: dict[int, int] = {}
    for i, j in links:
        src_n[i] = src_n.get(i, 0) + 1
        tgt_n[j] = tgt_n.get(j, 0) + 1
    return [(i, j) for i, j in links if src_n[i] == 1 and tgt_n[j] == 1]
