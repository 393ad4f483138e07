"""``TranslateUDF`` by hand on a numpy batch and ``translate_dataset`` as an actor pool (tiny local Marian)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xlt.data.ray_data import to_ray_dataset
from xlt.data.records import Example
from xlt.translate import Seq2SeqTranslator, TranslateUDF, translate_dataset

from .conftest import GEN


def test_translate_udf_by_hand_and_as_actor_pool(ray_cluster, tiny_marian: Path) -> None:
    t = Seq2SeqTranslator({"de": tiny_marian}, batch_size=4, max_new_tokens=5, generate_kwargs=GEN)
    examples = [Example(id=f"e{i}", text=f"Sentence number {i} " + "word " * (i % 5), lang="en", label="a",
                        source_id=str(i)) for i in range(12)]
    expected = t.translate([e.text for e in examples], "en", "de")

    udf = TranslateUDF(t, "en", "de")
    batch = {"id": np.array(["a", "b"], dtype=object), "text": np.array([examples[0].text, examples[1].text],
                                                                         dtype=object)}
    assert list(udf(batch)["translation"]) == expected[:2]

    ds = translate_dataset(to_ray_dataset(examples), t, "en", "de", batch_size=4, num_actors=1)
    rows = sorted(ds.take_all(), key=lambda r: int(r["source_id"]))
    assert [r["translation"] for r in rows] == expected
    assert all(r["text_pair"] is None and r["label"] == "a" for r in rows)  # other columns untouched
    with pytest.raises(ValueError, match="cannot translate en->fr"):
        TranslateUDF(t, "en", "fr")
