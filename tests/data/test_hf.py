from __future__ import annotations

from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets")

from xlt.data.errors import DataError  # noqa: E402
from xlt.data.hf import load_split, read_hf_parallel  # noqa: E402
from xlt.data.records import ParallelPair  # noqa: E402


def test_saved_dataset_dict_selects_split(tmp_path: Path) -> None:
    splits = {"train": {"text": ["Satz 0", "Satz 1"]}, "test": {"text": ["Test"]}}
    datasets.DatasetDict({name: datasets.Dataset.from_dict(rows) for name, rows in splits.items()}).save_to_disk(
        str(tmp_path / "dd"))
    assert load_split(tmp_path / "dd", "test")["text"] == ["Test"]
    assert load_split(tmp_path / "dd", "train")["text"] == ["Satz 0", "Satz 1"]
    with pytest.raises(ValueError, match="no split 'dev'; splits present: train, test"):
        load_split(tmp_path / "dd", "dev")
    with pytest.raises(ValueError, match="split= is required; splits present: train, test"):
        load_split(tmp_path / "dd", None)


def test_hub_name_needs_a_split() -> None:
    with pytest.raises(ValueError, match="pass split="):
        load_split("someone/some-dataset", None)


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
