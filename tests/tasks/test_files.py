"""The ``files`` task type on small files in ``tmp_path``: formats, field and label mappings, slices,
links, language folders, and the errors that name the file, the line and what was expected."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xlt.config import ConfigError
from xlt.data.errors import DataError
from xlt.data.records import Example
from xlt.tasks import Task, TaskConfig, load_task

from .helpers import task_config, write, write_jsonl, write_rows, write_tsv

SENT = {"en": [["good film", "pos"], ["bad film", "neg"], ["great plot", "pos"]],
        "de": [["guter Film", "pos"], ["schlechter Film", "neg"], ["tolle Handlung", "pos"]],
        "fr": [["bon film", "pos"], ["mauvais film", "neg"], ["belle intrigue", "pos"]]}


def sentiment_root(root: Path, langs: tuple[str, ...] = ("en", "de", "fr"),
                   splits: tuple[str, ...] = ("train", "dev", "test")) -> Path:
    """``root/sent/<lang>/<split>.tsv`` (header ``text, label``), the same three rows in every split."""
    for lang in langs:
        for split in splits:
            write_tsv(root / "sent" / lang / f"{split}.tsv", ["text", "label"], SENT[lang])
    return root


def sentiment(**entries: object) -> TaskConfig:
    return task_config(**{"type": "files", "name": "sent", "path": "{data_dir}/sent/{lang}/{split}.tsv", **entries})


FORMATS = ["jsonl", "csv", "tsv", "parquet"]
DROP_HINT = "(task.unknown_labels: drop leaves such rows out)"
LABELS = ["sports", "travel", "politics"]


def dev_split(root: Path, fmt: str, data: bytes | list[dict[str, Any]]) -> tuple[Task, Path]:
    """``root/one/dev.<fmt>`` holding ``data`` (bytes as they are, or rows as ``write_rows`` writes them) as
    the dev split of a task with the columns ``lang`` and ``id`` and the labels ``LABELS``; nothing is read
    before ``task.examples("dev", lang)``, so the file's first error is the one raised there."""
    path = root / "one" / f"dev.{fmt}"
    if isinstance(data, bytes):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    else:
        write_rows(path, data)
    cfg = task_config(type="files", name="one", path="{data_dir}/one/{split}." + fmt,
                      fields={"lang": "lang", "id": "id"}, labels=LABELS, target_langs=["de", "fr"])
    return load_task(cfg, root), path


def dev_error(root: Path, fmt: str, data: bytes | list[dict[str, Any]],
              error: type[Exception] = DataError) -> tuple[str, Path]:
    """The message reading ``dev_split``'s file raises (an ``error``), and the file's path."""
    task, path = dev_split(root, fmt, data)
    with pytest.raises(error) as err:
        task.examples("dev", "de")
    return str(err.value), path


# --- formats ---------------------------------------------------------------------------------------


def test_tsv_per_language_resolves_targets_labels_and_ids(tmp_path: Path) -> None:
    task = load_task(sentiment(), sentiment_root(tmp_path))
    # target_langs: every language found but the source, sorted; labels: the source train's, sorted
    assert task.target_langs == ("de", "fr")
    assert task.config.target_langs == ("de", "fr")
    assert task.labels == ("neg", "pos")
    assert task.found == {"de": "de", "en": "en", "fr": "fr"}
    assert task.paired is False
    assert task.examples("train", "de") == [
        Example(id="sent/de/train/0", text="guter Film", lang="de", label="pos"),
        Example(id="sent/de/train/1", text="schlechter Film", lang="de", label="neg"),
        Example(id="sent/de/train/2", text="tolle Handlung", lang="de", label="pos"),
    ]
    ids = [r["id"] for role in ("train", "dev", "test") for r in task.rows(role, task.langs)]
    assert len(ids) == len(set(ids)) == 3 * 3 * 3
    (drawn,) = task.rows("test", ["fr"], limit=1)  # a seeded draw (tests/tasks/test_sampling.py)
    assert drawn in task.rows("test", ["fr"]) and drawn == {"id": "sent/fr/test/2", "text": "belle intrigue",
                                                            "text_pair": None, "label": "pos", "lang": "fr",
                                                            "source_id": None}


