"""The words of a sentence, with their character spans: one segmentation for every room.

Code-switching and partial translation (``xlt.augment``), dictionary translation (``xlt.translate``)
and the dictionary lookups of pretraining (``xlt.data.dictionary.Lexicon``, ``xlt.pretrain``) all use it.

- ``segment_words`` / ``Segmenter``: runs of letters, marks and digits are words (punctuation,
  hyphens and apostrophes separate them), lowercased for lookup since MUSE is lowercase. Scripts
  written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar, Tibetan) have no such words:
  inside a run of them, the words are the dictionary words found as substrings, longest match
  first, non-overlapping. ``source_segmenter``: one for the source words of several dictionaries.
- ``replace_words`` / ``match_case``: a sentence with some of its words replaced (by their
  translations), case and everything between words kept.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Scripts written without spaces between words: Han (+ compatibility ideographs and extensions),
# kana (+ halfwidth), Thai, Lao, Tibetan, Myanmar, Khmer, and the ideographic iteration marks 々〆〇.
_UNSPACED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x3005, 0x3007),
    (0x3040, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F), (0x20000, 0x3FFFF),
)


def is_unspaced(char: str) -> bool:
    """True for a character of a script written without spaces between words."""
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in _UNSPACED_RANGES)


def _is_word_char(char: str) -> bool:
    return unicodedata.category(char)[0] in "LMN"  # letters, combining marks (Devanagari vowel signs), digits


@dataclass(frozen=True)
class Word:
    """A word of a sentence: ``text`` lowercased for lookup, ``[start, end)`` its characters in the sentence."""

    text: str
    start: int
    end: int


class Segmenter:
    """Splits sentences into ``Word``s; ``vocabulary`` supplies the words of unspaced scripts.

    Spaced scripts: a word is a maximal run of letters, combining marks and digits (Unicode
    categories L*, M*, N*), so punctuation is stripped and "well-known" / "l'homme" are two
    words each. Unspaced scripts: inside a maximal run of their characters, every substring
    that is a vocabulary word is a candidate; candidates are taken longest first (ties: leftmost)
    and kept if they overlap none taken before. Characters matched by no vocabulary word belong
    to no word: 水 inside 水平 is not the word 水 when 水平 is in the vocabulary.
    """

    def __init__(self, vocabulary: Iterable[str]) -> None:
        self.unspaced = {w for w in (v.lower() for v in vocabulary) if w and all(is_unspaced(c) for c in w)}
        self.max_len = max(map(len, self.unspaced), default=0)

    def __call__(self, text: str) -> list[Word]:
        words: list[Word] = []
        i, n = 0, len(text)
        while i < n:
            if not _is_word_char(text[i]):
                i += 1
                continue
            unspaced = is_unspaced(text[i])
            j = i + 1
            while j < n and _is_word_char(text[j]) and is_unspaced(text[j]) == unspaced:
                j += 1
            if unspaced:
                words.extend(self._match(text, i, j))
            else:
                words.append(Word(text[i:j].lower(), i, j))
            i = j
        return sorted(words, key=lambda w: w.start)

    def _match(self, text: str, start: int, end: int) -> list[Word]:
        found = [(s, e) for s in range(start, end) for e in range(s + 1, min(end, s + self.max_len) + 1)
                 if text[s:e] in self.unspaced]
        taken: list[Word] = []
        used = [False] * (end - start)
        for s, e in sorted(found, key=lambda se: (se[0] - se[1], se[0])):  # longest first, then leftmost
            if not any(used[s - start:e - start]):
                used[s - start:e - start] = [True] * (e - s)
                taken.append(Word(text[s:e], s, e))
        return taken


def segment_words(text: str, vocabulary: Iterable[str] = ()) -> list[Word]:
    """The words of ``text`` in order (see ``Segmenter``); ``vocabulary`` for unspaced scripts."""
    return Segmenter(vocabulary)(text)


def match_case(surface: str, translation: str) -> str:
    """``translation`` in the case pattern of the source word ``surface``.

    MUSE entries are lowercase, so the source word's case is carried over: ``THE`` -> ``DIE``
    (all caps, two letters or more), ``The`` -> ``Die`` (capitalised), anything else unchanged.
    Caseless scripts (Han, Arabic, Devanagari) are unaffected by ``upper()``.
    """
    if len(surface) > 1 and surface.isupper():
        return translation.upper()
    if surface[:1].isupper():
        return translation[:1].upper() + translation[1:]
    return translation


def replace_words(text: str, replacements: Sequence[tuple[Word, str]]) -> str:
    """``text`` with each word's characters replaced, everything between words (spaces,
    punctuation, words not listed) kept as it is. ``replacements`` in sentence order."""
    parts: list[str] = []
    at = 0
    for word, new in replacements:
        parts.append(text[at:word.start])
        parts.append(new)
        at = word.end
    parts.append(text[at:])
    return "".join(parts)


def source_segmenter(vocabularies: Iterable[Iterable[str]]) -> Segmenter:
    """A word ``Segmenter`` whose vocabulary (used for unspaced scripts, e.g. a Chinese or Japanese
    source sentence) is the union of ``vocabularies``; a ``BilingualDictionary`` iterates over its
    source words, so dictionaries can be passed as they are.
    """
    vocabulary: set[str] = set()
    for words in vocabularies:
        vocabulary.update(words)
    return Segmenter(vocabulary)
