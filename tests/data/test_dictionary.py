from __future__ import annotations

from pathlib import Path

import pytest

from xlt.data.dictionary import BilingualDictionary, read_muse
from xlt.data.errors import DataError


def test_muse_en_de_is_many_to_many(data_dir: Path) -> None:
    d = read_muse(data_dir, "en", "de")
    assert (d.src_lang, d.tgt_lang) == ("en", "de")
    assert d.num_pairs == 101931  # one pair per line, none repeated
    assert len(d) == 74655  # distinct English words
    # one source, several targets, in file order (most frequent first)
    assert d.translations("the") == ("die", "der", "dem", "den", "das")
    # one target, several sources
    sources_of_das = [word for word, target in d.pairs() if target == "das"]
    assert len(sources_of_das) > 1 and "the" in sources_of_das
    # case-insensitive fallback: MUSE is lowercase, sentences are not
    assert d.translations("The") == d.translations("the")
    assert "The" in d and "the" in d and "qwxzv" not in d and 3 not in d
    assert d.translations("qwxzv") == ()


def test_muse_chinese_is_traditional(data_dir: Path) -> None:
    d = read_muse(data_dir, "en", "zh")
    assert d.tgt_lang == "zh-Hant"
    assert d.translations("and")[:3] == ("而且", "和", "還有")
    assert read_muse(data_dir / "muse", "eng", "zho_Hant").tgt_lang == "zh-Hant"


def test_missing_dictionary_lists_available(data_dir: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"en-sw\.txt does not exist.*en-ar, en-de"):
        read_muse(data_dir, "en", "sw")


def test_order_and_duplicates() -> None:
    d = BilingualDictionary([("a", "x"), ("b", "y"), ("a", "z"), ("a", "x")], "en", "deu_Latn")
    assert d.tgt_lang == "de"
    assert d.translations("a") == ("x", "z")
    assert list(d) == ["a", "b"] and len(d) == 2 and d.num_pairs == 3
    assert list(d.pairs()) == [("a", "x"), ("a", "z"), ("b", "y")]
    assert "2 words, 3 pairs" in repr(d)


def test_exact_entry_wins_over_lowercase() -> None:
    d = BilingualDictionary([("us", "uns"), ("US", "USA")], "en", "de")
    assert d.translations("US") == ("USA",)
    assert d.translations("Us") == ("uns",)


def test_file_path_keeps_languages_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "mine.txt"
    path.write_text("cat\tKatze\n\ncat Kater\ndog   Hund\n", encoding="utf-8")
    d = read_muse(path, "en", "zh")  # a file says nothing about script: taken as given
    assert d.tgt_lang == "zh"
    assert d.translations("cat") == ("Katze", "Kater") and d.translations("dog") == ("Hund",)


@pytest.mark.parametrize(
    "content, line, expected",
    [
        (b"cat\tKatze\ndog\n", 2, "found 1 field(s): 'dog'"),
        (b"cat\tKatze\nhot dog\tHotdog\n", 2, "found 3 field(s)"),
        (b"cat\tKatze\ndog\tH\xfcnd\n", 2, "not valid UTF-8"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path: Path, content: bytes, line: int, expected: str) -> None:
    muse = tmp_path / "muse"
    muse.mkdir()
    (muse / "en-de.txt").write_bytes(content)
    with pytest.raises(DataError) as info:
        read_muse(tmp_path, "en", "de")
    assert str(info.value).startswith(f"{muse / 'en-de.txt'}:{line}: ")
    assert expected in str(info.value)