def test_relative_and_absolute_paths_need_no_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sentiment_root(tmp_path, langs=("en", "de"))
    monkeypatch.delenv("XLT_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    relative = load_task(sentiment(path="sent/{lang}/{split}.tsv"))
    absolute = load_task(sentiment(path=f"{tmp_path}/sent/{{lang}}/{{split}}.tsv"))
    for task in (relative, absolute):
        assert task.langs == ("en", "de")
        assert [ex.text for ex in task.examples("dev", "de")] == [row[0] for row in SENT["de"]]


def test_csv_keeps_quoted_commas(tmp_path: Path) -> None:
    for lang, word in (("en", "Hello"), ("de", "Hallo")):
        for split in ("train", "dev", "test"):
            write(tmp_path / "c" / lang / f"{split}.csv",
                  f'id,text,label\n7,"{word}, world, again",a\n8,"She said ""no"", twice",b\n')
    task = load_task(task_config(type="files", name="c", path="{data_dir}/c/{lang}/{split}.csv",
                                 fields={"id": "id"}), tmp_path)
    assert [(ex.id, ex.text, ex.label) for ex in task.examples("test", "de")] == [
        ("c/de/test/7", "Hallo, world, again", "a"), ("c/de/test/8", 'She said "no", twice', "b")]


def test_jsonl_pairs(tmp_path: Path) -> None:
    for lang in ("en", "de"):
        for split in ("train", "dev", "test"):
            write_jsonl(tmp_path / "nli" / lang / f"{split}.jsonl", [
                {"premise": f"{lang} p0", "hypothesis": f"{lang} h0", "gold": "entailment"},
                {"premise": f"{lang} p1", "hypothesis": f"{lang} h1", "gold": "contradiction"}])
    cfg = task_config(type="files", name="nli", path="{data_dir}/nli/{lang}/{split}.jsonl",
                      fields={"text": "premise", "text_pair": "hypothesis", "label": "gold"})
    task = load_task(cfg, tmp_path)
    assert task.paired
    assert task.labels == ("contradiction", "entailment")
    assert task.examples("dev", "de") == [
        Example(id="nli/de/dev/0", text="de p0", lang="de", label="entailment", text_pair="de h0"),
        Example(id="nli/de/dev/1", text="de p1", lang="de", label="contradiction", text_pair="de h1"),
    ]


def test_parquet(tmp_path: Path) -> None:
    for lang in ("en", "es"):
        for split in ("train", "dev", "test"):
            path = tmp_path / "pq" / lang / f"{split}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({"sentence": [f"{lang} {split} one", f"{lang} {split} two"],
                                     "topic": ["sport", "health"], "uid": [11, 12]}), path)
    cfg = task_config(type="files", name="pq", path="{data_dir}/pq/{lang}/{split}.parquet",
                      fields={"text": "sentence", "label": "topic", "id": "uid"})
    task = load_task(cfg, tmp_path)
    assert task.labels == ("health", "sport")
    assert [(ex.id, ex.text, ex.label) for ex in task.examples("train", "es")] == [
        ("pq/es/train/11", "es train one", "sport"), ("pq/es/train/12", "es train two", "health")]


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_reads_the_same_examples(tmp_path: Path, fmt: str) -> None:
    rows = [{"id": "r1", "text": "Das Spiel endete 2:1.", "label": "sports", "lang": "deu_Latn"},
            {"id": "r2", "text": 'Er sagte: "Wir fahren, morgen."', "label": "travel", "lang": "de"},
            {"id": "r3", "text": "Le vote a eu lieu.", "label": "politics", "lang": "fra"}]
    task, _ = dev_split(tmp_path, fmt, rows)
    assert task.examples("dev", "de") == [
        Example(id="one/de/dev/r1", text="Das Spiel endete 2:1.", lang="de", label="sports"),
        Example(id="one/de/dev/r2", text='Er sagte: "Wir fahren, morgen."', lang="de", label="travel"),
    ]
    assert task.examples("dev", "fr") == [Example(id="one/fr/dev/r3", text="Le vote a eu lieu.", lang="fr",
                                                  label="politics")]


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_with_mapped_fields_and_generated_ids(tmp_path: Path, fmt: str) -> None:
    rows = [{"sentence": "Hallo", "hypothesis": "Hi", "y": "a", "orig": "s1"},
            {"sentence": "Tschüss", "hypothesis": "Bye", "y": "b", "orig": "s2"}]
    for folder in ("eng", "deu"):
        write_rows(tmp_path / "pairs" / folder / f"test.{fmt}", rows)
    cfg = task_config(type="files", name="pairs", path="{data_dir}/pairs/{lang}/{split}." + fmt, link="source_id",
                      fields={"text": "sentence", "text_pair": "hypothesis", "label": "y", "source_id": "orig"},
                      labels=["a", "b"])
    assert load_task(cfg, tmp_path).examples("test", "de") == [
        Example(id="pairs/de/test/0", text="Hallo", lang="de", label="a", text_pair="Hi", source_id="s1"),
        Example(id="pairs/de/test/1", text="Tschüss", lang="de", label="b", text_pair="Bye", source_id="s2"),
    ]


