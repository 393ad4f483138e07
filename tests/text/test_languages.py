from __future__ import annotations

import pytest

from xlt.text.languages import code_among, normalize_lang


@pytest.mark.parametrize("code, expected", [
    ("de", "de"), ("deu", "de"), ("ger", "de"), ("deu_Latn", "de"), ("DEU_LATN", "de"), ("de-Latn", "de"),
    ("arb", "ar"), ("ara", "ar"), ("arb_Arab", "ar"), ("swh", "sw"), ("swa", "sw"), ("swh_Latn", "sw"),
    ("cmn", "zh"), ("zho", "zh"), ("zho_Hans", "zh"), ("zh-Hans", "zh"),
    ("zho_Hant", "zh-Hant"), ("zh_hant", "zh-Hant"), ("pes", "fa"), ("zsm", "ms"), ("npi", "ne"),
    ("jav", "jv"), ("sun", "su"), ("ace", "ace"), ("bbc", "bbc"), ("nij", "nij"),
    ("uzb_Latn", "uz"), ("sr-Latn", "sr-Latn"), ("pt-BR", "pt-BR"), ("iw", "he"), ("eng_Latn", "en"),
])
def test_every_accepted_form_normalises_to_the_shortest_tag(code: str, expected: str) -> None:
    assert normalize_lang(code) == expected


@pytest.mark.parametrize("code", ["xx", "qqq", "english", "javanese", "", "  ", "de_Latn_x_y_z!"])
def test_unknown_codes_name_the_code_and_the_accepted_forms(code: str) -> None:
    with pytest.raises(ValueError, match="ISO 639-1 .* FLORES-200") as e:
        normalize_lang(code)
    assert repr(code) in str(e.value)


def test_non_strings_are_refused() -> None:
    with pytest.raises(ValueError):
        normalize_lang(None)  # type: ignore[arg-type]


def test_code_among_finds_the_name_on_disk() -> None:
    folders = ["deu_Latn", "zho_Hans", "zho_Hant", "eng_Latn", "labels.txt"]
    assert code_among("de", folders) == "deu_Latn"
    assert code_among("zh", folders) == "zho_Hans"
    assert code_among("zh-Hant", folders) == "zho_Hant"
    with pytest.raises(LookupError, match="no names for language 'fr'"):
        code_among("fr", folders)
    with pytest.raises(ValueError, match="cmn_Hans, zho_Hans"):
        code_among("zh", ["cmn_Hans", "zho_Hans"])
