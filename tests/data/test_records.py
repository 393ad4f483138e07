from __future__ import annotations

import dataclasses
import pickle

import pytest

from xlt.data.errors import DataError
from xlt.data.records import Example, ParallelPair, as_rows


def test_example_is_frozen_and_validated() -> None:
    ex = Example(id="a/0", text="Hallo", lang="de", label="travel", source_id="7")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ex.text = "x"  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"Example\.text must be a non-empty string"):
        Example(id="a/1", text="  ", lang="de")
    with pytest.raises(ValueError, match=r"Example\.label"):
        Example(id="a/1", text="Hallo", lang="de", label="")
    with pytest.raises(ValueError, match=r"ParallelPair\.tgt"):
        ParallelPair(id="p", src="Hallo", tgt="", src_lang="de", tgt_lang="en")


def test_as_rows() -> None:
    rows = as_rows([Example(id="a/0", text="Hallo", lang="de"), Example(id="a/1", text="Hi", lang="en", label="x")])
    assert rows == [
        {"id": "a/0", "text": "Hallo", "lang": "de", "label": None, "text_pair": None, "source_id": None},
        {"id": "a/1", "text": "Hi", "lang": "en", "label": "x", "text_pair": None, "source_id": None},
    ]
    pair = ParallelPair(id="p", src="Hallo", tgt="Hello", src_lang="de", tgt_lang="en")
    assert as_rows([pair]) == [{"id": "p", "src": "Hallo", "tgt": "Hello", "src_lang": "de", "tgt_lang": "en"}]
    with pytest.raises(TypeError, match="record 1 is ParallelPair but record 0 is Example"):
        as_rows([Example(id="a/0", text="Hallo", lang="de"), pair])
    with pytest.raises(TypeError, match="record 0 is dict"):
        as_rows([{"text": "x"}])  # type: ignore[list-item]


def test_data_error_format_and_pickle() -> None:
    err = DataError("data/x.tsv", 12, "empty text")
    assert str(err) == "data/x.tsv:12: empty text"
    assert str(DataError("a.txt", None, "too short")) == "a.txt: too short"
    assert isinstance(err, ValueError)
    again = pickle.loads(pickle.dumps(err))  # Ray pickles exceptions raised in tasks
    assert str(again) == str(err) and again.line == 12 and again.path == "data/x.tsv"