def test_headerless_tsv_names_its_columns(tmp_path: Path) -> None:
    for lang in ("en", "de"):
        for split in ("train", "dev", "test"):
            write_tsv(tmp_path / "h" / lang / f"{split}.tsv", None, [["x", f"{lang} first"], ["y", f"{lang} second"]])
    cfg = task_config(type="files", name="h", path="{data_dir}/h/{lang}/{split}.tsv", header=False,
                      columns=["label", "text"])
    task = load_task(cfg, tmp_path)
    # The first line is data, not a header.
    assert [(ex.text, ex.label) for ex in task.examples("train", "de")] == [("de first", "x"), ("de second", "y")]


def test_one_file_with_a_language_column(tmp_path: Path) -> None:
    rows = [["eng_Latn", "one", "a"], ["de", "eins", "a"], ["fra", "un", "b"], ["en", "two", "b"],
            ["deu", "zwei", "b"]]
    for split in ("train", "dev", "test"):
        write_tsv(tmp_path / "all" / f"{split}.tsv", ["language", "text", "label"], rows)
    cfg = task_config(type="files", name="all", path="{data_dir}/all/{split}.tsv", fields={"lang": "language"},
                      target_langs=["de", "fr"])
    task = load_task(cfg, tmp_path)
    assert task.labels == ("a", "b")
    # Ids count positions among the language's rows, as in a file per language.
    assert [(ex.id, ex.text) for ex in task.examples("train", "en")] == [("all/en/train/0", "one"),
                                                                         ("all/en/train/1", "two")]
    assert [ex.text for ex in task.examples("dev", "de")] == ["eins", "zwei"]
    assert [(ex.text, ex.lang) for ex in task.examples("test", "fr")] == [("un", "fr")]
    assert not {ex.id for ex in task.examples("dev", "de")} & {ex.id for ex in task.examples("dev", "en")}


def test_a_slice_of_one_file_with_every_language_is_per_language(tmp_path: Path) -> None:
    """A one-file release that lists the source language first (a published NLI layout): ``test[:2]``
    is the first two rows of each language, as with a file per language, and a ``line`` link pairs
    the n-th row of one language with the n-th of another."""
    rows = [[lang, f"{lang} p{i}", f"{lang} h{i}", "ab"[i % 2]] for lang in ("en", "de", "fr") for i in range(4)]
    write_tsv(tmp_path / "nli" / "test.tsv", ["language", "premise", "hypothesis", "label"], rows)
    cfg = task_config(type="files", name="nli", path="{data_dir}/nli/{split}.tsv", link="line",
                      fields={"lang": "language", "text": "premise", "text_pair": "hypothesis"},
                      splits={"train": "test[:2]", "dev": "test[2:]", "test": "test[2:]"}, target_langs=["de", "fr"])
    task = load_task(cfg, tmp_path)
    for lang in ("en", "de", "fr"):
        assert [ex.text for ex in task.examples("train", lang)] == [f"{lang} p0", f"{lang} p1"]
        assert [ex.text_pair for ex in task.examples("test", lang)] == [f"{lang} h2", f"{lang} h3"]
    assert [ex.id for ex in task.examples("dev", "fr")] == ["nli/fr/test/2", "nli/fr/test/3"]
    linked = task.translations("dev", "de", task.examples("dev", "en"))
    assert {k: v.text for k, v in linked.items()} == {"nli/en/test/2": "de p2", "nli/en/test/3": "de p3"}


def test_tweeteval_text_and_label_files(tmp_path: Path) -> None:
    for lang in ("en", "de"):
        for split in ("train", "dev", "test"):
            write(tmp_path / "tw" / lang / f"{split}_text.txt", f"{lang} sad\n{lang} meh\n{lang} happy\n")
            write(tmp_path / "tw" / lang / f"{split}_labels.txt", "0\n1\n2\n")
    cfg = task_config(type="files", name="tw", path="{data_dir}/tw/{lang}/{split}_text.txt", format="txt",
                      label_path="{data_dir}/tw/{lang}/{split}_labels.txt",
                      label_map={0: "negative", 1: "neutral", 2: "positive"})
    task = load_task(cfg, tmp_path)
    assert task.labels == ("negative", "neutral", "positive")
    assert [(ex.text, ex.label) for ex in task.examples("test", "de")] == [
        ("de sad", "negative"), ("de meh", "neutral"), ("de happy", "positive")]


def test_label_map_renames_integer_labels(tmp_path: Path) -> None:
    for lang in ("en", "de"):
        for split in ("train", "dev", "test"):
            write_jsonl(tmp_path / "lm" / lang / f"{split}.jsonl",
                        [{"text": f"{lang} {i}", "label": i % 2} for i in range(3)])
    cfg = task_config(type="files", name="lm", path="{data_dir}/lm/{lang}/{split}.jsonl",
                      label_map={"0": "negative", "1": "positive"})
    task = load_task(cfg, tmp_path)
    assert task.labels == ("negative", "positive")
    assert [ex.label for ex in task.examples("dev", "de")] == ["negative", "positive", "negative"]
    # The JSONL pool keeps its gold labels (mapped too), for scoring pseudo-labels.
    assert [ex.label for ex in task.examples("pool", "de")] == ["negative", "positive", "negative"]


