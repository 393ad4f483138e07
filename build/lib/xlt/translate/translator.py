"""The ``Translator`` protocol every backend answers (see ``xlt.translate``), and what its callers share:
``describe_support`` for error messages, ``clean_translation``, ``load_translator``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Translator(Protocol):
    """Translates lists of texts; ``None`` where it has no translation of a text.

    Attributes:
        languages: the target languages it can produce (canonical codes).
        translates_segments: whether it can translate any text, such as a span cut out of a
            sentence for partial translation (``False`` for ``ProvidedTranslations``, which
            only knows the whole texts stored in the data).
    """

    languages: frozenset[str]
    translates_segments: bool

    def supports(self, src_lang: str, tgt_lang: str) -> bool:
        """Whether it can translate ``src_lang`` -> ``tgt_lang`` at all."""
        ...

    def translate(self, texts: Sequence[str], src_lang: str, tgt_lang: str, *,
                  source_ids: Sequence[str | None] | None = None) -> list[str | None]:
        """One translation (or ``None``) per text. ``source_ids``: the texts' ``Example.source_id``;
        needed by ``ProvidedTranslations``, ignored by the other backends."""
        ...


def describe_support(translator: Translator, src_lang: str) -> str:
    """A sentence for error messages: what ``translator`` can translate ``src_lang`` into."""
    targets = sorted(t for t in translator.languages if translator.supports(src_lang, t))
    return (f"{type(translator).__name__} translates {src_lang} into: {', '.join(targets)}" if targets
            else f"{type(translator).__name__} cannot translate from {src_lang} at all "
                 f"(its target languages: {', '.join(sorted(translator.languages)) or 'none'})")


def clean_translation(translation: str | None) -> str | None:
    """``None`` for an empty or blank output: as a view it would be an empty input."""
    return translation if translation is not None and translation.strip() else None


def load_translator(translator: Translator) -> None:
    """Load a translator's models now (``Seq2SeqTranslator.load``), in a UDF's ``__init__``, i.e. once
    per Ray actor rather than on the first batch; a translator without models has nothing to load."""
    load = getattr(translator, "load", None)
    if callable(load):
        load()
