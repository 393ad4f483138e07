"""Translations that exist in the data: rows of several languages that share a ``source_id``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xlt.data.records import Example
from xlt.text.languages import normalize_lang


class ProvidedTranslations:
    """Translations present in the data: rows of several languages that share a ``source_id``.

    ``translate(texts, src, tgt, source_ids=...)`` returns, for each text, the ``tgt`` row with
    the same ``source_id`` — its ``text`` if the given text is the ``src`` row's ``text``, its
    ``text_pair`` if it is the ``src`` row's ``text_pair`` — and ``None`` when there is no such
    row or the text is neither (e.g. a span cut from the sentence: only whole stored texts have
    a translation here, hence ``translates_segments = False``). Matching the text, not only the
    id, guards against ``source_id``s that link to another dataset.

    Use training rows only: translations of dev/test rows would leak evaluation sentences into
    training (a task's ``train`` role: ``task.examples("train", lang)`` for each language).
    """

    translates_segments = False

    def __init__(self, examples: Iterable[Example]) -> None:
        table: dict[str, dict[str, Example]] = {}
        for example in examples:
            if not isinstance(example, Example):
                raise TypeError(f"ProvidedTranslations takes Example records, got {type(example).__name__}")
            if example.source_id is None:
                raise ValueError(f"example {example.id!r} has no source_id; provided translations are "
                                 "looked up by source_id (SIB-200: the FLORES index_id)")
            by_id = table.setdefault(example.lang, {})
            other = by_id.get(example.source_id)
            if other is not None:
                raise ValueError(f"examples {other.id!r} and {example.id!r} are both {example.lang} with source_id "
                                 f"{example.source_id!r}; each language may hold one row per source_id")
            by_id[example.source_id] = example
        if not table:
            raise ValueError("ProvidedTranslations needs examples; got none")
        self._table = table
        self.languages = frozenset(table)

    def supports(self, src_lang: str, tgt_lang: str) -> bool:
        return src_lang in self.languages and tgt_lang in self.languages and src_lang != tgt_lang

    def translate(self, texts: Sequence[str], src_lang: str, tgt_lang: str, *,
                  source_ids: Sequence[str | None] | None = None) -> list[str | None]:
        src_lang, tgt_lang = normalize_lang(src_lang), normalize_lang(tgt_lang)
        if not self.supports(src_lang, tgt_lang):
            raise ValueError(f"no provided translations {src_lang}->{tgt_lang}: languages stored: "
                             f"{', '.join(sorted(self.languages))} (both sides must be stored)")
        if source_ids is None or len(source_ids) != len(texts):
            got = "none" if source_ids is None else f"{len(source_ids)} for {len(texts)} texts"
            raise ValueError(f"ProvidedTranslations looks translations up by source_id: pass one source_id per "
                             f"text (got {got})")
        sources, targets = self._table[src_lang], self._table[tgt_lang]
        out: list[str | None] = []
        for text, source_id in zip(texts, source_ids):
            src, tgt = sources.get(source_id), targets.get(source_id)
            if src is None or tgt is None:
                out.append(None)
            elif text == src.text:
                out.append(tgt.text)
            elif src.text_pair is not None and text == src.text_pair:
                out.append(tgt.text_pair)
            else:
                out.append(None)
        return out

    def __repr__(self) -> str:
        sizes = ", ".join(f"{lang}: {len(rows)}" for lang, rows in sorted(self._table.items()))
        return f"ProvidedTranslations({sizes})"
