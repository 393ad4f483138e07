"""``AugmentConfig``: the settings of the augmentation (Wang et al. 2022, §4.1), validated; the kinds of view."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from xlt.config import check
from xlt.text.languages import normalize_lang

ViewKind = Literal["full", "partial", "codeswitch"]
VIEW_KINDS: tuple[str, ...] = ("full", "partial", "codeswitch")


@dataclass(frozen=True)
class AugmentConfig:
    """The settings of ``CrossLingualAugment`` (Wang et al. 2022, §4.1), validated; sweepable with Tune.

    Defaults are Wang et al. (2022)'s PAWS-X settings (t_f = t_p = t_c = 1, r_c = 0.5).

    Args:
        t_f, t_p, t_c: views per example by full translation, partial translation, code-switching.
        r_c: probability that a word with a dictionary translation is switched.
        languages: target languages of every kind of view, any code ``normalize_lang`` accepts.
        partial_languages, codeswitch_languages: the target languages of partial translation /
            code-switching when they differ from ``languages``: offline, full translation may
            come from SIB-200's human translations (all languages) while partial translation
            and code-switching need a MUSE dictionary (none for Swahili; Wang et al. 2022, §4.2, ignore
            languages MUSE lacks; MUSE's Chinese is ``zh-Hant``).
        partial_fraction: share of a single text's words that partial translation replaces.
        source_lang: the language of the examples (the dictionaries' and translators' source).
        seed: the seed of every random choice (with the row id: reading 6 of ``xlt.augment``).
    """

    t_f: int = 1
    t_p: int = 1
    t_c: int = 1
    r_c: float = 0.5
    languages: tuple[str, ...] = ()
    partial_languages: tuple[str, ...] | None = None
    codeswitch_languages: tuple[str, ...] | None = None
    partial_fraction: float = 0.5
    source_lang: str = "en"
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("t_f", "t_p", "t_c"):
            value = getattr(self, name)
            check(isinstance(value, int) and not isinstance(value, bool) and value >= 0, name, value,
                  "an integer >= 0")
        check(isinstance(self.seed, int) and not isinstance(self.seed, bool), "seed", self.seed, "an integer")
        check(isinstance(self.r_c, (int, float)) and 0.0 <= self.r_c <= 1.0, "r_c", self.r_c, "a number in [0, 1]")
        check(isinstance(self.partial_fraction, (int, float)) and 0.0 < self.partial_fraction <= 1.0,
              "partial_fraction", self.partial_fraction, "a number in (0, 1]")
        source = normalize_lang(self.source_lang)
        object.__setattr__(self, "source_lang", source)
        for name in ("languages", "partial_languages", "codeswitch_languages"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _languages(value, source, name))
        for kind, count in (("full", self.t_f), ("partial", self.t_p), ("codeswitch", self.t_c)):
            if count and not self.languages_for(kind):
                raise ValueError(f"{_COUNT_NAME[kind]}={count} asks for {kind} views but no target language is "
                                 f"given; set languages (or {kind}_languages), e.g. languages=('de', 'fr')")

    def languages_for(self, kind: ViewKind) -> tuple[str, ...]:
        """The target languages of views of ``kind`` ("full", "partial" or "codeswitch")."""
        if kind not in VIEW_KINDS:
            raise ValueError(f"unknown view kind {kind!r}; valid: {', '.join(VIEW_KINDS)}")
        override = {"partial": self.partial_languages, "codeswitch": self.codeswitch_languages}.get(kind)
        return self.languages if override is None else override


_COUNT_NAME = {"full": "t_f", "partial": "t_p", "codeswitch": "t_c"}


def _languages(codes: Iterable[str], source: str, name: str) -> tuple[str, ...]:
    if isinstance(codes, str):
        raise ValueError(f"{name}={codes!r} must be a list of language codes, not one string")
    out: list[str] = []
    for code in codes:
        lang = normalize_lang(code)
        if lang == source:
            raise ValueError(f"{name} contains the source language {lang!r}; a cross-lingual view is in another "
                             "language")
        if lang not in out:
            out.append(lang)
    return tuple(out)
