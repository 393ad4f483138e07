"""SIB-200 through its preset (``configs/tasks/sib200.yaml``): sizes, links across languages, the
release's quoting undone, any language form, and malformed files named by file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from presets import task
from xlt.config import ConfigError
from xlt.data.errors import DataError

LANGS = ("en", "ar", "de", "es", "fr", "hi", "ja", "ru", "sw", "zh")
SIB_LABELS = ("science/technology", "travel", "politics", "sports", "health", "entertainment", "geography")
SIB_HEADER = b"index_id\tcategory\ttext\n"
SIZES = {"train": 701, "dev": 99, "test": 204}


@pytest.mark.parametrize("split", list(SIZES))
def test_sizes_and_links_across_languages(data_dir: Path, split: str) -> None:
    sib = task("sib200", data_dir)
    assert sib.langs == LANGS and sib.labels == SIB_LABELS
    english = {ex.source_id: ex for ex in sib.examples(split, "en")}
    for lang in LANGS:
        examples = sib.examples(split, lang)
        assert len(examples) == SIZES[split], lang
        assert {ex.lang for ex in examples} == {lang}
        assert {ex.label for ex in examples} == set(SIB_LABELS)
        assert len({ex.id for ex in examples}) == len(examples)
        # Same index_id = translation of the same sentence, with the same topic.
        assert {ex.source_id for ex in examples} == set(english)
        assert all(ex.label == english[ex.source_id].label and ex.text.strip() for ex in examples)


def test_record_fields(data_dir: Path) -> None:
    first = task("sib200", data_dir).examples("train", "de")[0]  # line 2 of deu_Latn/train.tsv
    assert first.id == "sib200/de/train/431"
    assert first.source_id == "431"
    assert first.label == "geography"
    assert first.text.startswith("Die Türkei ist auf drei Seiten von Meeren umgeben")
    assert first.text_pair is None


@pytest.mark.parametrize("lang", ["de", "deu", "DEU_LATN", "deu_Latn"])
def test_any_language_form(data_dir: Path, lang: str) -> None:
    sib = task("sib200", data_dir, target_langs=(lang,))
    assert sib.target_langs == ("de",) and sib.found["de"] == "deu_Latn"
    assert sib.examples("dev", "de")[0].id.startswith("sib200/de/dev/")


def test_csv_quoting_of_the_release_is_undone(data_dir: Path) -> None:
    sib = task("sib200", data_dir)
    # Raw line: 1239<TAB>entertainment<TAB>"""She\u2019s very cute ... too,"" he said ..."
    english = {ex.source_id: ex.text for ex in sib.examples("train", "en")}
    assert english["1239"].startswith('"She\u2019s very cute and sings quite well, too," he said')
    # Quoted twice in the release: """Allerdings ... """"geltende Rechtsprechung des Landes"""" sei ..."""
    german = {ex.source_id: ex.text for ex in sib.examples("train", "de")}
    assert german["76"].startswith("Allerdings wiederholte er")
    assert '"geltende Rechtsprechung des Landes"' in german["76"]
    # 26 texts were quoted twice (25 German, 1 French): none keeps a doubled quote
    texts = [ex.text for lang in LANGS for split in SIZES for ex in sib.examples(split, lang)]
    assert not [t for t in texts if t.startswith('"') and t.endswith('"') and '""' in t]


def test_a_missing_language_names_those_found(data_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"no data for it under .*languages found: ar, de"):
        task("sib200", data_dir, target_langs=("it",))


@pytest.fixture
def sib_root(tmp_path: Path):
    """``make(train_bytes)`` -> a data root whose ``sib200/deu_Latn/train.tsv`` holds those bytes."""

    def make(train: bytes) -> Path:
        for lang, content in (("eng_Latn", SIB_HEADER + b"1\ttravel\tA trip.\n"), ("deu_Latn", train)):
            (tmp_path / "sib200" / lang).mkdir(parents=True, exist_ok=True)
            (tmp_path / "sib200" / lang / "train.tsv").write_bytes(content)
        return tmp_path

    return make


def test_reads_a_well_formed_synthetic_file(sib_root) -> None:
    root = sib_root(SIB_HEADER + b'1\ttravel\tEine Reise.\n\n2\tsports\t"Er sagte ""ja""."\n')
    examples = task("sib200", root).examples("train", "de")
    assert [(ex.source_id, ex.label, ex.text) for ex in examples] == [
        ("1", "travel", "Eine Reise."),
        ("2", "sports", 'Er sagte "ja".'),
    ]


def test_nested_csv_quoting_is_undone_completely(sib_root) -> None:
    once = '"Er sagte ""ja""."'
    thrice = '"' + ('"' + once.replace('"', '""') + '"').replace('"', '""') + '"'
    root = sib_root(SIB_HEADER + f'1\ttravel\t{thrice}\n2\ttravel\t"Halb" und "halb"\n'.encode())
    assert [ex.text for ex in task("sib200", root).examples("train", "de")] == ['Er sagte "ja".', '"Halb" und "halb"']
    once_only = task("sib200", root, unquote="once").examples("train", "de")[0].text
    assert once_only == '"' + once.replace('"', '""') + '"'  # a task without the quirk unquotes one level


@pytest.mark.parametrize(
    "content, line, expected",
    [
        (b"index_id\tcategory\tsentence\n1\ttravel\tx\n", 1, "missing column 'text'"),
        (SIB_HEADER + b"1\ttravel\tok\n2\ttravel\n", 3, "expected 3 tab-separated fields"),
        (SIB_HEADER + b"1\ttravel\tok\n2\ttravel\ta\tb\n", 3, "found 4"),
        (SIB_HEADER + b"1\ttravel\tok\n2\tweather\tRegen.\n", 3,
         "unknown label 'weather' in column 'category'; valid labels: science/technology, travel"),
        (SIB_HEADER + b"1\ttravel\tok\n2\ttravel\t  \n", 3, "empty text"),
        (SIB_HEADER + b'1\ttravel\tok\n2\ttravel\t""\n', 3, "empty text"),
        (SIB_HEADER + b"1\ttravel\tok\n2\ttravel\tK\xf6ln\n", 3, "not valid UTF-8: byte 0xf6"),
        (SIB_HEADER + b"1\ttravel\tok\n1\ttravel\tzwei\n", 3, "duplicate id 'sib200/de/train/1' (first at line 2)"),
        (b"", 1, "expected a header line"),
    ],
)
def test_malformed_rows_name_file_and_line(sib_root, content: bytes, line: int, expected: str) -> None:
    root = sib_root(content)
    with pytest.raises(DataError) as info:
        task("sib200", root).examples("train", "de")
    message = str(info.value)
    assert message.startswith(f"{root / 'sib200' / 'deu_Latn' / 'train.tsv'}:{line}: ")
    assert expected in message
