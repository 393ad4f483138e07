"""Bitext sources (``xlt.tasks.bitext``) through their presets in ``configs/bitext/``: Tatoeba and
NTREX-128 as line-aligned files, SIB-200 as a task's train rows joined on its link; files of pairs
and Hugging Face datasets; malformed files named by file and line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from presets import CONFIGS, bitext, task
from xlt.config import ConfigError, from_dict
from xlt.data.errors import DataError
from xlt.tasks import BitextConfig, bitext_languages, read_bitext

LANGS = ["ar", "de", "es", "fr", "hi", "ja", "ru", "sw", "zh"]


def at(path: str | Path, line: int | None = None) -> str:
    """Regex for the start of a ``DataError`` message: ``^<path>:<line>: `` (or ``^<path>: ``)."""
    return "^" + re.escape(f"{path}:{line}: " if line is not None else f"{path}: ")


def test_tatoeba_languages_are_found_by_normalising_the_names_on_disk(data_dir: Path) -> None:
    found = bitext_languages(bitext("tatoeba"), data_dir)
    assert sorted(found) == LANGS
    assert (found["zh"], found["sw"], found["ar"]) == ("cmn", "swh", "ara")


@pytest.mark.parametrize("lang, size", [("de", 1000), ("deu", 1000), ("swh_Latn", 390), ("sw", 390), ("cmn", 1000)])
def test_tatoeba_sizes(data_dir: Path, lang: str, size: int) -> None:
    assert len(read_bitext(bitext("tatoeba", langs=(lang,)), data_dir)) == size


def test_tatoeba_pairs_are_aligned_lines(data_dir: Path) -> None:
    pairs = read_bitext(bitext("tatoeba", langs=("de",)), data_dir)
    assert pairs[0].src == "Maria sagte, sie wisse nicht, wo Tom sei."
    assert pairs[0].tgt == "Mary said she didn't know where Tom was."
    assert (pairs[0].id, pairs[0].src_lang, pairs[0].tgt_lang) == ("tatoeba/de/0", "de", "en")
    assert pairs[-1].id == "tatoeba/de/999"
    swahili = read_bitext(bitext("tatoeba", langs=("sw",)), data_dir)
    assert (swahili[2].src, swahili[2].tgt) == ("Hakuna matata.", "There are no problems.")
    # cmn mixes both Chinese scripts: its pairs are labelled zh
    assert {p.src_lang for p in read_bitext(bitext("tatoeba", langs=("zh",)), data_dir)} == {"zh"}
    # no languages = every one found, in code order
    every = read_bitext(bitext("tatoeba"), data_dir)
    assert len(every) == 8 * 1000 + 390 and every[0].id == "tatoeba/ar/0"


def test_english_and_a_missing_language(data_dir: Path) -> None:
    with pytest.raises(ConfigError, match="tgt_lang='en' is not valid: expected the language of tgt_path, paired"):
        bitext("tatoeba", langs=("en",))
    with pytest.raises(FileNotFoundError, match=r"bitext 'tatoeba': no data for it .*languages found: ar, de"):
        read_bitext(bitext("tatoeba", langs=("it",)), data_dir)


def _tatoeba(root: Path, src: bytes, eng: bytes) -> tuple[Path, Path]:
    base = root / "tatoeba"
    base.mkdir()
    (base / "tatoeba.deu-eng.deu").write_bytes(src)
    (base / "tatoeba.deu-eng.eng").write_bytes(eng)
    return base / "tatoeba.deu-eng.deu", base / "tatoeba.deu-eng.eng"


def test_mismatched_line_counts_name_both_files(tmp_path: Path) -> None:
    src, eng = _tatoeba(tmp_path, b"Hallo.\nTsch\xc3\xbcss.\nDanke.\n", b"Hello.\nBye.\n")
    with pytest.raises(DataError) as info:
        read_bitext(bitext("tatoeba", langs=("de",)), tmp_path)
    message = str(info.value)
    assert str(src) in message and str(eng) in message
    assert "has 3 lines" in message and "has 2" in message


@pytest.mark.parametrize("empty_side", ["deu", "eng"])
def test_empty_line_names_file_and_line(tmp_path: Path, empty_side: str) -> None:
    lines = [b"Hallo.\n", b"Danke.\n", b"Gut.\n"]
    broken = [b"Hallo.\n", b"  \n", b"Gut.\n"]
    deu, eng = (b"".join(broken if side == empty_side else lines) for side in ("deu", "eng"))
    src, eng_path = _tatoeba(tmp_path, deu, eng)
    with pytest.raises(DataError) as info:
        read_bitext(bitext("tatoeba", langs=("de",)), tmp_path)
    assert str(info.value).startswith(f"{src if empty_side == 'deu' else eng_path}:2: empty line")


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    src, _ = _tatoeba(tmp_path, b"Hallo.\nK\xf6ln.\n", b"Hello.\nCologne.\n")
    with pytest.raises(DataError, match=at(src, 2) + "not valid UTF-8"):
        read_bitext(bitext("tatoeba", langs=("de",)), tmp_path)


def test_line_separators_inside_a_sentence_do_not_split_it(tmp_path: Path) -> None:
    # U+2028 and \x85 would be line breaks for str.splitlines and misalign the pair.
    _tatoeba(tmp_path, "Eins\u2028zwei.\nDrei\x85.\n".encode(), b"One two.\r\nThree.\r\n")
    pairs = read_bitext(bitext("tatoeba", langs=("de",)), tmp_path)
    assert [(p.src, p.tgt) for p in pairs] == [("Eins\u2028zwei.", "One two."), ("Drei\x85.", "Three.")]


def test_ntrex_every_language_is_the_english_source_line_by_line(data_dir: Path) -> None:
    assert sorted(bitext_languages(bitext("ntrex"), data_dir)) == LANGS
    english = (data_dir / "ntrex128" / "newstest2019-src.eng.txt").read_text(encoding="utf-8").splitlines()
    for lang in LANGS:
        pairs = read_bitext(bitext("ntrex", langs=(lang,)), data_dir)
        assert len(pairs) == 1997 and [p.tgt for p in pairs] == english
        assert {(p.src_lang, p.tgt_lang) for p in pairs} == {(lang, "en")}
    german = read_bitext(bitext("ntrex", langs=("deu",)), data_dir)
    assert german[0].id == "ntrex/de/0" and german[-1].id == "ntrex/de/1996"
    assert german[0].src.startswith("Mitglieder der Nationalversammlung für Wales")
    pairs = read_bitext(bitext("ntrex", langs=("de", "ja")), data_dir)
    assert len(pairs) == 2 * 1997 and [p.src_lang for p in pairs[1996:1998]] == ["de", "ja"]


def test_ntrex_region_on_disk_is_mapped_by_the_preset(data_dir: Path) -> None:
    # the Chinese file is newstest2019-ref.zho-CN.txt: the preset maps zh to it
    chinese = read_bitext(bitext("ntrex", langs=("zh",)), data_dir)
    assert chinese[0].id == "ntrex/zh/0" and chinese[0].src_lang == "zh"
    assert read_bitext(bitext("ntrex", langs=("zho_Hans",)), data_dir)[5] == chinese[5]
    assert "zh" not in bitext_languages(bitext("ntrex", languages={}), data_dir)  # zho-CN alone is zh-CN


def test_ntrex_a_missing_line_names_both_files(tmp_path: Path) -> None:
    base = tmp_path / "ntrex128"
    base.mkdir()
    (base / "newstest2019-src.eng.txt").write_text("One.\nTwo.\nThree.\n", encoding="utf-8")
    (base / "newstest2019-ref.deu.txt").write_text("Eins.\nDrei.\n", encoding="utf-8")
    with pytest.raises(DataError, match=at(base / "newstest2019-ref.deu.txt") + r"has 2 lines but .*src\.eng\.txt has 3"):
        read_bitext(bitext("ntrex", langs=("de",)), tmp_path)
    (base / "newstest2019-ref.deu.txt").write_text("Eins.\n \nDrei.\n", encoding="utf-8")
    with pytest.raises(DataError, match=at(base / "newstest2019-ref.deu.txt", 2) + "empty line"):
        read_bitext(bitext("ntrex", langs=("de",)), tmp_path)


def test_sib200_train_rows_joined_on_index_id_never_dev_or_test(data_dir: Path) -> None:
    pairs = read_bitext(bitext("sib200", langs=("de",)), data_dir)
    sib = task("sib200", data_dir)
    en = {ex.source_id: ex.text for ex in sib.examples("train", "en")}
    de = {ex.source_id: ex.text for ex in sib.examples("train", "de")}
    assert len(pairs) == len(en) == 701
    assert pairs[0].id == "sib200/en-de/train/431"
    for p in pairs:
        index_id = p.id.rsplit("/", 1)[1]
        assert "/train/" in p.id and (p.src, p.tgt) == (en[index_id], de[index_id])
        assert (p.src_lang, p.tgt_lang) == ("en", "de")
    evaluation = {ex.text for split in ("dev", "test") for lang in ("en", "de") for ex in sib.examples(split, lang)}
    assert not evaluation & {t for p in pairs for t in (p.src, p.tgt)}
    with pytest.raises(ConfigError, match="train split only, never dev or test"):
        bitext("sib200", split="test")
    fr = read_bitext(bitext("sib200", langs=("fr",)), data_dir, pivot="de")  # any pivot
    assert fr[0].id == "sib200/de-fr/train/431" and (fr[0].src, fr[0].src_lang) == (de["431"], "de")


def test_files_and_hf_sources(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps({"en": f"cat {i}", "de": f"Katze {i}"}) for i in range(3)), encoding="utf-8")
    source = from_dict(BitextConfig, {"type": "files", "path": "{data_dir}/pairs.jsonl", "src_field": "en",
                                      "tgt_field": "de", "src_lang": "en", "tgt_lang": "deu"})
    pairs = read_bitext(source, tmp_path)
    assert [(p.src, p.tgt, p.src_lang, p.tgt_lang) for p in pairs][0] == ("cat 0", "Katze 0", "en", "de")
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict({"translation": [{"en": "a cat", "fr": "un chat"}]}).save_to_disk(str(tmp_path / "hf"))
    hf = read_bitext(BitextConfig("hf", path=str(tmp_path / "hf"), src_field="translation.en",
                                  tgt_field="translation.fr", src_lang="en", tgt_lang="fr"))
    assert [(p.src, p.tgt) for p in hf] == [("a cat", "un chat")]


@pytest.mark.parametrize("config, match", [
    ({"type": "lines", "name": "t", "src_path": "{data_dir}/{lang}.txt", "tgt_path": "{data_dir}/en.txt"},
     "tgt_lang=None is not valid"),
    ({"type": "lines", "name": "t", "src_path": "{data_dir}/x.txt", "tgt_path": "{data_dir}/en.txt", "tgt_lang": "en"},
     "src_path='{data_dir}/x.txt' is not valid: expected a template with {lang}"),
    ({"type": "lines", "name": "t", "src_path": "{split}/{lang}", "tgt_path": "en", "tgt_lang": "en"},
     "placeholders among {data_dir}, {lang} only"),
    ({"type": "files", "path": "p.jsonl", "langs": ["de"]},
     "langs=.'de',. is not valid: expected unset: a files source reads name, path, src_field, tgt_field"),
    ({"type": "files"}, "a file path or dataset name"),
    ({"type": "files", "path": "p.jsonl", "split": "train"}, "split='train' is not valid: expected unset"),
    ({"type": "lines", "name": "t", "path": "p.txt"}, "path='p.txt' is not valid: expected unset: a lines source reads"),
    ({"type": "task"}, "a task whose rows are joined"),
    ({"type": "wiki"}, "type='wiki' is not valid: expected one of 'lines', 'files', 'hf', 'task'"),
])
def test_bad_configs_name_the_key(config: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        from_dict(BitextConfig, config)


@pytest.mark.parametrize("task, key", [
    ({"name": "t", "type": "nope"}, "type='nope'"),                      # the task type's own check
    ({"name": "t", "type": "files", "path": ""}, "path=''"),             # the files type's check
    ({"name": "t/1", "type": "files", "path": "{lang}.tsv"}, "name='t/1'"),
    ({"name": "t", "type": "files", "path": "{lang}.tsv"}, "link='none'"),  # the source's check of its task
])
def test_a_task_nested_in_a_source_names_its_keys_where_they_sit(task: dict, key: str) -> None:
    """A task's checks name ``task.<key>`` (its place in a fine-tuning config); nested in a bitext
    source of a pretraining config, the key reads from the config's root, ``task`` said once."""
    with pytest.raises(ConfigError) as error:
        from_dict(BitextConfig, {"type": "task", "name": "s", "task": task}, prefix="data.sources[0].")
    assert str(error.value).startswith(f"data.sources[0].task.{key} is not valid")


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONFIGS / "bitext").glob("*.yaml")))
def test_every_preset_reads_its_first_language(name: str, data_dir: Path) -> None:
    source = bitext(name)
    first = sorted(lang for lang in bitext_languages(source, data_dir) if lang not in ("en", source.tgt_lang))[0]
    pairs = read_bitext(bitext(name, langs=(first,)), data_dir)
    assert pairs and {(p.src_lang, p.tgt_lang) for p in pairs} in ({(first, "en")}, {("en", first)})
    assert len({p.id for p in pairs}) == len(pairs)