def test_integer_labels_read_as_strings(tmp_path: Path) -> None:
    for lang in ("en", "de"):
        write_jsonl(tmp_path / "u" / lang / "train.jsonl", [{"text": f"{lang} eins", "label": 0},
                                                            {"text": f"{lang} zwei", "label": 1}])
    entries = {"type": "files", "name": "u", "path": "{data_dir}/u/{lang}/{split}.jsonl",
               "splits": {"dev": "train", "test": "train"}}
    task = load_task(task_config(**entries), tmp_path)
    assert task.labels == ("0", "1")
    assert [ex.label for ex in task.examples("dev", "de")] == ["0", "1"]
    closed = load_task(task_config(**entries, labels=["0", "2"]), tmp_path)
    with pytest.raises(DataError) as err:
        closed.examples("dev", "de")
    assert str(err.value) == (f"{tmp_path}/u/de/train.jsonl:2: unknown label '1' in column 'label'; valid labels: 0, 2 "
                              f"{DROP_HINT}")


def pair_rows(lang: str, n: int = 4, ns: tuple[int, ...] = ()) -> list[dict]:
    return [{"id": f"r{i}", "s1": f"{lang} a{i}", "s2": "NS" if i in ns else f"{lang} b{i}", "label": i % 2}
            for i in range(n)]


def test_drop_skips_placeholder_rows_of_a_pair_task(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "px" / "en" / "dev.jsonl", pair_rows("en"))
    write_jsonl(tmp_path / "px" / "de" / "dev.jsonl", pair_rows("de", ns=(1,)))
    cfg = task_config(type="files", name="px", path="{data_dir}/px/{lang}/{split}.jsonl",
                      fields={"text": "s1", "text_pair": "s2", "id": "id"}, label_map={"0": "no", "1": "yes"},
                      link="id", drop=["NS"], splits={"train": "dev", "dev": "dev", "test": "dev", "pool": "dev"})
    task = load_task(cfg, tmp_path)
    assert [ex.id for ex in task.examples("train", "en")] == [f"px/en/dev/r{i}" for i in range(4)]
    assert [ex.id for ex in task.examples("train", "de")] == ["px/de/dev/r0", "px/de/dev/r2", "px/de/dev/r3"]
    assert "NS" not in {ex.text_pair for ex in task.examples("pool", "de")}
    # The dropped row has no translation; the others are linked by id.
    found = task.translations("train", "de", task.examples("train", "en"))
    assert {k: v.text for k, v in found.items()} == {"px/en/dev/r0": "de a0", "px/en/dev/r2": "de a2",
                                                     "px/en/dev/r3": "de a3"}


def test_split_slices_and_line_links(tmp_path: Path) -> None:
    for lang in ("en", "de"):
        write_tsv(tmp_path / "x" / lang / "validation.tsv", ["text", "label"],
                  [[f"{lang} {i}", "ab"[i % 2]] for i in range(5)])
    cfg = task_config(type="files", name="x", path="{data_dir}/x/{lang}/{split}.tsv", link="line",
                      splits={"train": "validation[:2]", "dev": "validation[2:]", "test": "validation[-1:]",
                              "pool": "validation[:2]"})
    task = load_task(cfg, tmp_path)
    assert [ex.text for ex in task.examples("train", "en")] == ["en 0", "en 1"]
    assert [ex.text for ex in task.examples("dev", "de")] == ["de 2", "de 3", "de 4"]
    assert [ex.text for ex in task.examples("test", "de")] == ["de 4"]
    # Ids are positions in the split as published, so slices of one split never share an id.
    assert [ex.id for ex in task.examples("dev", "en")] == ["x/en/validation/2", "x/en/validation/3",
                                                            "x/en/validation/4"]
    assert not {ex.id for ex in task.examples("train", "en")} & {ex.id for ex in task.examples("dev", "en")}
    # line links: the n-th row of the split, whichever slice it is in
    dev_en = task.examples("dev", "en")
    linked = task.translations("dev", "de", dev_en)
    assert {k: v.text for k, v in linked.items()} == {"x/en/validation/2": "de 2", "x/en/validation/3": "de 3",
                                                      "x/en/validation/4": "de 4"}
    assert task.translations("test", "de", dev_en) == {"x/en/validation/4": task.examples("test", "de")[0]}


