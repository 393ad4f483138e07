from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xlt.data.errors import DataError
from xlt.data.files import read_parallel
from xlt.data.records import ParallelPair

from .helpers import at


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
