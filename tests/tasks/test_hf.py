"""The ``hf`` task type, offline: ``save_to_disk`` datasets in ``tmp_path`` (a language column, or a
directory per language) and the ``json`` builder over local files; ClassLabel ids become names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xlt.config import ConfigError
from xlt.data.errors import DataError
from xlt.data.records import Example
from xlt.tasks import load_task

from .helpers import task_config, write_jsonl

datasets = pytest.importorskip("datasets")

SENTIMENT = datasets.Features({"text": datasets.Value("string"), "lang": datasets.Value("string"),
                               "label": datasets.ClassLabel(names=["negative", "positive"])})


@pytest.fixture(autouse=True)
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No network, and the ``json`` builder's cache inside ``tmp_path``."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def reviews(root: Path) -> Path:
    """``root/reviews``: a ``DatasetDict`` (train, dev, test) of three languages in one table."""
    rows = {"text": ["fine", "awful", "gut", "schlecht", "bien"], "lang": ["en", "eng", "de", "deu_Latn", "fr"],
            "label": [1, 0, 1, 0, 1]}
    split = datasets.Dataset.from_dict(rows, features=SENTIMENT)
    datasets.DatasetDict({"train": split, "dev": split, "test": split}).save_to_disk(str(root / "reviews"))
    return root


def test_saved_dataset_dict_with_a_language_column(tmp_path: Path) -> None:
    cfg = task_config(type="hf", name="rev", path="{data_dir}/reviews", fields={"lang": "lang"},
                      target_langs=["de", "fr"])
    task = load_task(cfg, reviews(tmp_path))
    assert task.labels == ("negative", "positive")  # the ClassLabel names, sorted from the source train split
    assert task.examples("train", "en") == [Example(id="rev/en/train/0", text="fine", lang="en", label="positive"),
                                            Example(id="rev/en/train/1", text="awful", lang="en", label="negative")]
    assert [(ex.id, ex.text, ex.label) for ex in task.examples("dev", "de")] == [
        ("rev/de/dev/0", "gut", "positive"), ("rev/de/dev/1", "schlecht", "negative")]  # positions among de's rows
    assert [ex.text for ex in task.examples("test", "fr")] == ["bien"]


def test_a_saved_dataset_per_language_maps_class_labels(tmp_path: Path) -> None:
    """A single saved ``Dataset`` (no ``DatasetDict``, no split recorded) serves every split asked for."""
    for lang in ("en", "de"):
        datasets.Dataset.from_dict({"text": [f"{lang} {i}" for i in range(3)], "lang": ["xx"] * 3, "label": [1, 0, 1]},
                                   features=SENTIMENT).save_to_disk(str(tmp_path / "rev" / lang))
    cfg = task_config(type="hf", name="rev", path="{data_dir}/rev/{lang}", target_langs=["de"])
    task = load_task(cfg, tmp_path)
    assert task.labels == ("negative", "positive")
    # The language is the directory's: the language column is not read.
    assert task.examples("test", "de") == [Example(id="rev/de/test/0", text="de 0", lang="de", label="positive"),
                                           Example(id="rev/de/test/1", text="de 1", lang="de", label="negative"),
                                           Example(id="rev/de/test/2", text="de 2", lang="de", label="positive")]


def test_a_directory_per_language_with_pairs_label_map_and_id_links(tmp_path: Path) -> None:
    for lang, order in (("en", [0, 1, 2]), ("de", [2, 1, 0])):
        split = datasets.Dataset.from_dict({
            "uid": [f"q{i}" for i in order], "s1": [f"{lang} a{i}" for i in order],
            "s2": [f"{lang} b{i}" for i in order], "y": [i % 2 for i in order]})
        datasets.DatasetDict({"train": split, "validation": split}).save_to_disk(str(tmp_path / "px" / lang))
    cfg = task_config(type="hf", name="px", path="{data_dir}/px/{lang}", target_langs=["de"],
                      fields={"text": "s1", "text_pair": "s2", "label": "y", "id": "uid"}, link="id",
                      label_map={"0": "different", "1": "paraphrase"},
                      splits={"dev": "validation[:2]", "test": "validation[2:]"})
    task = load_task(cfg, tmp_path)
    assert task.paired and task.labels == ("different", "paraphrase")
    assert task.examples("test", "de") == [Example(id="px/de/validation/q0", text="de a0", lang="de",
                                                   label="different", text_pair="de b0", source_id="q0")]
    assert [ex.id for ex in task.examples("dev", "en")] == ["px/en/validation/q0", "px/en/validation/q1"]
    linked = task.translations("train", "de", task.examples("train", "en"))
    assert {k: (v.text, v.label) for k, v in linked.items()} == {
        "px/en/train/q0": ("de a0", "different"), "px/en/train/q1": ("de a1", "paraphrase"),
        "px/en/train/q2": ("de a2", "different")}


def test_json_builder_over_local_files(tmp_path: Path) -> None:
    for lang in ("en", "sw"):
        for split in ("train", "dev", "test"):
            write_jsonl(tmp_path / "j" / lang / f"{split}.jsonl",
                        [{"text": f"{lang} {split} {i}", "topic": "ab"[i % 2]} for i in range(3)])
        write_jsonl(tmp_path / "j" / lang / "raw.jsonl", [{"text": f"{lang} raw"}])
    cfg = task_config(type="hf", name="j", path="json", data_files="{data_dir}/j/{lang}/{split}.jsonl",
                      fields={"label": "topic"}, target_langs=["swh"], splits={"pool": "raw"})
    task = load_task(cfg, tmp_path)
    assert task.target_langs == ("sw",)
    assert task.labels == ("a", "b")
    # every split name goes through the template, not only the builder's default "train"
    assert [(ex.text, ex.label) for ex in task.examples("dev", "sw")] == [
        ("sw dev 0", "a"), ("sw dev 1", "b"), ("sw dev 2", "a")]
    assert [ex.id for ex in task.examples("test", "sw")] == ["j/sw/test/0", "j/sw/test/1", "j/sw/test/2"]
    # a pool without a label column is read unlabelled
    assert task.examples("pool", "sw") == [Example(id="j/sw/raw/0", text="sw raw", lang="sw")]


def test_a_label_outside_the_label_set(tmp_path: Path) -> None:
    cfg = task_config(type="hf", name="rev", path="{data_dir}/reviews", fields={"lang": "lang"},
                      target_langs=["de"], labels=["positive", "neutral"])
    task = load_task(cfg, reviews(tmp_path))
    with pytest.raises(DataError) as err:
        task.examples("train", "en")
    assert str(err.value) == (f"{tmp_path}/reviews[train]: row 1: unknown label 'negative' in column 'label'; "
                              "valid labels: positive, neutral (task.unknown_labels: drop leaves such rows out)")


def test_a_missing_column_names_the_columns_present(tmp_path: Path) -> None:
    cfg = task_config(type="hf", name="rev", path="{data_dir}/reviews", fields={"lang": "lang", "text": "sentence"},
                      target_langs=["de"])
    with pytest.raises(DataError) as err:
        load_task(cfg, reviews(tmp_path))
    assert str(err.value) == (f"{tmp_path}/reviews[train]: missing column 'sentence'; "
                              "columns present: 'text', 'lang', 'label'")
    cfg = task_config(type="hf", name="rev", path="{data_dir}/reviews", target_langs=["de"],
                      fields={"lang": "lang", "text": "sentence", "label": "topic"})
    with pytest.raises(DataError) as err:
        load_task(cfg, tmp_path)
    assert str(err.value) == (f"{tmp_path}/reviews[train]: missing columns 'sentence', 'topic'; "
                              "columns present: 'text', 'lang', 'label'")


def test_a_missing_split_names_the_splits_present(tmp_path: Path) -> None:
    cfg = task_config(type="hf", name="rev", path="{data_dir}/reviews", fields={"lang": "lang"},
                      target_langs=["de"], splits={"test": "validation"})
    task = load_task(cfg, reviews(tmp_path))
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path}/reviews: no split 'validation'; "
                                                   "splits present: train, dev, test")):
        task.examples("test", "de")


def test_an_unlabelled_class_index(tmp_path: Path) -> None:
    split = datasets.Dataset.from_dict({"text": ["x", "y"], "lang": ["en", "en"], "label": [1, -1]},
                                       features=SENTIMENT)
    datasets.DatasetDict({"train": split}).save_to_disk(str(tmp_path / "hidden"))
    cfg = task_config(type="hf", name="h", path="{data_dir}/hidden", fields={"lang": "lang"}, target_langs=["de"])
    with pytest.raises(DataError, match=re.escape(f"{tmp_path}/hidden[train]: row 1: label -1 in column 'label' is "
                                                  "not a class index 0..1 (negative, positive)")):
        load_task(cfg, tmp_path)


def test_string_labels_and_empty_text_name_the_row(tmp_path: Path) -> None:
    splits = {"train": {"text": ["a", "b"], "label": ["sports", "weather"]},
              "dev": {"text": ["ok", " "], "label": ["sports", "sports"]}}
    datasets.DatasetDict({name: datasets.Dataset.from_dict(rows) for name, rows in splits.items()}).save_to_disk(
        str(tmp_path / "s" / "de"))
    cfg = task_config(type="hf", name="s", path="{data_dir}/s/{lang}", target_langs=["de"], labels=["sports", "travel"])
    task = load_task(cfg, tmp_path)
    with pytest.raises(DataError) as err:
        task.examples("train", "de")
    assert str(err.value) == (f"{tmp_path}/s/de[train]: row 1: unknown label 'weather' in column 'label'; "
                              "valid labels: sports, travel (task.unknown_labels: drop leaves such rows out)")
    with pytest.raises(DataError) as err:
        task.examples("dev", "de")
    assert str(err.value) == f"{tmp_path}/s/de[dev]: row 1: empty text in column 'text'; expected a non-empty string"


def test_hf_config_checks() -> None:
    with pytest.raises(ConfigError, match=re.escape("task.fields.lang=None is not valid: expected the language "
                                                    "column of a dataset without {lang} in path")):
        task_config(type="hf", name="x", path="some/dataset", target_langs=["de"])
    with pytest.raises(ConfigError, match=re.escape("task.label_path='l.txt' is not valid: expected unset for an hf "
                                                    "task")):
        task_config(type="hf", name="x", path="d/{lang}", label_path="l.txt")
