"""Word-by-word translation with bilingual dictionaries (MUSE), keeping unknown words, case and punctuation."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Literal

from xlt.data.dictionary import BilingualDictionary
from xlt.text.languages import normalize_lang
from xlt.text.words import match_case, replace_words, source_segmenter
from xlt.translate.translator import describe_support

WordChoice = Literal["first", "random"]


class DictionaryTranslator:
    """Word-by-word translation with bilingual dictionaries (one per direction).

    Each word (``xlt.text.words.Segmenter``: runs of letters/marks/digits; dictionary
    words inside unspaced scripts) with an entry is replaced by a translation — the first one
    (MUSE's most frequent; ``choice="first"``) or one drawn with a generator seeded by
    ``(seed, direction, text)`` (``choice="random"``), so the same text always translates the
    same way whatever batch it is in. Words without an entry, spaces and punctuation are kept;
    case follows ``match_case``. A text in which no word changes gets ``None``: it was not
    translated. Word order and morphology are the source's: this is a gloss, not a translation.
    """

    translates_segments = True

    def __init__(self, dictionaries: BilingualDictionary | Iterable[BilingualDictionary], *,
                 choice: WordChoice = "first", seed: int = 0) -> None:
        if choice not in ("first", "random"):
            raise ValueError(f"choice={choice!r} is not valid; valid: 'first', 'random'")
        if isinstance(dictionaries, BilingualDictionary):
            dictionaries = [dictionaries]
        self._dicts: dict[tuple[str, str], BilingualDictionary] = {}
        for d in dictionaries:
            key = (d.src_lang, d.tgt_lang)
            if key in self._dicts:
                raise ValueError(f"two dictionaries for {key[0]}->{key[1]}; pass one per direction")
            self._dicts[key] = d
        if not self._dicts:
            raise ValueError("DictionaryTranslator needs at least one BilingualDictionary")
        self.choice, self.seed = choice, seed
        self.languages = frozenset(tgt for _, tgt in self._dicts)
        sources = {src for src, _ in self._dicts}
        self._segmenters = {src: source_segmenter(d for (s, _), d in self._dicts.items() if s == src)
                            for src in sources}

    def supports(self, src_lang: str, tgt_lang: str) -> bool:
        return (src_lang, tgt_lang) in self._dicts

    def translate(self, texts: Sequence[str], src_lang: str, tgt_lang: str, *,
                  source_ids: Sequence[str | None] | None = None) -> list[str | None]:
        src_lang, tgt_lang = normalize_lang(src_lang), normalize_lang(tgt_lang)
        dictionary = self._dicts.get((src_lang, tgt_lang))
        if dictionary is None:
            raise ValueError(f"no {src_lang}->{tgt_lang} dictionary; {describe_support(self, src_lang)}")
        segment = self._segmenters[src_lang]
        out: list[str | None] = []
        for text in texts:
            rng = random.Random(f"{self.seed}:{src_lang}:{tgt_lang}:{text}") if self.choice == "random" else None
            replacements = []
            for word in segment(text):
                surface = text[word.start:word.end]
                options = dictionary.translations(surface)
                if options:
                    target = options[0] if rng is None else rng.choice(options)
                    replacements.append((word, match_case(surface, target)))
            translated = replace_words(text, replacements)
            out.append(translated if translated != text else None)
        return out

    def __repr__(self) -> str:
        pairs = ", ".join(f"{s}->{t}" for s, t in sorted(self._dicts))
        return f"DictionaryTranslator({pairs}, choice={self.choice!r})"
