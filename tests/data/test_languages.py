from __future__ import annotations

import pytest

from xlt.data.languages import LANGUAGES, flores_code, normalize_lang, tatoeba_code

# The 40 XTREME languages (Hu et al., 2020).
XTREME = [
    *("af", "ar", "bg", "bn", "de", "el", "en", "es", "et", "eu", "fa", "fi", "fr", "he", "hi", "hu", "id", "it"),
    *("ja", "jv", "ka", "kk", "ko", "ml", "mr", "ms", "my", "nl", "pt", "ru", "sw", "ta", "te", "th", "tl", "tr"),
    *("ur", "vi", "yo", "zh"),
]


@pytest.mark.parametrize(
    "code, expected",
    [
        ("de", "de"),
        ("deu", "de"),
        ("ger", "de"),
        ("deu_Latn", "de"),
        ("DEU_LATN", "de"),
        ("Deu-Latn", "de"),
        (" de ", "de"),
        ("DE", "de"),
        ("en", "en"),
        ("eng_Latn", "en"),
        ("fr", "fr"),
        ("fra", "fr"),
        ("fra_Latn", "fr"),
        ("spa_Latn", "es"),
        ("rus_Cyrl", "ru"),
        ("hin_Deva", "hi"),
        ("jpn_Jpan", "ja"),
        ("jpn", "ja"),
        ("zh", "zh"),
        ("zho", "zh"),
        ("cmn", "zh"),
        ("zho_Hans", "zh"),
        ("zh-Hans", "zh"),
        ("zho_Hant", "zh-Hant"),
        ("ZHO_HANT", "zh-Hant"),
        ("zh-Hant", "zh-Hant"),
        ("zh_hant", "zh-Hant"),
        ("ar", "ar"),
        ("ara", "ar"),
        ("arb", "ar"),
        ("arb_Arab", "ar"),
        ("sw", "sw"),
        ("swh", "sw"),
        ("swa", "sw"),
        ("swh_Latn", "sw"),
        ("pes_Arab", "fa"),
        ("fas", "fa"),
        ("zsm_Latn", "ms"),
        ("lvs", "lv"),
    ],
)
def test_normalize_lang(code: str, expected: str) -> None:
    assert normalize_lang(code) == expected


@pytest.mark.parametrize(
    "lang, flores, tatoeba",
    [
        ("de", "deu_Latn", "deu"),
        ("en", "eng_Latn", "eng"),
        ("fr", "fra_Latn", "fra"),
        ("es", "spa_Latn", "spa"),
        ("ru", "rus_Cyrl", "rus"),
        ("hi", "hin_Deva", "hin"),
        ("ja", "jpn_Jpan", "jpn"),
        ("zh", "zho_Hans", "cmn"),
        ("zh-Hant", "zho_Hant", "cmn"),
        ("ar", "arb_Arab", "ara"),
        ("sw", "swh_Latn", "swh"),
        ("deu_Latn", "deu_Latn", "deu"),  # any accepted form works as input
        ("cmn", "zho_Hans", "cmn"),
    ],
)
def test_dataset_codes(lang: str, flores: str, tatoeba: str) -> None:
    assert flores_code(lang) == flores
    assert tatoeba_code(lang) == tatoeba


def test_table_round_trips() -> None:
    for row in LANGUAGES:
        assert normalize_lang(row.code) == row.code
        assert normalize_lang(row.flores) == row.code
        assert normalize_lang(row.flores.upper()) == row.code
        assert flores_code(row.code) == row.flores
        assert tatoeba_code(row.code) == row.tatoeba
        for alias in row.aliases:
            assert normalize_lang(alias) == row.code
        if row.code != "zh-Hant":  # cmn is Chinese in its default (Simplified) form
            assert normalize_lang(row.tatoeba) == row.code


def test_covers_xtreme() -> None:
    codes = {row.code for row in LANGUAGES}
    assert set(XTREME) <= codes
    assert len(codes) == len(LANGUAGES)  # one row per language


@pytest.mark.parametrize("code", ["xx", "arb_Latn", "deu_Cyrl", "", "german", "de_DE"])
def test_unknown_code_says_what_and_how(code: str) -> None:
    with pytest.raises(ValueError) as info:
        normalize_lang(code)
    message = str(info.value)
    assert repr(code) in message
    assert "'deu_Latn'" in message and "'de'" in message  # examples of valid forms
    assert "languages.py" in message  # how to add one


def test_non_string_is_rejected() -> None:
    with pytest.raises(ValueError, match="None"):
        normalize_lang(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        flores_code("klingon")
