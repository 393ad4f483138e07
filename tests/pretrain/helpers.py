"""Hand-built pairs, annotation and configs shared by the pretraining tests (tiny:bert, byte-level:
token p + 1 is byte p of the text, one token per ASCII character)."""

from __future__ import annotations

import dataclasses

from presets import bitext
from xlt.data import BilingualDictionary, as_rows
from xlt.losses import ObjectiveConfig
from xlt.models import EncoderConfig
from xlt.pretrain.batches import PairAnnotator
from xlt.engine import OptimSettings
from xlt.pretrain.config import PretrainConfig, PretrainData

from .conftest import EN_DE, pair

CAT = pair("The cat sees the red house.", "Die Katze sieht das rote Haus.", id="cat")
DOG = pair("Hello dog.", "Hallo Hund.", id="dog")
NONE = pair("Hello.", "Hallo.", id="none")  # no dictionary word: no sample, no alignment
TINY = EncoderConfig(source="tiny:bert", pooling="mean", max_length=64)


def tiny_config(recipe: str = "veco2", objectives: tuple[ObjectiveConfig, ...] = (), **optim) -> PretrainConfig:
    """A resolved config over tiny:bert (no data on disk needed)."""
    return PretrainConfig(model=TINY, recipe=recipe, objectives=objectives,
                          data=PretrainData(sources=(bitext("tatoeba", langs=("de",)),), train_rows=4),
                          optim=OptimSettings(**{"batch_size": 2, "epochs": 1, "freeze_word_embeddings": False, **optim}))


def annotated(cfg: PretrainConfig, pairs=(CAT, DOG, NONE)) -> list[dict]:
    """``pairs`` as rows with the annotation ``cfg``'s recipe needs (the UDF called by hand)."""
    annotator = PairAnnotator(cfg.model, cfg.requires, cfg.batch.features, [BilingualDictionary(EN_DE, "en", "de")],
                              seed=cfg.optim.seed)
    rows = as_rows(pairs)
    out = annotator({k: [r[k] for r in rows] for k in rows[0]})
    return [{k: v[i] for k, v in out.items()} for i in range(len(rows))]


def with_rows(cfg: PretrainConfig, n: int) -> PretrainConfig:
    return dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, train_rows=n))
