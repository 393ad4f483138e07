"""The bitext-mining reader (BUCC 2018 format): sides and gold on small files, each malformed input
named by file and line; the BUCC preset on the offline data; the evaluation's capped sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from presets import mining
from xlt.data import DataError, read_mining
from xlt.data.sample import sample as draw
from xlt.eval.protocols import bucc_sample
from xlt.tasks import load_mining


def write(root: Path, zh: str, en: str, gold: str) -> tuple[Path, Path, Path]:
    paths = tuple(root / f"zh-en.dev.{suffix}" for suffix in ("zh", "en", "gold"))
    for path, text in zip(paths, (zh, en, gold)):
        path.write_text(text, encoding="utf-8")
    return paths


def test_sides_and_gold_rows(tmp_path):
    paths = write(tmp_path, "zh-1\t你好\nzh-2\t再见\n", "en-1\tbye\nen-2\thello\nen-3\tnoise\n", "zh-1\ten-2\nzh-2\ten-1\n")
    corpus = read_mining(*paths, "zh", "en")
    assert corpus.src == ("你好", "再见") and corpus.tgt_ids == ("en-1", "en-2", "en-3")
    assert corpus.gold == ((0, 1), (1, 0))
    assert read_mining(*paths, "zho_Hans", "eng").src_lang == "zh"  # any code form


def test_the_bucc_preset(data_dir):
    corpus = load_mining(mining("bucc2018"), data_dir)
    assert (corpus.src_lang, corpus.tgt_lang) == ("zh", "en")
    assert (len(corpus.src), len(corpus.tgt), len(corpus.gold)) == (8624, 13589, 257)
    assert corpus.src_ids[0].startswith("zh-") and corpus.tgt_ids[0].startswith("en-")


@pytest.mark.parametrize("zh, en, gold, message", [
    ("zh-1 你好\n", "en-1\thello\n", "", r"zh-en.dev.zh:1: expected <id><TAB><sentence>, found 1"),
    ("zh-1\ta\n", "en-1\thello\ten-2\tbye\n", "", r"zh-en.dev.en:1: expected <id><TAB><sentence>, found 4"),
    ("zh-1\t \n", "en-1\thello\n", "", r"zh-en.dev.zh:1: empty id or sentence"),
    ("zh-1\ta\nzh-1\tb\n", "en-1\thello\n", "", r"zh-en.dev.zh:2: duplicate id 'zh-1' \(first at line 1\)"),
    ("zh-1\ta\n", "en-1\thello\n", "zh-1\ten-9\n", r"zh-en.dev.gold:1: id 'en-9' is not in zh-en.dev.en"),
    ("zh-1\ta\n", "en-1\thello\n", "zh-1\ten-1\nzh-7\ten-1\n", r"zh-en.dev.gold:2: id 'zh-7' is not in zh-en.dev.zh"),
    ("zh-1\ta\n", "en-1\thello\n", "zh-1 en-1\n", r"zh-en.dev.gold:1: expected <zh id><TAB><en id>"),
])
def test_malformed_input_is_named(tmp_path, zh, en, gold, message):
    with pytest.raises(DataError, match=message):
        read_mining(*write(tmp_path, zh, en, gold), "zh", "en")


def test_a_missing_file_lists_what_is_there(tmp_path):
    paths = write(tmp_path, "zh-1\ta\n", "en-1\tb\n", "")
    paths[2].unlink()
    with pytest.raises(FileNotFoundError, match=r"zh-en.dev.gold does not exist; files present .*zh-en.dev.en"):
        read_mining(*paths, "zh", "en")


def test_non_utf8_is_named_by_line(tmp_path):
    paths = write(tmp_path, "zh-1\ta\n", "en-1\tb\n", "")
    paths[1].write_bytes(b"en-1\tb\nen-2\t\xff\n")
    with pytest.raises(DataError, match=r"zh-en.dev.en:2: not valid UTF-8"):
        read_mining(*paths, "zh", "en")


def test_capped_sample_keeps_gold_pairs_and_file_row_halves(tmp_path):
    zh = "".join(f"zh-{i}\tz{i}\n" for i in range(10))
    en = "".join(f"en-{i}\te{i}\n" for i in range(10))
    corpus = read_mining(*write(tmp_path, zh, en, "zh-7\ten-9\nzh-4\ten-5\nzh-1\ten-0\n"), "zh", "en")
    sample = bucc_sample(corpus, max_examples=2)
    # the sentences of 2 gold pairs drawn, and 2 rows of each side drawn (xlt.data.sample)
    kept = draw(corpus.gold, 2, key=lambda pair: f"{pair[0]}-{pair[1]}")
    src_rows = sorted({s for s, _ in kept} | set(draw(range(10), 2, key=str)))
    tgt_rows = sorted({t for _, t in kept} | set(draw(range(10), 2, key=str)))
    assert sample.src == [f"z{i}" for i in src_rows] and sample.tgt == [f"e{j}" for j in tgt_rows]
    assert len(kept) == 2 and len(src_rows) >= 3
    # Halves by the zh row in the file: even rows calibrate, odd rows are held out; gold by position.
    for name, parity in (("calibration", 0), ("held-out", 1), ("all", None)):
        rows, gold = sample.parts[name]
        assert [src_rows[i] for i in rows] == [r for r in src_rows if parity is None or r % 2 == parity]
        expected = {(f"z{s}", f"e{t}") for s, t in corpus.gold if s in [src_rows[i] for i in rows] and t in tgt_rows}
        assert {(sample.src[rows[i]], sample.tgt[j]) for i, j in gold} == expected
    assert bucc_sample(corpus, 0).src == list(corpus.src)
    (tmp_path / "one").mkdir()
    with pytest.raises(ValueError, match=r"the held-out part of BUCC zh-en has no gold pair with max_examples=1"):
        bucc_sample(read_mining(*write(tmp_path / "one", zh, en, "zh-4\ten-5\n"), "zh", "en"), max_examples=1)
