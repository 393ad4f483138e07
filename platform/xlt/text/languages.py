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
- a script is dropped when it is the language's likely one (``deu_Latn`` -> ``de``,
  ``zho_Hans`` -> ``zh``: Simplified is the likely script of Chinese) and kept otherwise
  (``zho_Hant`` -> ``zh-Hant``, ``sr-Latn``); this keeps MUSE's Traditional Chinese dictionaries
  apart from SIB-200's Simplified text;
- a region is kept (``pt-BR``): it may name a variety a dataset distinguishes.

Dataset folders named by language names (NusaX's ``javanese``) are mapped to codes in the task
config (``languages:``), not guessed here.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import langcodes

ACCEPTED = ("ISO 639-1 (de), ISO 639-3 (deu), BCP-47 (zh-Hant, pt-BR) or FLORES-200 (deu_Latn); a dataset "
            "folder named by a language name (javanese) is mapped to a code in the task config (task.languages)")


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
    if lang.language is None or private or not lang.is_valid():
        raise ValueError(f"unknown language code {code!r}: expected {ACCEPTED}")
    likely = langcodes.Language.make(language=lang.language, territory=lang.territory).maximize().script
    script = None if lang.script == likely else lang.script
    return langcodes.Language.make(language=lang.language, script=script, territory=lang.territory).to_tag()



def code_among(lang: str, names: Iterable[str], what: str = "names") -> str:
    """The one name of ``names`` (directory names, file codes, a tokenizer's language tokens) that
    normalises to ``lang``: data is found by normalising what is on disk, never by a reverse table.

    Raises ``LookupError`` when none does, and ``ValueError`` when several do (Arabic varieties
    ``arb_Arab`` / ``ars_Arab`` all fold into ``ar``): then name the one you mean instead.
    """
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
                         "mean instead of the macrolanguage")
    return matches[0]
