"""``xlt.text.languages``: every accepted spelling -> one tag; unknown codes name themselves and the
accepted forms; data on disk is found by normalising its names."""

from __future__ import annotations

import pytest

from xlt.text.languages import code_among, normalize_lang


@pytest.mark.parametrize("code, expected", [
    # ISO 639-1 / 639-3 / 639-2B, FLORES-200 with script (``_`` or ``-``, any case), BCP-47
    ("de", "de"), ("deu", "de"), ("ger", "de"), ("deu_Latn", "de"), ("DEU_LATN", "de"), ("de-Latn", "de"),
    ("eng_Latn", "en"), ("iw", "he"), ("  fr ", "fr"),
    # individual languages fold into their macrolanguage
    ("arb", "ar"), ("ara", "ar"), ("arb_Arab", "ar"), ("swh", "sw"), ("swa", "sw"), ("swh_Latn", "sw"),
    ("pes", "fa"), ("zsm", "ms"), ("npi", "ne"), ("uzb_Latn", "uz"),
    # ISO 639-3 codes without a 639-1 code stay three letters
    ("ace", "ace"), ("ban", "ban"), ("bjn", "bjn"), ("bug", "bug"), ("mad", "mad"), ("min", "min"),
    ("nij", "nij"), ("bbc", "bbc"), ("jav", "jv"), ("sun", "su"),
    # a non-default script or a region is kept
    ("sr-Latn", "sr-Latn"), ("uzb_Arab", "uz-Arab"), ("ace_Arab", "ace-Arab"), ("pt-BR", "pt-BR"),
    ("pt_br", "pt-BR"), ("en-Latn-US", "en-US"),
    # no likely script in CLDR: Latin is assumed, any other script kept
    ("quy_Latn", "quy"), ("acm_Arab", "acm-Arab"),
])
def test_every_accepted_form_normalises_to_the_shortest_tag(code: str, expected: str) -> None:
    assert normalize_lang(code) == expected


@pytest.mark.parametrize("code, expected", [
    ("cmn", "zh"), ("zho", "zh"), ("zh", "zh"), ("zho_Hans", "zh"), ("zh-Hans", "zh"), ("cmn_Hans", "zh"),
    ("zho_Hant", "zh-Hant"), ("zh-Hant", "zh-Hant"), ("zh_hant", "zh-Hant"), ("cmn_Hant", "zh-Hant"),
    ("zh-TW", "zh-TW"), ("zh-Hant-TW", "zh-TW"),  # Traditional is the likely script in Taiwan
    ("kor_Hang", "ko"), ("ko-Kore", "ko"), ("jpn_Jpan", "ja"),
])
def test_chinese_without_a_script_is_simplified_and_korean_is_hangul(code: str, expected: str) -> None:
    # SIB-200's zho_Hans is plain zh; MUSE's Traditional dictionaries stay zh-Hant, never zh.
    assert normalize_lang(code) == expected


@pytest.mark.parametrize("code", ["xx", "qqq", "qaa", "english", "javanese", "mul", "und", "", "  ",
                                  "de_Latn_x_y_z!", "de__Latn", "not-a-language-zz", "de-x-foo", "en-a-bbb",
                                  "sl-rozaj"])
def test_unknown_codes_name_the_code_and_the_accepted_forms(code: str) -> None:
    with pytest.raises(ValueError, match=r"ISO 639-1 \(de\), ISO 639-3 \(deu\), BCP-47 .*FLORES-200 \(deu_Latn\)") as e:
        normalize_lang(code)
    assert repr(code) in str(e.value) and "task config" in str(e.value)


@pytest.mark.parametrize("code", [None, 3, b"de"])
def test_non_strings_are_refused(code: object) -> None:
    with pytest.raises(ValueError, match="is not valid"):
        normalize_lang(code)  # type: ignore[arg-type]


def test_code_among_finds_the_name_on_disk() -> None:
    folders = ["deu_Latn", "zho_Hans", "zho_Hant", "eng_Latn", "labels.txt"]
    assert code_among("de", folders) == "deu_Latn"
    assert code_among("deu", folders) == "deu_Latn"
    assert code_among("zh", folders) == "zho_Hans"
    assert code_among("cmn", folders) == "zho_Hans"
    assert code_among("zh-Hant", folders) == "zho_Hant"
    with pytest.raises(LookupError, match=r"no names for language 'fr' \(fr\)"):
        code_among("fr", folders)
    with pytest.raises(LookupError, match="no directories for language 'zh-Hant'"):
        code_among("zh-Hant", ["zho_Hans"], "directories")


def test_code_among_two_names_of_one_tag_need_the_name_itself() -> None:
    folders = ["aka_Latn", "twi_Latn"]  # FLORES-200: twi folds into the macrolanguage ak
    with pytest.raises(ValueError, match=r"normalise to 'ak' \(aka_Latn, twi_Latn\)"):
        code_among("ak", folders)
    assert code_among("twi_Latn", folders) == "twi_Latn"