def test_source_id_links(tmp_path: Path) -> None:
    for lang, order in (("en", [0, 1, 2]), ("de", [2, 0, 1])):
        for split in ("train", "dev", "test"):
            write_tsv(tmp_path / "s" / lang / f"{split}.tsv", ["orig", "text", "label"],
                      [[f"f{i}", f"{lang} {i}", "ab"[i % 2]] for i in order])
    cfg = task_config(type="files", name="s", path="{data_dir}/s/{lang}/{split}.tsv", link="source_id",
                      fields={"source_id": "orig"})
    task = load_task(cfg, tmp_path)
    linked = task.translations("train", "de", task.examples("train", "en"))
    assert {k: (v.text, v.source_id) for k, v in linked.items()} == {
        "s/en/train/0": ("de 0", "f0"), "s/en/train/1": ("de 1", "f1"), "s/en/train/2": ("de 2", "f2")}


def test_translations_need_a_link(tmp_path: Path) -> None:
    task = load_task(sentiment(), sentiment_root(tmp_path))
    with pytest.raises(ConfigError, match="task 'sent' has no translations: set task.link"):
        task.translations("train", "de", task.examples("train", "en"))


def test_language_folders_mapped_by_name(tmp_path: Path) -> None:
    for folder in ("english", "javanese", "sundanese", "notes"):
        for split in ("train", "dev", "test"):
            write_tsv(tmp_path / "nx" / folder / f"{split}.tsv", ["text", "label"],
                      [[f"{folder} x", "neg"], [f"{folder} y", "pos"]])
    cfg = task_config(type="files", name="nx", path="{data_dir}/nx/{lang}/{split}.tsv",
                      languages={"en": "english", "jv": "javanese"})
    task = load_task(cfg, tmp_path)
    # "sundanese" and "notes" are neither mapped nor language codes: not languages of the task.
    assert task.found == {"en": "english", "jv": "javanese"}
    assert task.langs == ("en", "jv")
    assert [(ex.id, ex.text, ex.lang) for ex in task.examples("dev", "jv")] == [
        ("nx/jv/dev/0", "javanese x", "jv"), ("nx/jv/dev/1", "javanese y", "jv")]


def test_flores_folders_found_by_normalisation(tmp_path: Path) -> None:
    for folder in ("eng_Latn", "deu_Latn", "zho_Hans", "zho_Hant"):
        for split in ("train", "dev", "test"):
            write_tsv(tmp_path / "sib" / folder / f"{split}.tsv", ["text", "category"],
                      [[f"{folder} x", "travel"], [f"{folder} y", "health"]])
    entries = {"type": "files", "name": "sib", "path": "{data_dir}/sib/{lang}/{split}.tsv",
               "fields": {"label": "category"}}
    task = load_task(task_config(**entries), tmp_path)
    assert task.found == {"de": "deu_Latn", "en": "eng_Latn", "zh": "zho_Hans", "zh-Hant": "zho_Hant"}
    assert task.target_langs == ("de", "zh", "zh-Hant")
    assert [ex.text for ex in task.examples("test", "zh-Hant")] == ["zho_Hant x", "zho_Hant y"]
    # A configured FLORES code is normalised too.
    explicit = load_task(task_config(**entries, target_langs=["deu_Latn"]), tmp_path)
    assert explicit.target_langs == ("de",)


def test_labels_default_to_the_source_train_split_and_close_the_set(tmp_path: Path) -> None:
    sentiment_root(tmp_path)
    write_tsv(tmp_path / "sent" / "de" / "train.tsv", ["text", "label"], [["gut", "pos"], ["na ja", "mixed"]])
    task = load_task(sentiment(), tmp_path)
    assert task.labels == ("neg", "pos")
    with pytest.raises(DataError) as err:
        task.examples("train", "de")
    assert str(err.value) == (f"{tmp_path}/sent/de/train.tsv:3: unknown label 'mixed' in column 'label'; "
                              f"valid labels: neg, pos {DROP_HINT}")


def test_pool_without_labels(tmp_path: Path) -> None:
    sentiment_root(tmp_path, langs=("en", "de"))
    write_tsv(tmp_path / "sent" / "de" / "unlabelled.tsv", ["text"], [["nur Text"], ["noch mehr"]])
    write_tsv(tmp_path / "sent" / "en" / "unlabelled.tsv", ["text"], [["just text"]])
    task = load_task(sentiment(splits={"pool": "unlabelled"}), tmp_path)
    assert task.examples("pool", "de") == [Example(id="sent/de/unlabelled/0", text="nur Text", lang="de"),
                                           Example(id="sent/de/unlabelled/1", text="noch mehr", lang="de")]
    # A pool split with a label column keeps it as gold.
    gold = load_task(sentiment(), tmp_path)
    assert [ex.label for ex in gold.examples("pool", "de")] == ["pos", "neg", "pos"]


# --- bad input ------------------------------------------------------------------------------------


