from __future__ import annotations

from pathlib import Path

import pytest

from xlt.data.errors import DataError
from xlt.data.ntrex import ntrex_languages, read_ntrex
from xlt.pretrain.config import BitextSource
from xlt.pretrain.parallel import read_bitext

from .helpers import at


def test_languages(data_dir: Path) -> None:
    assert ntrex_languages(data_dir) == ["ar", "de", "es", "fr", "hi", "ja", "ru", "sw", "zh"]


def test_every_language_is_the_english_source_line_by_line(data_dir: Path) -> None:
    english = (data_dir / "ntrex128" / "newstest2019-src.eng.txt").read_text(encoding="utf-8").splitlines()
    for lang in ntrex_languages(data_dir):
        pairs = read_ntrex(data_dir, lang)
        assert len(pairs) == 1997 and [p.tgt for p in pairs] == english
        assert {(p.src_lang, p.tgt_lang) for p in pairs} == {(lang, "en")}
    german = read_ntrex(data_dir, "deu")
    assert german[0].id == "ntrex/deu/0" and german[-1].id == "ntrex/deu/1996"
    assert german[0].src.startswith("Mitglieder der Nationalversammlung für Wales")


def test_a_region_on_disk_is_found_and_left_out_of_the_pairs(data_dir: Path) -> None:
    # the Chinese file is newstest2019-ref.zho-CN.txt
    chinese = read_ntrex(data_dir, "zh")
    assert chinese[0].id == "ntrex/zho-CN/0" and chinese[0].src_lang == "zh"
    assert read_ntrex(data_dir, "zho_Hans")[5] == chinese[5]


def test_english_and_missing_language(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="non-English"):
        read_ntrex(data_dir, "en")
    with pytest.raises(FileNotFoundError, match=r"'it'.*languages present: ar, de, es"):
        read_ntrex(data_dir, "it")


def test_a_missing_line_names_both_files(tmp_path: Path) -> None:
    base = tmp_path / "ntrex128"
    base.mkdir()
    (base / "newstest2019-src.eng.txt").write_text("One.\nTwo.\nThree.\n", encoding="utf-8")
    (base / "newstest2019-ref.deu.txt").write_text("Eins.\nDrei.\n", encoding="utf-8")
    with pytest.raises(DataError, match=at(base / "newstest2019-ref.deu.txt") + r"has 2 lines but .*src\.eng\.txt has 3"):
        read_ntrex(tmp_path, "de")
    (base / "newstest2019-ref.deu.txt").write_text("Eins.\n \nDrei.\n", encoding="utf-8")
    with pytest.raises(DataError, match=at(base / "newstest2019-ref.deu.txt", 2) + "empty line"):
        read_ntrex(tmp_path, "de")


def test_a_pretraining_source(data_dir: Path) -> None:
    pairs = read_bitext(BitextSource("ntrex", langs=("de", "ja")), data_dir)
    assert len(pairs) == 2 * 1997 and {p.src_lang for p in pairs} == {"de", "ja"}
    with pytest.raises(Exception, match="the languages to pair with English"):
        BitextSource("ntrex")
