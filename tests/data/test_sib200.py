from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from xlt.data.errors import DataError
from xlt.data.sib200 import read_sib200, sib200_labels, sib200_languages

from .helpers import SIB_HEADER, SIB_LABELS

LANGS = ["ar", "de", "en", "es", "fr", "hi", "ja", "ru", "sw", "zh"]
SIZES = {"train": 701, "dev": 99, "test": 204}


def test_languages_and_labels(data_dir: Path) -> None:
    assert sib200_languages(data_dir) == LANGS
    assert sib200_labels(data_dir) == SIB_LABELS


@pytest.mark.parametrize("split", list(SIZES))
def test_sizes_and_links_across_languages(data_dir: Path, split: str) -> None:
    by_lang = {lang: read_sib200(data_dir, lang, split) for lang in LANGS}
    english = {ex.source_id: ex for ex in by_lang["en"]}
    for lang, examples in by_lang.items():
        assert len(examples) == SIZES[split], lang
        assert {ex.lang for ex in examples} == {lang}
        assert {ex.label for ex in examples} == set(SIB_LABELS)
        assert len({ex.id for ex in examples}) == len(examples)
        # Same index_id = translation of the same sentence, with the same topic.
        assert {ex.source_id for ex in examples} == set(english)
        for ex in examples:
            assert ex.label == english[ex.source_id].label
            assert ex.text.strip()


def test_record_fields(data_dir: Path) -> None:
    first = read_sib200(data_dir, "de", "train")[0]  # line 2 of deu_Latn/train.tsv
    assert first.id == "sib200/deu_Latn/train/431"
    assert first.source_id == "431"
    assert first.label == "geography"
    assert first.text.startswith("Die Türkei ist auf drei Seiten von Meeren umgeben")
    assert first.text_pair is None


@pytest.mark.parametrize("lang", ["de", "deu", "DEU_LATN", "deu_Latn"])
def test_any_language_form(data_dir: Path, lang: str) -> None:
    assert read_sib200(data_dir, lang, "dev")[0].id.startswith("sib200/deu_Latn/dev/")


def test_csv_quoting_of_the_release_is_undone(data_dir: Path) -> None:
    # Raw line: 1239<TAB>entertainment<TAB>"""She\u2019s very cute ... too,"" he said ..."
    english = {ex.source_id: ex.text for ex in read_sib200(data_dir, "en", "train")}
    assert english["1239"].startswith('"She\u2019s very cute and sings quite well, too," he said')
    # Quoted twice in the release: """Allerdings ... """"geltende Rechtsprechung des Landes"""" sei ..."""
    german = {ex.source_id: ex.text for ex in read_sib200(data_dir, "de", "train")}
    assert german["76"].startswith("Allerdings wiederholte er")
    assert '"geltende Rechtsprechung des Landes"' in german["76"]


def test_bad_split_and_missing_language(data_dir: Path) -> None:
    with pytest.raises(ValueError, match="valid splits: train, dev, test"):
        read_sib200(data_dir, "de", "validation")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match=r"no directories for language 'it'.*languages present: arb_Arab"):
        read_sib200(data_dir, "it", "train")


def test_reads_a_well_formed_synthetic_file(sib_root: Callable[[bytes], Path]) -> None:
    root = sib_root(SIB_HEADER + b'1\ttravel\tEine Reise.\n\n2\tsports\t"Er sagte ""ja""."\n')
    examples = read_sib200(root, "de", "train")
    assert [(ex.source_id, ex.label, ex.text) for ex in examples] == [
        ("1", "travel", "Eine Reise."),
        ("2", "sports", 'Er sagte "ja".'),
    ]


def test_nested_csv_quoting_is_undone_completely(sib_root: Callable[[bytes], Path]) -> None:
    once = '"Er sagte ""ja""."'
    thrice = '"' + ('"' + once.replace('"', '""') + '"').replace('"', '""') + '"'
    root = sib_root(SIB_HEADER + f'1\ttravel\t{thrice}\n2\ttravel\t"Halb" und "halb"\n'.encode())
    assert [ex.text for ex in read_sib200(root, "de", "train")] == ['Er sagte "ja".', '"Halb" und "halb"']


@pytest.mark.parametrize(
    "content, line, expected",
    [
        (b"index_id\tcategory\tsentence\n1\ttravel\tx\n", 1, "missing column(s) text"),
        (SIB_HEADER + b"1\ttravel\tok\n2\ttravel\n", 3, "expected 3 tab-separated fields"),
        (SIB_HEADER + b"1\ttravel\tok\n2\ttravel\ta\tb\n", 3, "found 4"),
        (
            SIB_HEADER + b"1\ttravel\tok\n2\tweather\tRegen.\n",
            3,
            "unknown category 'weather'; valid: science/technology, travel",
        ),
        (SIB_HEADER + b"1\ttravel\tok\n2\ttravel\t  \n", 3, "empty text"),
        (SIB_HEADER + b'1\ttravel\tok\n2\ttravel\t""\n', 3, "empty text"),
        (SIB_HEADER + b"1\ttravel\tok\n2\ttravel\tK\xf6ln\n", 3, "not valid UTF-8: byte 0xf6"),
        (SIB_HEADER + b"1\ttravel\tok\n1\ttravel\tzwei\n", 3, "duplicate index_id 1 (first at line 2)"),
        (SIB_HEADER + b"one\ttravel\tok\n", 2, "expected an integer index_id"),
        (b"", 1, "expected a header line"),
    ],
)
def test_malformed_rows_name_file_and_line(
    sib_root: Callable[[bytes], Path], content: bytes, line: int, expected: str
) -> None:
    root = sib_root(content)
    with pytest.raises(DataError) as info:
        read_sib200(root, "de", "train")
    message = str(info.value)
    assert message.startswith(f"{root / 'sib200' / 'deu_Latn' / 'train.tsv'}:{line}: ")
    assert expected in message


def test_labels_must_agree_across_languages(sib_root: Callable[[bytes], Path]) -> None:
    root = sib_root(SIB_HEADER + b"1\ttravel\tok\n")
    other = root / "sib200" / "eng_Latn"
    other.mkdir()
    (other / "labels.txt").write_text("travel\nsports\n", encoding="utf-8")
    with pytest.raises(DataError, match="labels differ"):
        sib200_labels(root)