def test_missing_file_names_path_language_and_split(tmp_path: Path) -> None:
    cfg = task_config(type="files", name="all", path="{data_dir}/all/{split}.tsv", fields={"lang": "language"},
                      target_langs=["de"])
    with pytest.raises(FileNotFoundError) as err:
        load_task(cfg, tmp_path)
    assert str(err.value) == (f"{tmp_path}/all/train.tsv does not exist: task 'all', language 'en', split 'train' "
                              "(template '{data_dir}/all/{split}.tsv')")


def test_missing_split_file(tmp_path: Path) -> None:
    sentiment_root(tmp_path, langs=("en", "de"), splits=("train", "dev"))
    task = load_task(sentiment(), tmp_path)
    with pytest.raises(FileNotFoundError, match=re.escape(f"{tmp_path}/sent/de/test.tsv does not exist: task 'sent', "
                                                          "language 'de', split 'test'")):
        task.check({"train": ["en"], "test": ["de"]})


def test_a_jsonl_row_missing_its_text_names_the_datas_own_columns(tmp_path: Path) -> None:
    """The ids and links the task layer adds to each row are not the data's columns."""
    for lang in ("en", "de"):
        for split in ("train", "dev", "test"):
            write_jsonl(tmp_path / "j" / lang / f"{split}.jsonl", [{"text": "ok", "label": "a"}, {"label": "b"}])
    cfg = task_config(type="files", name="j", path="{data_dir}/j/{lang}/{split}.jsonl", link="line")
    with pytest.raises(DataError, match=re.escape("j/en/train.jsonl:2: missing column 'text'; columns present: 'label'") + "$"):
        load_task(cfg, tmp_path)  # the source's train split, read for the label set


def test_missing_column_names_the_columns_present(tmp_path: Path) -> None:
    sentiment_root(tmp_path, langs=("en", "de"))
    with pytest.raises(DataError) as err:
        load_task(sentiment(fields={"label": "category"}), tmp_path)
    assert str(err.value) == f"{tmp_path}/sent/en/train.tsv:1: missing column 'category'; columns present: 'text', 'label'"


def test_language_not_found_names_the_languages_found(tmp_path: Path) -> None:
    sentiment_root(tmp_path, langs=("en", "de"))
    with pytest.raises(ConfigError) as err:
        load_task(sentiment(target_langs=["fr", "de"]), tmp_path)
    assert "task 'sent': no data for fr under {data_dir}/sent/{lang}/{split}.tsv; languages found: de, en" in str(err.value)


def test_unknown_type_lists_the_types() -> None:
    with pytest.raises(ConfigError, match=re.escape("task.type='csv' is not valid: expected one of files, hf")):
        task_config(type="csv", name="x", path="a/{lang}/{split}.csv")
    with pytest.raises(ConfigError, match=re.escape("task.type is missing: expected one of files, hf")):
        task_config(name="x", path="a/{lang}/{split}.csv")


def test_label_outside_the_label_set(tmp_path: Path) -> None:
    sentiment_root(tmp_path, langs=("en", "de"))
    write_tsv(tmp_path / "sent" / "de" / "dev.tsv", ["text", "label"], [["gut", "pos"], ["egal", "neutral"]])
    task = load_task(sentiment(labels=["neg", "pos"]), tmp_path)
    with pytest.raises(DataError) as err:
        task.examples("dev", "de")
    assert str(err.value) == (f"{tmp_path}/sent/de/dev.tsv:3: unknown label 'neutral' in column 'label'; "
                              f"valid labels: neg, pos {DROP_HINT}")


def test_unknown_labels_drop_leaves_labelled_rows_out_and_a_pool_rows_gold_label_only(tmp_path, caplog):
    """``task.unknown_labels: drop``: a target language's class the task lacks (a release whose targets have a
    ``neutral`` class) is counted per split and language; the pool keeps every row, without that gold label."""
    sentiment_root(tmp_path, langs=("en", "de"), splits=("train", "dev", "test", "pool"))
    rows = [["gut", "pos"], ["egal", "neutral"], ["schlecht", "neg"], ["naja", "neutral"]]
    for split in ("dev", "pool"):
        write_tsv(tmp_path / "sent" / "de" / f"{split}.tsv", ["text", "label"], rows)
    splits = {"train": "train", "dev": "dev", "test": "test", "pool": "pool"}
    task = load_task(sentiment(labels=["neg", "pos"], unknown_labels="drop", splits=splits), tmp_path)
    assert [(ex.text, ex.label) for ex in task.examples("dev", "de")] == [("gut", "pos"), ("schlecht", "neg")]
    assert [(ex.text, ex.label) for ex in task.examples("pool", "de")] == [
        ("gut", "pos"), ("egal", None), ("schlecht", "neg"), ("naja", None)]
    assert task.dropped == {"dev/de": 2, "pool/de": 2}
    assert "task sent: 2 rows left out of dev/de with a label outside the task's" in caplog.text
    with pytest.raises(ConfigError, match=re.escape("task.unknown_labels='keep' is not valid")):
        sentiment(unknown_labels="keep")


