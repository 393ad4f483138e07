"""Bilingual word dictionaries (MUSE format), many-to-many, for code-switching and word alignment.

A MUSE file has one ``source_word<whitespace>target_word`` pair per line; a word with
several translations appears on several lines, ordered by source-word frequency. Order
of first appearance is kept, so ``translations(w)[0]`` is the most frequent choice.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from xlt.data.errors import DataError
from xlt.text.languages import normalize_lang
from xlt.data.paths import dataset_dir
from xlt.data.textfile import read_lines

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
