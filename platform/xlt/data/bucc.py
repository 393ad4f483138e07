"""BUCC 2018 bitext mining corpora: ``bucc2018/<src>-<tgt>.<split>.{<src>,<tgt>,gold}``.

Each side is ``<id><TAB><sentence>`` per line (``zh-000000057``, ``en-000008530``); the gold file
lists the parallel pairs hidden among non-parallel sentences as ``<src id><TAB><tgt id>``. Offline,
only the zh-en dev set (with gold) is here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xlt.data.errors import DataError
from xlt.data.paths import dataset_dir
from xlt.data.textfile import read_lines
from xlt.text.languages import normalize_lang


@dataclass(frozen=True)
class BuccCorpus:
    """The two sides (ids and sentences, in file order) and the gold pairs as (src row, tgt row)."""

    src_lang: str
    tgt_lang: str
    src_ids: tuple[str, ...]
    src: tuple[str, ...]
    tgt_ids: tuple[str, ...]
    tgt: tuple[str, ...]
    gold: tuple[tuple[int, int], ...]


def _side(path: Path) -> tuple[list[str], list[str]]:
    ids: list[str] = []
    sentences: list[str] = []
    first: dict[str, int] = {}
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(path, number, f"expected <id><TAB><sentence>, found {len(fields)} tab-separated field(s)")
        sentence_id, sentence = fields[0].strip(), fields[1]
        if not sentence_id or not sentence.strip():
            raise DataError(path, number, "empty id or sentence; expected <id><TAB><sentence>")
        if sentence_id in first:
            raise DataError(path, number, f"duplicate id {sentence_id!r} (first at line {first[sentence_id]})")
        first[sentence_id] = number
        ids.append(sentence_id)
        sentences.append(sentence)
    return ids, sentences


def read_bucc(root: str | Path, src_lang: str = "zh", tgt_lang: str = "en", split: str = "dev") -> BuccCorpus:
    """Read ``<root>/bucc2018/<src>-<tgt>.<split>.*``; malformed lines and gold ids that are not in
    their side's file raise ``DataError`` naming the file and line."""
    base = dataset_dir(root, "bucc2018")
    src, tgt = normalize_lang(src_lang), normalize_lang(tgt_lang)
    stem = base / f"{src}-{tgt}.{split}"
    paths = {name: Path(f"{stem}.{name}") for name in (src, tgt, "gold")}
    for path in paths.values():
        if not path.is_file():
            present = ", ".join(sorted(p.name for p in base.iterdir())) or "none"
            raise FileNotFoundError(f"{path} does not exist; files present in {base}: {present}")
    src_ids, src_sentences = _side(paths[src])
    tgt_ids, tgt_sentences = _side(paths[tgt])
    src_row = {sid: i for i, sid in enumerate(src_ids)}
    tgt_row = {tid: i for i, tid in enumerate(tgt_ids)}
    gold = []
    for number, line in enumerate(read_lines(paths["gold"]), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(paths["gold"], number, f"expected <{src} id><TAB><{tgt} id>, found {len(fields)} field(s)")
        for sid, rows, side in ((fields[0].strip(), src_row, paths[src]), (fields[1].strip(), tgt_row, paths[tgt])):
            if sid not in rows:
                raise DataError(paths["gold"], number, f"id {sid!r} is not in {side.name}")
        gold.append((src_row[fields[0].strip()], tgt_row[fields[1].strip()]))
    return BuccCorpus(src, tgt, tuple(src_ids), tuple(src_sentences), tuple(tgt_ids), tuple(tgt_sentences), tuple(gold))
