"""Translated views (Wang et al. 2022, §3.1 items 2 and 3): the example translated in full, or in part (one
side of a pair, a span of a single text: reading 3 of ``xlt.augment``), by any ``Translator``."""

from __future__ import annotations

import random
from collections.abc import Sequence

from xlt.augment.config import AugmentConfig
from xlt.augment.views import BatchWords, ExampleRow, ViewAugmenter, Views
from xlt.text.words import Segmenter, source_segmenter
from xlt.translate.translator import Translator, describe_support, load_translator


def check_translator(kind: str, languages: Sequence[str], translator: Translator | None, source_lang: str) -> None:
    """A ``ValueError`` unless ``translator`` translates ``source_lang`` into every language."""
    if translator is None:
        raise ValueError(f"{kind} translation views need a translator (ProvidedTranslations, DictionaryTranslator "
                         "or Seq2SeqTranslator); got None")
    if not isinstance(translator, Translator):
        raise TypeError(f"{type(translator).__name__} is not a Translator: it needs languages, translates_segments, "
                        "supports() and translate()")
    for lang in languages:
        if not translator.supports(source_lang, lang):
            raise ValueError(f"{kind} translation into {lang!r}: no {source_lang}->{lang} translation available; "
                             f"{describe_support(translator, source_lang)}. Drop {lang!r} from the {kind} "
                             f"languages ({'languages' if kind == 'full' else 'partial_languages'}=...) or use a "
                             "translator that covers it.")


def _run_requests(translator: Translator, source_lang: str,
                  requests: dict[str, list[tuple[str, str | None]]]) -> dict[str, list[str | None]]:
    """One batched ``translate`` call per target language: ``{lang: [(text, source_id)]}`` -> outputs."""
    results = {}
    for lang, items in requests.items():
        texts = [text for text, _ in items]
        results[lang] = translator.translate(texts, source_lang, lang, source_ids=[sid for _, sid in items])
        if len(results[lang]) != len(texts):
            raise RuntimeError(f"{type(translator).__name__}.translate returned {len(results[lang])} outputs for "
                               f"{len(texts)} texts ({source_lang}->{lang})")
    return results


class _Requests:
    """Collects texts to translate per target language; hands out a handle to read the result."""

    def __init__(self) -> None:
        self.by_lang: dict[str, list[tuple[str, str | None]]] = {}

    def add(self, lang: str, text: str, source_id: str | None) -> tuple[str, int]:
        items = self.by_lang.setdefault(lang, [])
        items.append((text, source_id))
        return lang, len(items) - 1


class FullTranslation(ViewAugmenter):
    """Fully translated views (Wang et al. 2022, §3.1 item 2): ``n_views`` per row, each into one drawn
    language (both sides of a pair). All texts of a batch bound for one language go to the
    translator in one call (a seq2seq model batches them)."""

    kind = "full"

    def __init__(self, languages: Sequence[str], translator: Translator, *, n_views: int = 1, seed: int = 0,
                 source_lang: str = "en") -> None:
        cfg = AugmentConfig(t_f=n_views, t_p=0, t_c=0, languages=tuple(languages), seed=seed,
                            source_lang=source_lang)
        super().__init__(cfg.languages, n_views, seed, cfg.source_lang)
        check_translator(self.kind, self.languages, translator, self.source_lang)
        load_translator(translator)
        self.translator = translator

    def generate(self, rows: list[ExampleRow], words: BatchWords) -> list[Views]:
        requests = _Requests()
        plans = []
        for row in rows:
            _, langs = self._plan(row)
            plans.append([(lang, requests.add(lang, row.text, row.source_id),
                           None if row.text_pair is None else requests.add(lang, row.text_pair, row.source_id))
                          for lang in langs])
        done = _run_requests(self.translator, self.source_lang, requests.by_lang)
        produced = []
        for row, plan in zip(rows, plans):
            views = Views()
            for lang, (_, i), pair_handle in plan:
                pair = None if pair_handle is None else done[lang][pair_handle[1]]
                views.add(self.kind, lang, done[lang][i], pair, row.text_pair is not None)
            produced.append(views)
        return produced


def partial_span(n_words: int, fraction: float, rng: random.Random) -> tuple[int, int]:
    """Word indices ``[first, last)`` of the span partial translation replaces (reading 3 of ``xlt.augment``)."""
    k = max(1, round(fraction * n_words))
    if n_words > 1:
        k = min(k, n_words - 1)
    first = rng.randrange(n_words - k + 1)
    return first, first + k


class PartialTranslation(ViewAugmenter):
    """Partially translated views (Wang et al. 2022, §3.1 item 3; reading 3 of ``xlt.augment``):
    a pair gets one side translated whole, a single text a contiguous span of its words.

    ``segmenter``: the word ``Segmenter`` of the source language; the default knows no
    vocabulary, which is all a spaced source language such as English needs (an unspaced one,
    e.g. Chinese, needs ``source_segmenter(dictionaries)``).
    """

    kind = "partial"

    def __init__(self, languages: Sequence[str], translator: Translator, *, n_views: int = 1,
                 fraction: float = 0.5, seed: int = 0, source_lang: str = "en",
                 segmenter: Segmenter | None = None) -> None:
        cfg = AugmentConfig(t_f=0, t_p=n_views, t_c=0, languages=tuple(languages), partial_fraction=fraction,
                            seed=seed, source_lang=source_lang)
        super().__init__(cfg.languages, n_views, seed, cfg.source_lang)
        check_translator(self.kind, self.languages, translator, self.source_lang)
        load_translator(translator)
        self.translator, self.fraction = translator, float(fraction)
        self._segment = segmenter or source_segmenter([])

    def generate(self, rows: list[ExampleRow], words: BatchWords) -> list[Views]:
        requests = _Requests()
        plans: list[list[tuple[str, str, int, int, tuple[str, int] | None]]] = []
        for row in rows:
            rng, langs = self._plan(row)
            plan = []
            text_words = words(self._segment, row.text) if langs and row.text_pair is None else []
            for lang in langs:
                if row.text_pair is not None:
                    side = rng.randrange(2)  # 0: translate text, 1: translate text_pair
                    source = row.text if side == 0 else row.text_pair
                    plan.append((lang, "text" if side == 0 else "text_pair", 0, len(source),
                                 requests.add(lang, source, row.source_id)))
                elif not text_words:
                    plan.append((lang, "text", 0, 0, None))  # nothing to translate: a missing view
                else:
                    if not self.translator.translates_segments:
                        raise ValueError(
                            f"partial translation of the single text {row.id!r} replaces a span of it, which "
                            f"{type(self.translator).__name__} cannot translate (it knows whole stored texts "
                            "only); pass partial_translator=DictionaryTranslator(...) or Seq2SeqTranslator(...), "
                            "or set t_p=0")
                    first, last = partial_span(len(text_words), self.fraction, rng)
                    start, end = text_words[first].start, text_words[last - 1].end
                    plan.append((lang, "text", start, end, requests.add(lang, row.text[start:end], row.source_id)))
            plans.append(plan)
        done = _run_requests(self.translator, self.source_lang, requests.by_lang)
        produced = []
        for row, plan in zip(rows, plans):
            views = Views()
            for lang, side, start, end, handle in plan:
                translated = None if handle is None else done[lang][handle[1]]
                text, pair = row.text, row.text_pair
                if translated is None:
                    text = pair = None
                elif side == "text_pair":
                    pair = translated
                else:
                    text = row.text[:start] + translated + row.text[end:]
                views.add(self.kind, lang, text, pair, row.text_pair is not None)
            produced.append(views)
        return produced
