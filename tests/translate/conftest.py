"""A tiny local MarianMT for the seq2seq translator and the translation UDF."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="package")
def tiny_marian(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised 1-layer, 16-wide MarianMT with a byte-level tokenizer, saved locally.

    Its translations are gibberish; the plumbing (tokenize, batch, generate, decode) is real.
    The tokenizer also has the FLORES tokens deu_Latn / fra_Latn, so it can play an NLLB-style
    multilingual model.
    """
    import torch
    from transformers import MarianConfig, MarianMTModel

    from xlt.models.tiny import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    tokenizer.add_tokens(["deu_Latn", "fra_Latn"], special_tokens=True)
    config = MarianConfig(
        vocab_size=len(tokenizer), d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id, forced_eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-marian")
    MarianMTModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# min_new_tokens: a random model may emit </s> at once; the tests want a non-empty output.
GEN = {"min_new_tokens": 3}
