"""Bilingual word dictionaries (MUSE format), many-to-many, for code-switching and word alignment.

A MUSE file has one ``source_word<whitespace>target_word`` pair per line; a word with
several translations appears on several lines, ordered by source-word frequency. Order
of first appearance is kept, so ``translations(w)[0]`` is the most frequent choice.

``Lexicon`` prepares a dictionary for lookups inside the sentences of a parallel pair
(lowercase, identity and stop-word entries filtered, one ``xlt.text.words.Segmenter`` per side).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Literal

from xlt.data.errors import DataError
from xlt.data.paths import dataset_dir
from xlt.data.records import ParallelPair
from xlt.data.textfile import read_lines
from xlt.text.languages import normalize_lang
from xlt.text.words import Segmenter, Word

Side = Literal["src", "tgt"]

# The published MUSE dictionaries name Chinese ``zh`` but are written in Traditional
# characters; reading them from the MUSE layout labels that side ``zh-Hant`` so that it is
# never mistaken for SIB-200's Simplified ``zh``.
_MUSE_SCRIPT = {"zh": "zh-Hant"}


class BilingualDictionary:
    """Word translations ``src_lang`` -> ``tgt_lang``; a word may have several translations.

    Lookup is exact first, then lowercased: MUSE entries are lowercase, and a sentence-initial
    ``The`` should still find ``the``. ``len`` is the number of source words.
    """

    def __init__(self, pairs: Iterable[tuple[str, str]], src_lang: str, tgt_lang: str) -> None:
        self.src_lang = normalize_lang(src_lang)
        self.tgt_lang = normalize_lang(tgt_lang)
        # dict-of-dicts: ordered like the input and free of duplicate pairs in one pass.
        table: dict[str, dict[str, None]] = {}
        for source, target in pairs:
            table.setdefault(source, {})[target] = None
        self._table: dict[str, tuple[str, ...]] = {word: tuple(targets) for word, targets in table.items()}

    def translations(self, word: str) -> tuple[str, ...]:
        """All translations of ``word`` in order of first appearance; ``()`` if none."""
        found = self._table.get(word)
        if found is None:
            found = self._table.get(word.lower(), ())
        return found

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and bool(self.translations(word))

    def __len__(self) -> int:
        return len(self._table)

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    @property
    def num_pairs(self) -> int:
        """The number of distinct (source, target) pairs."""
        return sum(len(targets) for targets in self._table.values())

    def pairs(self) -> Iterator[tuple[str, str]]:
        """Every (source, target) pair, in order."""
        for word, targets in self._table.items():
            for target in targets:
                yield word, target

    def __repr__(self) -> str:
        return f"BilingualDictionary({self.src_lang}->{self.tgt_lang}, {len(self)} words, {self.num_pairs} pairs)"


class Lexicon:
    """A bilingual dictionary prepared for finding translations inside a parallel pair.

    Lookups are lowercase (MUSE is). Filtered out of the translation table, each for a reason:

    - identity entries ``w -> w`` unless ``keep_identity``: half of MUSE en-de (48,738 of
      101,931 lines) maps a word to itself — names, numbers, loanwords copied by MUSE's
      construction, but also false friends (en "will" / de "will" = want, en "man" / de "man" =
      one). Identical strings get identical sub-tokens in a shared vocabulary, so as positives
      they teach a contrastive loss little, and the false friends teach it wrong alignments.
    - ``stop_words`` (either side, case-insensitive): Chen et al. (2022, §2.1) build WPSs with "a bilingual
      dictionary that has been removed stop words". No list is built in; pass one (e.g.
      ``sklearn.feature_extraction.text.ENGLISH_STOP_WORDS`` for an English source side).

    Segmentation of unspaced scripts uses every word of that side, filtered or not, so that a
    filtered word still blocks a shorter word inside it.
    """

    def __init__(self, dictionary: BilingualDictionary, *, keep_identity: bool = False,
                 stop_words: Collection[str] = ()) -> None:
        self.src_lang, self.tgt_lang = dictionary.src_lang, dictionary.tgt_lang
        stop = {w.lower() for w in stop_words}
        table: dict[str, dict[str, None]] = {}
        src_vocab, tgt_vocab = set(), set()
        for source, target in dictionary.pairs():
            source, target = source.lower(), target.lower()
            src_vocab.add(source)
            tgt_vocab.add(target)
            if (source == target and not keep_identity) or source in stop or target in stop:
                continue
            table.setdefault(source, {})[target] = None
        self._table = {w: frozenset(ts) for w, ts in table.items()}
        self._segmenters = {"src": Segmenter(src_vocab), "tgt": Segmenter(tgt_vocab)}

    def translations(self, word: str) -> frozenset[str]:
        """The (lowercase) translations of ``word`` after filtering; empty if none."""
        return self._table.get(word.lower(), frozenset())

    def segment(self, text: str, side: Side) -> list[Word]:
        """The words of a ``side`` ("src" or "tgt") sentence."""
        return self._segmenters[side](text)

    def check_pair(self, pair: ParallelPair) -> None:
        """A pair in the dictionary's direction, else a ValueError saying what differs."""
        if (pair.src_lang, pair.tgt_lang) != (self.src_lang, self.tgt_lang):
            hint = (" (MUSE's Chinese is Traditional, zh-Hant; SIB-200's zho_Hans is Simplified, zh: to match "
                    "anyway, relabel it, BilingualDictionary(d.pairs(), 'en', 'zh'), and expect fewer matches)"
                    if "zh-Hant" in (self.src_lang, self.tgt_lang) else "")
            raise ValueError(f"pair {pair.id!r} is {pair.src_lang}->{pair.tgt_lang} but the dictionary is "
                             f"{self.src_lang}->{self.tgt_lang}{hint}; use a dictionary of the pair's direction")

    def __repr__(self) -> str:
        return f"Lexicon({self.src_lang}->{self.tgt_lang}, {len(self._table)} source words)"


def read_muse(root_or_file: str | Path, src: str, tgt: str) -> BilingualDictionary:
    """Read a MUSE dictionary from a file, or ``<src>-<tgt>.txt`` under ``root/muse/``.

    Given the data root (or the ``muse/`` directory), the file is named by ISO 639-1 codes as
    MUSE publishes it, and a Chinese side is labelled ``zh-Hant`` (MUSE's Chinese is
    Traditional). Given a file, ``src`` and ``tgt`` are taken as they are. Blank lines are
    skipped; a line that is not exactly two whitespace-separated words raises ``DataError``.
    """
    src_lang, tgt_lang = normalize_lang(src), normalize_lang(tgt)
    path = Path(root_or_file)
    if not path.is_file():
        muse = dataset_dir(path, "muse")
        # MUSE's file names carry no script: ``zh-Hant`` is the ``zh`` file.
        name = f"{src_lang.split('-')[0]}-{tgt_lang.split('-')[0]}.txt"
        path = muse / name
        if not path.is_file():
            available = ", ".join(p.stem for p in sorted(muse.glob("*.txt"))) or "none"
            raise FileNotFoundError(f"{path} does not exist; dictionaries present in {muse}: {available}")
        src_lang = _MUSE_SCRIPT.get(src_lang, src_lang)
        tgt_lang = _MUSE_SCRIPT.get(tgt_lang, tgt_lang)

    pairs: list[tuple[str, str]] = []
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2:
            raise DataError(
                path,
                number,
                f"expected 'source_word<whitespace>target_word', found {len(fields)} field(s): {line!r}",
            )
        pairs.append((fields[0], fields[1]))
    return BilingualDictionary(pairs, src_lang, tgt_lang)
