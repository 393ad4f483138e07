"""``EncoderConfig`` -> encoder: the one function every job uses to get a model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..config import check
from .encoder import ENCODER_DEFAULTS_FILE, TextEncoder, TransformerEncoder, UseEncoder
from .sources import parse_source

# Defaults each source's authors intended. e5 was trained with "query: " / "passage: "
# prefixes and mean pooling; its model card asks for "query: " on symmetric tasks such as
# classification and bitext mining.
SOURCE_DEFAULTS = {
    "bundled:multilingual-e5-small": {"pooling": "mean", "prefix": "query: "},
}
GENERIC_DEFAULTS = {"pooling": "cls", "prefix": ""}


@dataclass(frozen=True)
class EncoderConfig:
    """Which model and how to pool it. ``pooling``/``prefix`` of ``None`` take the source's defaults
    (for a ``local:`` checkpoint saved by ``TransformerEncoder.save``: the ones it was saved with)."""

    source: str = "bundled:multilingual-e5-small"
    pooling: Literal["cls", "mean", "avg_first_last"] | None = None
    layer: int = -1
    max_length: int = 128
    prefix: str | None = None
    seed: int = 0  # initialisation of random: and tiny: models
    # How a sentence pair becomes one vector (``xlt.models.encoder``): ``auto`` encodes pairs jointly
    # with a transformer and combines [u; v; |u-v|; u*v] with a fixed sentence encoder (USE).
    # ``combine`` uses a transformer such as LaBSE as a sentence encoder of each side.
    pair_encoding: Literal["auto", "joint", "combine"] = "auto"

    def __post_init__(self) -> None:
        parse_source(self.source)  # raises with the valid forms
        check(self.max_length >= 8, "max_length", self.max_length, "an integer >= 8")

    @property
    def frozen(self) -> bool:
        """The encoder is frozen as a whole (``xlt.models.sources.FROZEN``): no objective or word
        embedding setting of it trains anything."""
        return parse_source(self.source).frozen

    def resolved(self) -> dict[str, str]:
        defaults = SOURCE_DEFAULTS.get(self.source) or saved_defaults(self.source) or GENERIC_DEFAULTS
        return {"pooling": self.pooling or defaults["pooling"],
                "prefix": defaults["prefix"] if self.prefix is None else self.prefix}


def saved_defaults(source: str) -> dict[str, str] | None:
    """Pooling and prefix recorded beside a ``local:`` checkpoint by ``TransformerEncoder.save``
    (an encoder pretrained from e5 keeps e5's "query: " and mean pooling), else ``None``."""
    spec = parse_source(source)
    path = Path(spec.name).expanduser() / ENCODER_DEFAULTS_FILE
    if spec.kind != "local" or not path.is_file():
        return None
    saved = json.loads(path.read_text(encoding="utf-8"))
    return {"pooling": saved.get("pooling", GENERIC_DEFAULTS["pooling"]),
            "prefix": saved.get("prefix", GENERIC_DEFAULTS["prefix"])}


def load_encoder(cfg: EncoderConfig | str) -> TextEncoder:
    """Build the encoder named by ``cfg`` (or by a bare source string with its defaults)."""
    if isinstance(cfg, str):
        cfg = EncoderConfig(source=cfg)
    spec = parse_source(cfg.source)
    if str(spec) == "bundled:use-multilingual-v3":
        if cfg.pooling is not None or cfg.prefix or cfg.pair_encoding == "joint":
            raise ValueError("bundled:use-multilingual-v3 is a fixed sentence encoder: pooling, prefix and joint "
                             f"pair encoding cannot be set (got pooling={cfg.pooling!r}, prefix={cfg.prefix!r}, "
                             f"pair_encoding={cfg.pair_encoding!r})")
        return UseEncoder()
    from .sources import load_transformer

    backbone, tokenizer = load_transformer(spec, seed=cfg.seed)
    r = cfg.resolved()
    return TransformerEncoder(backbone, tokenizer, pooling=r["pooling"], layer=cfg.layer,
                              max_length=cfg.max_length, prefix=r["prefix"],
                              pair_encoding="combine" if cfg.pair_encoding == "combine" else "joint")


