from __future__ import annotations

from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets")

from xlt.data.errors import DataError  # noqa: E402
from xlt.data.hf import read_hf_dataset, read_hf_parallel  # noqa: E402
from xlt.data.records import Example, ParallelPair  # noqa: E402

FEATURES = datasets.Features(
    {
        "text": datasets.Value("string"),
        "label": datasets.ClassLabel(names=["negative", "positive"]),
        "lang": datasets.Value("string"),
    }
)


def _dataset(labels: list[int], texts: list[str] | None = None) -> datasets.Dataset:
    texts = texts or [f"Satz {i}" for i in range(len(labels))]
    return datasets.Dataset.from_dict(
        {"text": texts, "label": labels, "lang": ["deu_Latn"] * len(labels)}, features=FEATURES
    )


def test_saved_dataset_maps_class_labels(tmp_path: Path) -> None:
    _dataset([1, 0, 1]).save_to_disk(str(tmp_path / "reviews"))
    examples = read_hf_dataset(tmp_path / "reviews")
    assert examples == [
        Example(id="reviews/0", text="Satz 0", lang="de", label="positive"),
        Example(id="reviews/1", text="Satz 1", lang="de", label="negative"),
        Example(id="reviews/2", text="Satz 2", lang="de", label="positive"),
    ]
    # a fixed language, unlabeled reading
    unlabeled = read_hf_dataset(tmp_path / "reviews", lang="fr", label_field=None)
    assert {(ex.lang, ex.label) for ex in unlabeled} == {("fr", None)}


def test_saved_dataset_dict_selects_split(tmp_path: Path) -> None:
    datasets.DatasetDict(train=_dataset([0, 1]), test=_dataset([1], texts=["Test"])).save_to_disk(str(tmp_path / "dd"))
    test = read_hf_dataset(tmp_path / "dd", "test")
    assert [(ex.id, ex.text, ex.label) for ex in test] == [("dd/test/0", "Test", "positive")]
    assert len(read_hf_dataset(tmp_path / "dd", "train")) == 2
    with pytest.raises(ValueError, match="no split 'dev'; splits present: train, test"):
        read_hf_dataset(tmp_path / "dd", "dev")
    with pytest.raises(ValueError, match="split= is required; splits present: train, test"):
        read_hf_dataset(tmp_path / "dd")


def test_missing_columns_are_named(tmp_path: Path) -> None:
    _dataset([0]).save_to_disk(str(tmp_path / "d"))
    with pytest.raises(DataError) as info:
        read_hf_dataset(tmp_path / "d", text_field="sentence", label_field="topic")
    message = str(info.value)
    assert "missing columns 'sentence', 'topic'" in message
    assert "columns present: 'text', 'label', 'lang'" in message


def test_no_label_and_empty_text_name_the_row(tmp_path: Path) -> None:
    _dataset([0, -1]).save_to_disk(str(tmp_path / "hidden"))
    with pytest.raises(DataError, match=r"row 1: label -1 in column 'label' is not a class index 0..1"):
        read_hf_dataset(tmp_path / "hidden")
    _dataset([0, 1], texts=["ok", " "]).save_to_disk(str(tmp_path / "empty"))
    with pytest.raises(DataError, match=r"empty.*: row 1: empty text"):
        read_hf_dataset(tmp_path / "empty")


def test_string_labels_checked_against_given_labels(tmp_path: Path) -> None:
    ds = datasets.Dataset.from_dict({"text": ["a", "b"], "label": ["sports", "weather"]})
    ds.save_to_disk(str(tmp_path / "s"))
    with pytest.raises(DataError, match="row 1: unknown label 'weather'"):
        read_hf_dataset(tmp_path / "s", lang="en", labels=["sports", "travel"])


def test_hub_name_needs_a_split() -> None:
    with pytest.raises(ValueError, match="pass split="):
        read_hf_dataset("someone/some-dataset")


def test_parallel_pairs_flat_and_nested_translation_columns(tmp_path: Path) -> None:
    datasets.Dataset.from_dict({"en": ["a cat", "a dog"], "de": ["eine Katze", "ein Hund"]}).save_to_disk(
        str(tmp_path / "flat"))
    assert read_hf_parallel(tmp_path / "flat", src_field="en", tgt_field="de", src_lang="en", tgt_lang="deu_Latn") == [
        ParallelPair("flat/0", "a cat", "eine Katze", "en", "de"), ParallelPair("flat/1", "a dog", "ein Hund", "en", "de")]
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(
        {"translation": [{"en": "a cat", "fr": "un chat"}]})}).save_to_disk(str(tmp_path / "nested"))
    pairs = read_hf_parallel(tmp_path / "nested", "train", src_field="translation.en", tgt_field="translation.fr",
                             src_lang="en", tgt_lang="fr")
    assert [(p.src, p.tgt, p.tgt_lang) for p in pairs] == [("a cat", "un chat", "fr")]
    with pytest.raises(DataError, match="translation.de"):
        read_hf_parallel(tmp_path / "nested", "train", src_field="translation.en", tgt_field="translation.de",
                         src_lang="en", tgt_lang="de")
    with pytest.raises(DataError, match="src_lang"):
        read_hf_parallel(tmp_path / "flat", src_field="en", tgt_field="de")
