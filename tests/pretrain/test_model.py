"""The pretraining model computes exactly the Outputs its objectives require; MLM head; export."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from xlt.losses import ObjectiveConfig
from xlt.losses.mlm import IGNORE_INDEX
from xlt.models import EncoderConfig, load_encoder
from xlt.pretrain.batches import PretrainBatcher, keep_row, tokenization_of
from xlt.pretrain.model import build_model

from .helpers import annotated, tiny_config

RECIPES = ["ml-ctl", "mgc", "veco2"]


def batch_of(cfg, model):
    rows = [r for r in annotated(cfg) if keep_row(r)]
    batcher = PretrainBatcher(tokenization_of(cfg.model), model.requires, cfg.batch.features, cfg.batch.mlm_input)
    return batcher(rows, generator=torch.Generator().manual_seed(0), draw_seed="0:0"), len(rows)


@pytest.mark.parametrize("recipe", RECIPES)
def test_outputs_are_what_the_objectives_require(recipe):
    torch.manual_seed(0)
    cfg = tiny_config(recipe)
    model = build_model(cfg)
    batch, n = batch_of(cfg, model)
    out = model.outputs(batch)
    assert set(out) == model.objectives.requires == cfg.requires
    D = model.encoder.dim
    for key in ("src_features", "tgt_features", "src_noisy_features", "tgt_noisy_features"):
        if key in out:
            assert out[key].shape == (n, D)
    if "src_tokens" in out:
        L = batch["input_ids"].shape[1]
        assert out["src_tokens"].shape == out["tgt_tokens"].shape == (n, L, D)
        assert out["src_mask"].dtype == torch.bool and torch.equal(out["tgt_mask"], batch["token_mask"][n:2 * n])
    predicted = batch["mlm_labels"] != IGNORE_INDEX
    assert out["mlm_logits"].shape == (1, int(predicted.sum()), len(model.encoder.tokenizer))
    total, parts = model(batch)
    assert torch.isfinite(total) and set(parts) == set(cfg.objective_names)
    total.backward()
    assert model.encoder.backbone.get_input_embeddings().weight.grad is not None
    assert all(p.grad is not None for p in model.mlm_head.parameters())
    if recipe == "ml-ctl":
        assert model.cce.proj.weight.grad is not None


def test_mlm_on_the_predicted_positions_equals_the_full_loss():
    torch.manual_seed(0)
    cfg = tiny_config("veco2")
    model = build_model(cfg).eval()
    batch, _ = batch_of(cfg, model)
    out = model.outputs(batch)
    hidden = model.encoder.backbone(input_ids=batch["mlm_input_ids"],
                                    attention_mask=batch["mlm_attention_mask"]).last_hidden_state
    full = model.mlm_head(hidden)  # (B, L, V)
    want = F.cross_entropy(full.flatten(0, 1), batch["mlm_labels"].flatten(), ignore_index=IGNORE_INDEX)
    got = model.objectives.objectives["mlm"](out)
    assert torch.allclose(got, want, atol=1e-5)


def test_lm_decoder_is_tied_to_the_word_embeddings():
    model = build_model(tiny_config("veco2"))
    decoder = [m for m in model.mlm_head.modules() if isinstance(m, torch.nn.Linear)][-1]
    assert decoder.weight is model.encoder.backbone.get_input_embeddings().weight
    frozen = build_model(tiny_config("veco2", freeze_word_embeddings=True))
    assert not frozen.encoder.backbone.get_input_embeddings().weight.requires_grad


def test_export_is_a_local_encoder_that_keeps_the_trained_head(tmp_path):
    torch.manual_seed(0)
    cfg = tiny_config("veco2")
    model = build_model(cfg)
    with torch.no_grad():
        for p in model.mlm_head.parameters():
            p.add_(0.5)  # a head that is neither the fresh initialisation nor the embeddings
    model.export(tmp_path / "encoder")
    texts = ["The cat sees the red house.", "Die Katze sieht das rote Haus."]
    local = EncoderConfig(source=f"local:{tmp_path / 'encoder'}")
    loaded = load_encoder(local)
    assert (loaded.pooling, loaded.prefix) == ("mean", "")
    assert np.allclose(loaded.encode(texts), model.encoder.encode(texts), atol=1e-5)
    again = build_model(dataclasses.replace(cfg, model=local))  # further pretraining starts from the trained head
    for (name, want), got in zip(model.mlm_head.state_dict().items(), again.mlm_head.state_dict().values()):
        assert torch.allclose(got, want), name


def test_soft_word_contrast_takes_its_sizes_from_the_encoder():
    cfg = tiny_config("mgc", (ObjectiveConfig("word_soft_contrast"), ObjectiveConfig("span_contrast"),
                              ObjectiveConfig("noisy_sentence_contrast"), ObjectiveConfig("mlm")))
    model = build_model(cfg)
    attention = model.objectives.objectives["word_soft_contrast"].attention
    assert (attention.embed_dim, attention.num_heads) == (32, 2)  # tiny: hidden 32, 2 heads
    batch, _ = batch_of(cfg, model)
    total, parts = model(batch)
    total.backward()
    assert torch.isfinite(total) and attention.in_proj_weight.grad is not None
