"""Language codes: the one place where ``de``, ``deu``, ``deu_Latn`` and ``DEU_LATN`` become ``de``.

Datasets name languages differently: SIB-200 uses FLORES-200 codes (``deu_Latn``,
``zho_Hans``), LASER's Tatoeba release uses ISO 639-3 codes that are sometimes the
individual language rather than the macrolanguage (``cmn`` for Chinese, ``swh`` for
Swahili, but ``ara`` for Arabic), MUSE and most model cards use ISO 639-1 (``de``, ``zh``).
Everything inside xlt uses the canonical ISO 639-1 code; readers call ``normalize_lang``
on the way in and ``flores_code`` / ``tatoeba_code`` to find files on the way out.

Chinese is the one language split by script: Simplified is ``zh`` and Traditional is
``zh-Hant``, because MUSE's Chinese dictionaries are in Traditional characters while
SIB-200's ``zho_Hans`` is Simplified; a code-switching augmentation must be able to see
the difference.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    """One row of the table: canonical code, name, the codes datasets use, other aliases."""

    code: str
    name: str
    flores: str
    tatoeba: str
    aliases: tuple[str, ...] = ()


# The 40 XTREME languages plus common European additions. ``tatoeba`` is the code of
# LASER's Tatoeba file names; ``flores`` is the FLORES-200 code SIB-200 names its
# directories by. Where ISO 639-3 distinguishes a macrolanguage (ara, zho, swa, fas, msa,
# est, lav, aze, nep) from the individual language FLORES uses (arb, cmn, swh, pes, zsm,
# ekk, lvs, azj, npi), both are accepted: for these datasets they denote the same text.
# ISO 639-2/B codes (ger, fre, chi, ...) are accepted as aliases too.
LANGUAGES: tuple[Language, ...] = (
    Language("af", "Afrikaans", "afr_Latn", "afr"),
    Language("ar", "Arabic", "arb_Arab", "ara", ("arb",)),
    Language("az", "Azerbaijani", "azj_Latn", "aze", ("azj",)),
    Language("bg", "Bulgarian", "bul_Cyrl", "bul"),
    Language("bn", "Bengali", "ben_Beng", "ben"),
    Language("ca", "Catalan", "cat_Latn", "cat"),
    Language("cs", "Czech", "ces_Latn", "ces", ("cze",)),
    Language("da", "Danish", "dan_Latn", "dan"),
    Language("de", "German", "deu_Latn", "deu", ("ger",)),
    Language("el", "Greek", "ell_Grek", "ell", ("gre",)),
    Language("en", "English", "eng_Latn", "eng"),
    Language("es", "Spanish", "spa_Latn", "spa"),
    Language("et", "Estonian", "est_Latn", "est", ("ekk",)),
    Language("eu", "Basque", "eus_Latn", "eus", ("baq",)),
    Language("fa", "Persian", "pes_Arab", "pes", ("fas", "per")),
    Language("fi", "Finnish", "fin_Latn", "fin"),
    Language("fr", "French", "fra_Latn", "fra", ("fre",)),
    Language("gu", "Gujarati", "guj_Gujr", "guj"),
    Language("he", "Hebrew", "heb_Hebr", "heb", ("iw",)),
    Language("hi", "Hindi", "hin_Deva", "hin"),
    Language("hr", "Croatian", "hrv_Latn", "hrv"),
    Language("hu", "Hungarian", "hun_Latn", "hun"),
    Language("id", "Indonesian", "ind_Latn", "ind"),
    Language("it", "Italian", "ita_Latn", "ita"),
    Language("ja", "Japanese", "jpn_Jpan", "jpn"),
    Language("jv", "Javanese", "jav_Latn", "jav"),
    Language("ka", "Georgian", "kat_Geor", "kat", ("geo",)),
    Language("kk", "Kazakh", "kaz_Cyrl", "kaz"),
    Language("ko", "Korean", "kor_Hang", "kor"),
    Language("lt", "Lithuanian", "lit_Latn", "lit"),
    Language("lv", "Latvian", "lvs_Latn", "lvs", ("lav",)),
    Language("ml", "Malayalam", "mal_Mlym", "mal"),
    Language("mr", "Marathi", "mar_Deva", "mar"),
    Language("ms", "Malay", "zsm_Latn", "zsm", ("msa", "may")),
    Language("my", "Burmese", "mya_Mymr", "mya", ("bur",)),
    Language("ne", "Nepali", "npi_Deva", "npi", ("nep",)),
    Language("nl", "Dutch", "nld_Latn", "nld", ("dut",)),
    Language("pa", "Punjabi", "pan_Guru", "pan"),
    Language("pl", "Polish", "pol_Latn", "pol"),
    Language("pt", "Portuguese", "por_Latn", "por"),
    Language("ro", "Romanian", "ron_Latn", "ron", ("rum",)),
    Language("ru", "Russian", "rus_Cyrl", "rus"),
    Language("sk", "Slovak", "slk_Latn", "slk", ("slo",)),
    Language("sl", "Slovenian", "slv_Latn", "slv"),
    Language("sr", "Serbian", "srp_Cyrl", "srp"),
    Language("sv", "Swedish", "swe_Latn", "swe"),
    Language("sw", "Swahili", "swh_Latn", "swh", ("swa",)),
    Language("ta", "Tamil", "tam_Taml", "tam"),
    Language("te", "Telugu", "tel_Telu", "tel"),
    Language("th", "Thai", "tha_Thai", "tha"),
    Language("tl", "Tagalog", "tgl_Latn", "tgl"),
    Language("tr", "Turkish", "tur_Latn", "tur"),
    Language("uk", "Ukrainian", "ukr_Cyrl", "ukr"),
    Language("ur", "Urdu", "urd_Arab", "urd"),
    Language("vi", "Vietnamese", "vie_Latn", "vie"),
    Language("yo", "Yoruba", "yor_Latn", "yor"),
    # Tatoeba's ``cmn`` file mixes both scripts; it is read as ``zh``.
    Language("zh", "Chinese (Simplified)", "zho_Hans", "cmn", ("zho", "chi", "zh-Hans")),
    Language("zh-Hant", "Chinese (Traditional)", "zho_Hant", "cmn"),
)

_BY_CODE: dict[str, Language] = {lang.code: lang for lang in LANGUAGES}


def _key(code: str) -> str:
    # Case and the separator carry no information (``DEU_LATN``, ``zh-hant``, ``zh_Hant``).
    return code.strip().lower().replace("-", "_")


def _build_aliases() -> dict[str, str]:
    aliases: dict[str, str] = {}
    for lang in LANGUAGES:
        names = [lang.code, lang.flores, *lang.aliases]
        # ``cmn`` is Tatoeba's code for both Chinese rows; it means the default script.
        if lang.code != "zh-Hant":
            names.append(lang.tatoeba)
        for name in names:
            key = _key(name)
            assert aliases.get(key, lang.code) == lang.code, f"{name} names two languages"
            aliases[key] = lang.code
    return aliases


_ALIASES = _build_aliases()


def normalize_lang(code: str) -> str:
    """Any accepted language code -> canonical ISO 639-1 code.

    Accepts ISO 639-1 (``de``), ISO 639-3 and 639-2/B (``deu``, ``ger``, ``cmn``, ``ara``,
    ``swh``) and FLORES-200 / NLLB codes (``deu_Latn``, ``zho_Hans``), case-insensitively,
    with ``-`` or ``_`` as separator. ``zho_Hant`` gives ``zh-Hant``; every other Chinese
    code gives ``zh``. Raises ``ValueError`` naming the code for anything else.
    """
    if isinstance(code, str):
        canonical = _ALIASES.get(_key(code))
        if canonical is not None:
            return canonical
    known = ", ".join(lang.code for lang in LANGUAGES)
    raise ValueError(
        f"unknown language code {code!r}: pass an ISO 639-1 code (e.g. 'de'), an ISO 639-3 "
        f"code (e.g. 'deu') or a FLORES-200 code (e.g. 'deu_Latn'); known languages: {known}. "
        "To use another language, add a row to LANGUAGES in xlt/data/languages.py."
    )


def language(code: str) -> Language:
    """The table row for any accepted code (see ``normalize_lang``)."""
    return _BY_CODE[normalize_lang(code)]


def flores_code(lang: str) -> str:
    """Any accepted code -> FLORES-200 code, as SIB-200 names its directories (``de`` -> ``deu_Latn``)."""
    return language(lang).flores


def tatoeba_code(lang: str) -> str:
    """Any accepted code -> the ISO 639-3 code of LASER's Tatoeba files (``zh`` -> ``cmn``)."""
    return language(lang).tatoeba
