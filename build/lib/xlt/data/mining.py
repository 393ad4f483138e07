"""Bitext-mining corpora in the BUCC 2018 format: two sides and the gold pairs hidden among them.

Each side is ``<id><TAB><sentence>`` per line (``zh-000000057``, ``en-000008530``); the gold file
lists the parallel pairs as ``<src id><TAB><tgt id>``, the rest of each side being non-parallel
sentences. Where a corpus's files are is configuration (``xlt.tasks.mining``, presets in
``configs/mining/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xlt.data.errors import DataError
from xlt.data.textfile import read_lines
from xlt.text.languages import normalize_lang


@dataclass(frozen=True)
class MiningCorpus:
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


def read_mining(src_path: str | Path, tgt_path: str | Path, gold_path: str | Path, src_lang: str,
                tgt_lang: str) -> MiningCorpus:
    """Read the sides and the gold pairs; malformed lines and gold ids that are not in their side's file
    raise ``DataError`` naming the file and line."""
    src_lang, tgt_lang = normalize_lang(src_lang), normalize_lang(tgt_lang)
    paths = {"src": Path(src_path), "tgt": Path(tgt_path), "gold": Path(gold_path)}
    for path in paths.values():
        if not path.is_file():
            present = ", ".join(sorted(p.name for p in path.parent.iterdir())) if path.parent.is_dir() else "none"
            raise FileNotFoundError(f"{path} does not exist; files present in {path.parent}: {present or 'none'}")
    src_ids, src_sentences = _side(paths["src"])
    tgt_ids, tgt_sentences = _side(paths["tgt"])
    src_row = {sid: i for i, sid in enumerate(src_ids)}
    tgt_row = {tid: i for i, tid in enumerate(tgt_ids)}
    gold = []
    for number, line in enumerate(read_lines(paths["gold"]), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(paths["gold"], number,
                            f"expected <{src_lang} id><TAB><{tgt_lang} id>, found {len(fields)} field(s)")
        for sid, rows, side in ((fields[0].strip(), src_row, paths["src"]), (fields[1].strip(), tgt_row, paths["tgt"])):
            if sid not in rows:
                raise DataError(paths["gold"], number, f"id {sid!r} is not in {side.name}")
        gold.append((src_row[fields[0].strip()], tgt_row[fields[1].strip()]))
    return MiningCorpus(src_lang, tgt_lang, tuple(src_ids), tuple(src_sentences), tuple(tgt_ids), tuple(tgt_sentences),
                        tuple(gold))
