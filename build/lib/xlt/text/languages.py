"""Language tags: the one place where ``de``, ``deu``, ``ger``, ``deu_Latn`` and ``DEU-LATN`` become ``de``.

Datasets name languages differently: SIB-200 by FLORES-200 codes (``deu_Latn``, ``zho_Hans``),
LASER's Tatoeba by ISO 639-3 codes, sometimes of the individual language rather than the
macrolanguage (``cmn``, ``swh``, ``arb``), MUSE and most model cards by ISO 639-1 (``de``).
Inside xlt every language is its shortest standard BCP-47 tag, as ``langcodes`` (the IANA
registry and CLDR's likely subtags) computes it:

- ISO 639-3 / 639-2 codes become their ISO 639-1 code where one exists (``deu`` -> ``de``);
  individual languages fold into their macrolanguage (``arb`` -> ``ar``, ``cmn`` -> ``zh``,
  ``swh`` -> ``sw``, ``pes`` -> ``fa``, ``zsm`` -> ``ms``); codes without a 639-1 code stay
  three letters (``ace``, ``bbc``);
- a script is dropped when it is the language's default (``deu_Latn`` -> ``de``, ``uzb_Latn`` ->
  ``uz``) and kept otherwise (``sr-Latn``, ``zho_Hant`` -> ``zh-Hant``). The default is CLDR's
  likely script (Latin for a language CLDR does not know: ``quy_Latn`` -> ``quy``, ``acm_Arab``
  -> ``acm-Arab``), except for xlt's defaults (``XLT_SCRIPTS``): Chinese is Simplified, Korean Hangul;
- a region is kept (``pt-BR``): it may name a variety a dataset distinguishes.

Dataset folders named by language names (NusaX's ``javanese``) are mapped to codes in the task
config (``languages:``), not guessed here.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import langcodes

from ..config import ConfigError

ACCEPTED = ("ISO 639-1 (de), ISO 639-3 (deu), BCP-47 (zh-Hant, pt-BR) or FLORES-200 (deu_Latn); a dataset "
            "folder named by a language name (javanese) is mapped to a code in the task config (task.languages)")

# xlt's default scripts, where the datasets' convention is the rule rather than the registry's.
# Chinese without a script is Simplified, as SIB-200 / FLORES (zho_Hans) write it; MUSE's
# dictionaries are Traditional and stay ``zh-Hant``, so the two are never mixed up.
# Korean without a script is Hangul, as FLORES (kor_Hang) writes it; the registry's default
# ``Kore`` (Hangul and Hanja) would leave ``kor_Hang`` as ``ko-Hang``, apart from ``ko``.
XLT_SCRIPTS = {"zh": "Hans", "ko": "Hang"}

# ISO 639 codes that name no language (multiple, uncoded, none); ``und`` parses as no language.
_NOT_LANGUAGES = {"mis", "mul", "zxx"}


@lru_cache(maxsize=None)
def normalize_lang(code: str) -> str:
    """Any accepted tag -> xlt's canonical tag (see the module docstring); ``ValueError`` naming the
    code and the accepted forms for anything else (cached: readers call it per row)."""
    if not isinstance(code, str) or not code.strip():
        raise ValueError(f"language code {code!r} is not valid: expected {ACCEPTED}")
    try:
        lang = langcodes.Language.get(langcodes.standardize_tag(code.strip().replace("_", "-"), macro=True))
    except (ValueError, langcodes.LanguageTagError) as e:
        raise ValueError(f"unknown language code {code!r} ({e}): expected {ACCEPTED}") from e
    private = lang.language is not None and "qaa" <= lang.language <= "qtz"
    if lang.language is None or private or lang.language in _NOT_LANGUAGES or not lang.is_valid():
        raise ValueError(f"unknown language code {code!r}: expected {ACCEPTED}")
    # Variants, extensions and private use would be dropped below (``not-a-language-zz`` would read as
    # Nomatsiguenga, ``not``): a tag is a language, a script and a region at most.
    if lang.variants or lang.extensions or lang.private:
        raise ValueError(f"unknown language code {code!r}: expected {ACCEPTED}, without variant, extension or "
                         "private-use subtags")
    script = None if lang.script == _default_script(lang.language, lang.territory) else lang.script
    return langcodes.Language.make(language=lang.language, script=script, territory=lang.territory).to_tag()


def _default_script(language: str, territory: str | None) -> str | None:
    """xlt's choice (``XLT_SCRIPTS``), else CLDR's likely script of the language (in ``territory``)."""
    if territory is None and language in XLT_SCRIPTS:
        return XLT_SCRIPTS[language]
    return langcodes.Language.make(language=language, territory=territory).maximize().script


def code_among(lang: str, names: Iterable[str], what: str = "names") -> str:
    """The one name of ``names`` (directory names, file codes, a tokenizer's language tokens) that
    is ``lang`` or normalises to its tag: data is found by normalising what is on disk, never by a
    reverse table.

    Raises ``LookupError`` when none does, and ``ValueError`` when several do (FLORES-200's
    ``aka_Latn`` and ``twi_Latn`` both fold into the macrolanguage ``ak``): then pass the name
    itself (``twi_Latn``), which is matched as written before anything is normalised.
    """
    names = list(names)
    if lang in names:
        return lang
    target = normalize_lang(lang)
    matches = []
    for name in names:
        try:
            if normalize_lang(name) == target:
                matches.append(name)
        except ValueError:
            continue
    if not matches:
        raise LookupError(f"no {what} for language {lang!r} ({target})")
    if len(matches) > 1:
        raise ValueError(f"{len(matches)} {what} normalise to {target!r} ({', '.join(matches)}); pass the one you "
                         "mean as it is written")
    return matches[0]


def normalized_langs(key: str, codes: Iterable[str]) -> tuple[str, ...]:
    """``codes`` through ``normalize_lang``; an unknown code is a ``ConfigError`` naming ``key``."""
    out = []
    for code in codes:
        try:
            out.append(normalize_lang(code))
        except ValueError as e:
            raise ConfigError(f"{key}: {e}") from e
    return tuple(out)