def test_empty_text_and_empty_pair_side(tmp_path: Path) -> None:
    sentiment_root(tmp_path, langs=("en", "de"))
    write_tsv(tmp_path / "sent" / "de" / "dev.tsv", ["text", "label"], [["gut", "pos"], ["  ", "neg"]])
    task = load_task(sentiment(), tmp_path)
    with pytest.raises(DataError) as err:
        task.examples("dev", "de")
    assert str(err.value) == f"{tmp_path}/sent/de/dev.tsv:3: empty text in column 'text'; expected a non-empty string"

    rows = pair_rows("en")
    write_jsonl(tmp_path / "px" / "en" / "dev.jsonl", rows)
    write_jsonl(tmp_path / "px" / "de" / "dev.jsonl", [*rows[:2], {**rows[2], "s2": ""}])
    cfg = task_config(type="files", name="px", path="{data_dir}/px/{lang}/{split}.jsonl",
                      fields={"text": "s1", "text_pair": "s2"}, splits={"train": "dev", "test": "dev"})
    pairs = load_task(cfg, tmp_path)
    with pytest.raises(DataError) as err:
        pairs.examples("test", "de")
    assert str(err.value) == f"{tmp_path}/px/de/dev.jsonl:3: empty text in column 's2'; expected a non-empty string"


def test_tsv_line_with_the_wrong_number_of_fields(tmp_path: Path) -> None:
    sentiment_root(tmp_path, langs=("en", "de"))
    write(tmp_path / "sent" / "de" / "test.tsv", "text\tlabel\ngut\tpos\nein\tTab\tzu viel\n")
    task = load_task(sentiment(), tmp_path)
    with pytest.raises(DataError) as err:
        task.examples("test", "de")
    assert str(err.value).startswith(f"{tmp_path}/sent/de/test.tsv:3: expected 2 tab-separated fields "
                                     "(text, label), found 3")


def test_non_utf8_bytes_name_the_line(tmp_path: Path) -> None:
    sentiment_root(tmp_path, langs=("en", "de"))
    (tmp_path / "sent" / "de" / "dev.tsv").write_bytes(b"text\tlabel\ngut\tpos\nsch\xf6n\tpos\n")
    task = load_task(sentiment(), tmp_path)
    with pytest.raises(DataError) as err:
        task.examples("dev", "de")
    assert str(err.value).startswith(f"{tmp_path}/sent/de/dev.tsv:3: not valid UTF-8: byte 0xf6 at byte 4 of the line")


def test_text_and_label_files_of_different_lengths(tmp_path: Path) -> None:
    for lang in ("en", "de"):
        write(tmp_path / "tw" / lang / "train_text.txt", "a\nb\nc\n")
        write(tmp_path / "tw" / lang / "train_labels.txt", "x\ny\nx\n")
    write(tmp_path / "tw" / "de" / "train_labels.txt", "x\ny\n")
    cfg = task_config(type="files", name="tw", path="{data_dir}/tw/{lang}/{split}_text.txt",
                      label_path="{data_dir}/tw/{lang}/{split}_labels.txt", format="txt",
                      splits={"dev": "train", "test": "train"})
    task = load_task(cfg, tmp_path)
    with pytest.raises(DataError) as err:
        task.examples("test", "de")
    assert str(err.value) == (f"{tmp_path}/tw/de/train_labels.txt: 2 lines, but {tmp_path}/tw/de/train_text.txt "
                              "has 3; texts and labels must be line-aligned, one per line")


def test_label_map_missing_a_raw_value(tmp_path: Path) -> None:
    for lang in ("en", "de"):
        for split in ("train", "dev", "test"):
            write_jsonl(tmp_path / "lm" / lang / f"{split}.jsonl", [{"text": "t", "label": 0}, {"text": "u", "label": 2}])
    cfg = task_config(type="files", name="lm", path="{data_dir}/lm/{lang}/{split}.jsonl",
                      label_map={"0": "negative", "1": "positive"})
    with pytest.raises(DataError) as err:
        load_task(cfg, tmp_path)
    assert str(err.value) == (f"{tmp_path}/lm/en/train.jsonl:2: label '2' in column 'label' is not in "
                              "task.label_map; mapped values: 0, 1")


def test_unknown_language_code_in_target_langs() -> None:
    with pytest.raises(ConfigError, match=r"task.target_langs: unknown language code 'zzz'"):
        task_config(type="files", name="x", path="a/{lang}/{split}.tsv", target_langs=["de", "zzz"])


