from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xlt.data.errors import DataError
from xlt.data.files import read_examples, read_parallel
from xlt.data.records import Example, ParallelPair

from .helpers import at

ROWS = [
    {"id": "r1", "text": "Das Spiel endete 2:1.", "label": "sports", "lang": "deu_Latn"},
    {"id": "r2", "text": 'Er sagte: "Wir fahren, morgen."', "label": "travel", "lang": "de"},
    {"id": "r3", "text": "Le vote a eu lieu.", "label": "politics", "lang": "fra"},
]
EXPECTED = [
    Example(id="r1", text="Das Spiel endete 2:1.", lang="de", label="sports"),
    Example(id="r2", text='Er sagte: "Wir fahren, morgen."', lang="de", label="travel"),
    Example(id="r3", text="Le vote a eu lieu.", lang="fr", label="politics"),
]
LABELS = ["sports", "travel", "politics"]


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write rows in the format the suffix names, as common tools would."""
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    elif path.suffix == ".csv":
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    elif path.suffix == ".tsv":
        lines = ["\t".join(rows[0])] + ["\t".join(str(v) for v in r.values()) for r in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    return path


FORMATS = ["jsonl", "csv", "tsv", "parquet"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_reads_the_same_examples(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path / f"data.{fmt}", ROWS)
    assert read_examples(path, labels=LABELS) == EXPECTED


@pytest.mark.parametrize("fmt", FORMATS)
def test_fixed_language_generated_ids_and_extra_fields(tmp_path: Path, fmt: str) -> None:
    rows = [
        {"sentence": "Hallo", "hypothesis": "Hi", "y": "a", "orig": "s1"},
        {"sentence": "Tschüss", "hypothesis": "Bye", "y": "b", "orig": "s2"},
    ]
    path = write(tmp_path / f"pairs.{fmt}", rows)
    examples = read_examples(
        path, text_field="sentence", text_pair_field="hypothesis", label_field="y", source_id_field="orig", lang="deu"
    )
    assert examples == [
        Example(id="pairs/0", text="Hallo", lang="de", label="a", text_pair="Hi", source_id="s1"),
        Example(id="pairs/1", text="Tschüss", lang="de", label="b", text_pair="Bye", source_id="s2"),
    ]


def test_unlabeled_and_integer_labels(tmp_path: Path) -> None:
    path = write(tmp_path / "u.jsonl", [{"text": "eins", "label": 0}, {"text": "zwei", "label": 1}])
    assert [ex.label for ex in read_examples(path, lang="de")] == ["0", "1"]
    assert [ex.label for ex in read_examples(path, lang="de", label_field=None)] == [None, None]
    with pytest.raises(DataError, match="unknown label '1'"):
        read_examples(path, lang="de", labels=["0"])


def test_csv_multiline_field_keeps_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text('text,label,lang\n"zwei\nZeilen",sports,de\n,sports,de\n', encoding="utf-8")
    with pytest.raises(DataError, match=at(path, 4) + "empty text in column 'text'"):
        read_examples(path)
    # An error in a record that spans lines 2-3 is reported at its first line.
    path.write_text('text,label,lang\n"zwei\nZeilen",weather,de\n', encoding="utf-8")
    with pytest.raises(DataError, match=at(path, 2) + "unknown label 'weather'"):
        read_examples(path, labels=LABELS)
    assert read_examples(path)[0].text == "zwei\nZeilen"


def test_blank_jsonl_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    path.write_text('{"text": "a", "label": "x", "lang": "de"}\n\n{"text": "", "label": "x", "lang": "de"}\n')
    with pytest.raises(DataError, match=at(path, 3) + "empty text"):
        read_examples(path)


@pytest.mark.parametrize("fmt, line", [("jsonl", 1), ("csv", 1), ("tsv", 1), ("parquet", None)])
def test_missing_column_names_column_and_columns_present(tmp_path: Path, fmt: str, line: int | None) -> None:
    path = write(tmp_path / f"d.{fmt}", [{"sentence": "x", "label": "sports", "lang": "de"}])
    with pytest.raises(DataError) as info:
        read_examples(path)
    prefix = f"{path}:{line}: " if line else f"{path}: "
    assert str(info.value).startswith(prefix)
    assert "missing column 'text'; columns present: 'sentence', 'label', 'lang'" in str(info.value)


def test_missing_language_column_suggests_lang(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", [{"text": "x", "label": "sports"}])
    with pytest.raises(DataError, match="missing column 'lang'"):
        read_examples(path)
    assert read_examples(path, lang="de")[0].lang == "de"


OK_JSON = b'{"text":"ok","label":"sports","lang":"de"}\n'
CSV = b"text,label,lang\nok,sports,de\n"
TSV = b"text\tlabel\tlang\nok\tsports\tde\n"
# Each case: format, the file's bytes, the line the error must name, text the message must contain.
MALFORMED = {
    "unknown label": (
        "csv",
        CSV + b"Regen,weather,de\n",
        3,
        "unknown label 'weather' in column 'label'; valid labels: sports, travel, politics",
    ),
    "empty text jsonl": ("jsonl", OK_JSON + b'{"text":"  ","label":"sports","lang":"de"}\n', 2, "empty text in column"),
    "empty text tsv": ("tsv", TSV + b"\tsports\tde\n", 3, "empty text"),
    "invalid utf-8 jsonl": ("jsonl", OK_JSON + b'{"text":"K\xf6ln","label":"sports","lang":"de"}\n', 2, "byte 0xf6"),
    "invalid utf-8 csv": ("csv", CSV + b"ok,sports,de\nK\xf6ln,sports,de\n", 4, "not valid UTF-8"),
    "invalid utf-8 tsv": ("tsv", TSV + b"\xff\tsports\tde\n", 3, "not valid UTF-8: byte 0xff"),
    "bad json": ("jsonl", OK_JSON + b'{"text": "a", "label": }\n', 2, "not valid JSON"),
    "json not an object": ("jsonl", b'["ok", "sports", "de"]\n', 1, "expected a JSON object per line, got a JSON list"),
    "missing key in a jsonl row": ("jsonl", OK_JSON + b'{"text":"ok","lang":"de"}\n', 2, "missing column 'label'"),
    "text not a string": ("jsonl", b'{"text":5,"label":"sports","lang":"de"}\n', 1, "expected a string in column"),
    "null label": ("jsonl", b'{"text":"ok","label":null,"lang":"de"}\n', 1, "pass label_field=None"),
    "bad language": ("csv", CSV + b"ok,sports,xx\n", 3, "unknown language code 'xx'"),
    "duplicate id": (
        "csv",
        b"id,text,label,lang\na,ok,sports,de\na,ok,sports,de\n",
        3,
        "duplicate id 'a' (first at line 2)",
    ),
    "csv field count": ("csv", CSV + b"ok,sports\n", 3, "expected 3 comma-separated fields"),
    "csv bad quoting": ("csv", CSV + b'"ok"x,sports,de\n', 3, "malformed CSV"),
    "tsv field count": ("tsv", TSV + b"ok\tsports\n", 3, "expected 3 tab-separated fields"),
    "header only": ("csv", b"text,label,lang\n", None, "no records found"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_names_file_and_line(tmp_path: Path, case: str) -> None:
    fmt, content, line, expected = MALFORMED[case]
    path = tmp_path / f"bad.{fmt}"
    path.write_bytes(content)
    with pytest.raises(DataError) as info:
        read_examples(path, labels=LABELS)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: " if line else f"{path}: "), message
    assert expected in message, message


def test_parquet_errors_name_the_row(tmp_path: Path) -> None:
    rows = [{"text": "ok", "label": "sports", "lang": "de"}, {"text": "", "label": "sports", "lang": "de"}]
    path = write(tmp_path / "p.parquet", rows)
    with pytest.raises(DataError, match=at(path) + "row 1: empty text"):
        read_examples(path)
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match="not a readable Parquet file"):
        read_examples(tmp_path / "broken.parquet")


def test_unknown_suffix_lists_valid(tmp_path: Path) -> None:
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match=r"unsupported file type '\.xlsx'; valid: \.jsonl, \.csv, \.tsv"):
        read_examples(path)


@pytest.mark.parametrize("fmt", ["jsonl", "tsv", "csv", "parquet"])
def test_read_parallel(tmp_path: Path, fmt: str) -> None:
    rows = [{"src": "Hallo Welt", "tgt": "Hello world"}, {"src": "Danke", "tgt": "Thanks"}]
    path = write(tmp_path / f"bitext.{fmt}", rows)
    assert read_parallel(path, src_lang="deu_Latn", tgt_lang="en") == [
        ParallelPair(id="bitext/0", src="Hallo Welt", tgt="Hello world", src_lang="de", tgt_lang="en"),
        ParallelPair(id="bitext/1", src="Danke", tgt="Thanks", src_lang="de", tgt_lang="en"),
    ]


def test_read_parallel_per_row_languages_and_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path / "mixed.jsonl",
        [
            {"id": "p1", "de": "Hallo", "en": "Hello", "sl": "de", "tl": "en"},
            {"id": "p2", "de": "Bonjour", "en": "Hello", "sl": "fra", "tl": "eng"},
        ],
    )
    pairs = read_parallel(path, src_field="de", tgt_field="en", src_lang_field="sl", tgt_lang_field="tl")
    assert [(p.id, p.src_lang, p.tgt_lang) for p in pairs] == [("p1", "de", "en"), ("p2", "fr", "en")]
    with pytest.raises(DataError, match=at(path, 1) + "missing column 'src_lang'"):
        read_parallel(path, src_field="de", tgt_field="en")
    tsv = tmp_path / "bad.tsv"
    tsv.write_bytes(b"src\ttgt\nHallo\tHello\nDanke\t\n")
    with pytest.raises(DataError, match=at(tsv, 3) + "empty text in column 'tgt'"):
        read_parallel(tsv, src_lang="de", tgt_lang="en")
    with pytest.raises(DataError, match=at(tsv, 1) + "missing column 'source'"):
        read_parallel(tsv, src_field="source", src_lang="de", tgt_lang="en")
