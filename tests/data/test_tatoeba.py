from __future__ import annotations

from pathlib import Path

import pytest

from xlt.data.errors import DataError
from xlt.data.tatoeba import read_tatoeba, tatoeba_languages

from .helpers import at


def test_languages(data_dir: Path) -> None:
    assert tatoeba_languages(data_dir) == ["ar", "de", "es", "fr", "hi", "ja", "ru", "sw", "zh"]


@pytest.mark.parametrize("lang, size", [("de", 1000), ("deu", 1000), ("swh_Latn", 390), ("sw", 390), ("cmn", 1000)])
def test_sizes(data_dir: Path, lang: str, size: int) -> None:
    assert len(read_tatoeba(data_dir, lang)) == size


def test_pairs_are_aligned_lines(data_dir: Path) -> None:
    pairs = read_tatoeba(data_dir, "de")
    assert pairs[0].src == "Maria sagte, sie wisse nicht, wo Tom sei."
    assert pairs[0].tgt == "Mary said she didn't know where Tom was."
    assert (pairs[0].id, pairs[0].src_lang, pairs[0].tgt_lang) == ("tatoeba/deu-eng/0", "de", "en")
    assert pairs[-1].id == "tatoeba/deu-eng/999"
    swahili = read_tatoeba(data_dir, "sw")
    assert (swahili[2].src, swahili[2].tgt) == ("Hakuna matata.", "There are no problems.")


def test_chinese_file_is_labelled_by_its_content(data_dir: Path) -> None:
    # cmn mixes both scripts, so even a zh-Hant request yields pairs labelled zh.
    assert {p.src_lang for p in read_tatoeba(data_dir, "zh-Hant")} == {"zh"}


def test_english_and_missing_language(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="non-English"):
        read_tatoeba(data_dir, "en")
    with pytest.raises(FileNotFoundError, match=r"no Tatoeba files for language 'it' .*languages present: ar, de"):
        read_tatoeba(data_dir, "it")


def _write(root: Path, src: bytes, eng: bytes) -> tuple[Path, Path]:
    base = root / "tatoeba"
    base.mkdir()
    (base / "tatoeba.deu-eng.deu").write_bytes(src)
    (base / "tatoeba.deu-eng.eng").write_bytes(eng)
    return base / "tatoeba.deu-eng.deu", base / "tatoeba.deu-eng.eng"


def test_mismatched_line_counts_name_both_files(tmp_path: Path) -> None:
    src, eng = _write(tmp_path, b"Hallo.\nTsch\xc3\xbcss.\nDanke.\n", b"Hello.\nBye.\n")
    with pytest.raises(DataError) as info:
        read_tatoeba(tmp_path, "de")
    message = str(info.value)
    assert str(src) in message and str(eng) in message
    assert "has 3 lines" in message and "has 2" in message


@pytest.mark.parametrize("empty_side", ["deu", "eng"])
def test_empty_line_names_file_and_line(tmp_path: Path, empty_side: str) -> None:
    lines = [b"Hallo.\n", b"Danke.\n", b"Gut.\n"]
    broken = [b"Hallo.\n", b"  \n", b"Gut.\n"]
    deu, eng = (b"".join(broken if side == empty_side else lines) for side in ("deu", "eng"))
    src, eng_path = _write(tmp_path, deu, eng)
    with pytest.raises(DataError) as info:
        read_tatoeba(tmp_path, "de")
    assert str(info.value).startswith(f"{src if empty_side == 'deu' else eng_path}:2: empty line")


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    src, _ = _write(tmp_path, b"Hallo.\nK\xf6ln.\n", b"Hello.\nCologne.\n")
    with pytest.raises(DataError, match=at(src, 2) + "not valid UTF-8"):
        read_tatoeba(tmp_path, "de")


def test_line_separators_inside_a_sentence_do_not_split_it(tmp_path: Path) -> None:
    # U+2028 and \x85 would be line breaks for str.splitlines and misalign the pair.
    _write(tmp_path, "Eins\u2028zwei.\nDrei\x85.\n".encode(), b"One two.\r\nThree.\r\n")
    pairs = read_tatoeba(tmp_path, "de")
    assert [(p.src, p.tgt) for p in pairs] == [("Eins\u2028zwei.", "One two."), ("Drei\x85.", "Three.")]
