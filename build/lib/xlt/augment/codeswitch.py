"""Code-switched views (Wang et al. 2022, §3.1 item 1; CoSDA-ML): each word with a dictionary translation
switched with probability r_c (reading 2 of ``xlt.augment``).

A sentence pair is switched consistently: one draw per distinct word across both sides, applied to
every occurrence, so a word the two sides share is switched on both or neither, into the same
translation. Drawn per occurrence, "Cook Pond" / "Pond Cook" became "Cocina Estanque" /
"Cocinero Pond": the overlap between the sides, which a paraphrase label (PAWS-X) depends on, was
lost. A single text keeps CoSDA-ML's draw per occurrence.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from xlt.augment.config import AugmentConfig
from xlt.augment.views import BatchWords, ExampleRow, ViewAugmenter, Views
from xlt.data.dictionary import BilingualDictionary
from xlt.text.words import Segmenter, Word, match_case, replace_words, source_segmenter


def switch_table(dictionary: BilingualDictionary) -> dict[str, tuple[str, ...]]:
    """Lowercase source word -> its translations other than itself, in dictionary order."""
    table: dict[str, dict[str, None]] = {}
    for source, target in dictionary.pairs():
        word = source.lower()
        if target.lower() != word:
            table.setdefault(word, {})[target] = None
    return {word: tuple(targets) for word, targets in table.items()}


def code_switch(text: str, words: Sequence[Word], table: Mapping[str, Sequence[str]], r_c: float,
                rng: random.Random, drawn: Mapping[str, str | None] | None = None) -> tuple[str, int, int]:
    """Switch each word of ``text`` that has a translation in ``table`` with probability ``r_c``.

    ``words`` are ``text``'s words (``Segmenter``; ``Word.text`` is the lowercase lookup key).
    ``drawn`` (``draw_per_word``) fixes each word's outcome for every occurrence instead of a draw
    per occurrence. Returns ``(switched text, words with a translation, words switched)``; case
    and everything between words are preserved.
    """
    replacements: list[tuple[Word, str]] = []
    switchable = 0
    for word in words:
        options = table.get(word.text)
        if not options:
            continue
        switchable += 1
        if drawn is not None:
            target = drawn[word.text]
        else:
            target = rng.choice(options) if rng.random() < r_c else None
        if target is not None:
            replacements.append((word, match_case(text[word.start:word.end], target)))
    return replace_words(text, replacements), switchable, len(replacements)


def draw_per_word(sides: Sequence[Sequence[Word]], table: Mapping[str, Sequence[str]], r_c: float,
                  rng: random.Random) -> dict[str, str | None]:
    """One draw per distinct switchable word of ``sides`` (in order of first occurrence): its
    translation with probability ``r_c``, else ``None`` (kept)."""
    drawn: dict[str, str | None] = {}
    for word in (w for side in sides for w in side):
        options = table.get(word.text)
        if options and word.text not in drawn:
            drawn[word.text] = rng.choice(options) if rng.random() < r_c else None
    return drawn


def check_dictionaries(languages: Sequence[str], dictionaries: Iterable[BilingualDictionary],
                       source_lang: str) -> dict[str, BilingualDictionary]:
    """``{language: dictionary source_lang -> language}``, or a ``ValueError`` naming what is missing."""
    by_pair: dict[tuple[str, str], BilingualDictionary] = {}
    for d in dictionaries:
        if not isinstance(d, BilingualDictionary):
            raise TypeError(f"dictionaries must be BilingualDictionary objects, got {type(d).__name__}")
        if (d.src_lang, d.tgt_lang) in by_pair:
            raise ValueError(f"two dictionaries for {d.src_lang}->{d.tgt_lang}; pass one per direction")
        by_pair[(d.src_lang, d.tgt_lang)] = d
    found: dict[str, BilingualDictionary] = {}
    for lang in languages:
        d = by_pair.get((source_lang, lang))
        if d is None:
            have = ", ".join(f"{s}->{t}" for s, t in sorted(by_pair)) or "none"
            hint = (" MUSE's Chinese is Traditional and is read as 'zh-Hant': code-switch into 'zh-Hant'."
                    if lang == "zh" and (source_lang, "zh-Hant") in by_pair else "")
            raise ValueError(
                f"code-switching into {lang!r}: no {source_lang}->{lang} dictionary (MUSE has none for it, or it "
                f"was not passed); dictionaries given: {have}.{hint} Pass one, or leave {lang!r} out of the "
                "code-switching languages (codeswitch_languages=...; Wang et al. 2022, §4.2, ignore languages MUSE "
                "lacks)."
            )
        found[lang] = d
    return found


class CodeSwitch(ViewAugmenter):
    """Code-switched views (Wang et al. 2022, §3.1 item 1; CoSDA-ML): ``n_views`` per row, each into one
    drawn target language, each dictionary word switched with probability ``r_c``.

    A view of a text with no switchable word is recorded as missing (``codeswitch:<lang>``);
    a view in which the Bernoulli draws switched nothing is kept (it is a sample of the process).
    """

    kind = "codeswitch"

    def __init__(self, r_c: float, languages: Sequence[str], dictionaries: Iterable[BilingualDictionary], *,
                 n_views: int = 1, seed: int = 0, source_lang: str = "en", segmenter: Segmenter | None = None) -> None:
        cfg = AugmentConfig(t_f=0, t_p=0, t_c=n_views, r_c=r_c, languages=tuple(languages), seed=seed,
                            source_lang=source_lang)
        super().__init__(cfg.languages, n_views, seed, cfg.source_lang)
        self.r_c = float(r_c)
        chosen = check_dictionaries(self.languages, dictionaries, self.source_lang)
        self._tables = {lang: switch_table(d) for lang, d in chosen.items()}
        self._segment = segmenter or source_segmenter(chosen.values())

    def generate(self, rows: list[ExampleRow], words: BatchWords) -> list[Views]:
        produced = []
        for row in rows:
            rng, langs = self._plan(row)
            views = Views()
            if langs:
                text_words = words(self._segment, row.text)
                pair_words = words(self._segment, row.text_pair) if row.text_pair is not None else None
            for lang in langs:
                table = self._tables[lang]
                # a pair: one draw per word for both sides (module docstring)
                drawn = draw_per_word((text_words, pair_words), table, self.r_c, rng) if pair_words is not None else None
                text, switchable, _ = code_switch(row.text, text_words, table, self.r_c, rng, drawn)
                pair = None
                if pair_words is not None:
                    pair, pair_switchable, _ = code_switch(row.text_pair, pair_words, table, self.r_c, rng, drawn)
                    switchable += pair_switchable
                if switchable == 0:
                    text = pair = None
                views.add(self.kind, lang, text, pair, row.text_pair is not None)
            produced.append(views)
        return produced