def test_a_language_column_without_rows_of_a_target(tmp_path: Path) -> None:
    for split in ("train", "dev", "test"):
        write_tsv(tmp_path / "all" / f"{split}.tsv", ["language", "text", "label"],
                  [["en", "one", "a"], ["en", "two", "b"], ["de", "eins", "a"]])
    cfg = task_config(type="files", name="all", path="{data_dir}/all/{split}.tsv", fields={"lang": "language"},
                      target_langs=["fr"])
    task = load_task(cfg, tmp_path)
    with pytest.raises(DataError, match=re.escape(f"{tmp_path}/all/dev.tsv: no rows for language 'fr' in split dev")):
        task.examples("dev", "fr")


# --- bad input in each format: one file with a language column (``dev_split``) ------------------------


@pytest.mark.parametrize("fmt, line", [("jsonl", 1), ("csv", 1), ("tsv", 1), ("parquet", None)])
def test_missing_column_in_each_format(tmp_path: Path, fmt: str, line: int | None) -> None:
    # A header (Parquet's schema) is checked once; a JSONL row, which has none, when it is read.
    message, path = dev_error(tmp_path, fmt, [{"sentence": "x", "label": "sports", "lang": "de"}])
    where = f"{path}:{line}" if line else f"{path}"
    assert message == f"{where}: missing column 'text'; columns present: 'sentence', 'label', 'lang'"


def test_missing_language_column(tmp_path: Path) -> None:
    message, path = dev_error(tmp_path, "csv", [{"text": "x", "label": "sports"}])
    assert message == f"{path}:1: missing column 'lang'; columns present: 'text', 'label'"


def test_csv_multiline_field_keeps_line_numbers(tmp_path: Path) -> None:
    message, path = dev_error(tmp_path, "csv", b'text,label,lang\n"zwei\nZeilen",sports,de\n,sports,de\n')
    assert message == f"{path}:4: empty text in column 'text'; expected a non-empty string"
    # An error in a record that spans lines 2-3 is reported at its first line.
    message, path = dev_error(tmp_path, "csv", b'text,label,lang\n"zwei\nZeilen",weather,de\n')
    assert message == (f"{path}:2: unknown label 'weather' in column 'label'; valid labels: sports, travel, politics "
                       f"{DROP_HINT}")
    task, _ = dev_split(tmp_path, "csv", b'text,label,lang\n"zwei\nZeilen",sports,de\n')
    assert [ex.text for ex in task.examples("dev", "de")] == ["zwei\nZeilen"]


def test_blank_jsonl_lines_are_skipped(tmp_path: Path) -> None:
    row = b'{"text": "a", "label": "sports", "lang": "de"}\n\n{"text": "", "label": "sports", "lang": "de"}\n'
    message, path = dev_error(tmp_path, "jsonl", row)
    assert message == f"{path}:3: empty text in column 'text'; expected a non-empty string"


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
    "null label": ("jsonl", b'{"text":"ok","label":null,"lang":"de"}\n', 1, "every row of a labelled split needs one"),
    "bad language": ("csv", CSV + b"ok,sports,xx\n", 3, "unknown language code 'xx'"),
    # The id a task gives a row is <task>/<lang>/<split>/<the row's id>.
    "duplicate id": (
        "csv",
        b"id,text,label,lang\na,ok,sports,de\na,ok,sports,de\n",
        3,
        "duplicate id 'one/de/dev/a' (first at line 2)",
    ),
    "csv field count": ("csv", CSV + b"ok,sports\n", 3, "expected 3 comma-separated fields"),
    "csv bad quoting": ("csv", CSV + b'"ok"x,sports,de\n', 3, "malformed CSV"),
    "tsv field count": ("tsv", TSV + b"ok\tsports\n", 3, "expected 3 tab-separated fields"),
    "header only": ("csv", b"text,label,lang\n", None, "no rows for language 'de' in split dev"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_names_file_and_line(tmp_path: Path, case: str) -> None:
    fmt, content, line, expected = MALFORMED[case]
    message, path = dev_error(tmp_path, fmt, content)
    assert message.startswith(f"{path}:{line}: " if line else f"{path}: "), message
    assert expected in message, message


def test_parquet_errors_name_the_row(tmp_path: Path) -> None:
    rows = [{"text": "ok", "label": "sports", "lang": "de"}, {"text": "", "label": "sports", "lang": "de"}]
    message, path = dev_error(tmp_path, "parquet", rows)
    assert message == f"{path}: row 1: empty text in column 'text'; expected a non-empty string"
    message, path = dev_error(tmp_path, "parquet", b"not parquet")
    assert message.startswith(f"{path}: not a readable Parquet file")


def test_unknown_suffix_lists_valid(tmp_path: Path) -> None:
    message, path = dev_error(tmp_path, "xlsx", b"", ValueError)
    assert message == f"{path}: unsupported file type '.xlsx'; valid: .jsonl, .csv, .tsv, .parquet, .txt"
