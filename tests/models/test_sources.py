"""Model source strings, local/hf checkpoints, the USE-m3 wrapper."""

from __future__ import annotations

import numpy as np
import pytest

from pathlib import Path

from xlt.models import EncoderConfig, load_encoder, parse_source
from xlt.models.sources import FROZEN


@pytest.mark.parametrize("bad, match", [
    ("xlm-roberta-base", "of the form <kind>:<name>"),
    ("s3:model", "of the form <kind>:<name>"),
    ("bundled:labse", "valid: bundled:multilingual-e5-small, bundled:use-multilingual-v3"),
    ("tiny:gpt", "valid: tiny:bert, tiny:xlm-roberta"),
    ("hf:", "of the form"),
])
def test_parse_source_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        parse_source(bad)


def test_parse_source_roundtrip():
    assert str(parse_source("hf:sentence-transformers/LaBSE")) == "hf:sentence-transformers/LaBSE"
    assert parse_source("local:/a:b").name == "/a:b"


def test_a_frozen_source_says_so_and_the_configs_ask_it_not_its_name():
    assert parse_source("bundled:use-multilingual-v3").frozen and EncoderConfig("bundled:use-multilingual-v3").frozen
    assert not any(EncoderConfig(s).frozen for s in ("bundled:multilingual-e5-small", "tiny:bert", "hf:xlm-roberta-base"))
    # Outside models, a frozen source is named only as a default; checks ask the capability.
    root = Path(__file__).resolve().parents[2] / "platform" / "xlt"
    named = [str(p.relative_to(root)) for p in root.rglob("*.py") if p.parent.name != "models"
             and any(f'"{source}"' in p.read_text(encoding="utf-8") for source in FROZEN)]
    assert sorted(named) == ["cotrain/config.py", "eval/protocols.py"]


def test_saved_checkpoint_loads_as_local_and_hf_path(tmp_path):
    """The hub loading code path (hf:) is the same from_pretrained call; a local dir exercises it offline."""
    enc = load_encoder(EncoderConfig(source="tiny:xlm-roberta", pooling="mean"))
    enc.save(tmp_path)
    texts = ["bonjour", "hello there", "日本語"]
    want = enc.encode(texts)
    for source in (f"local:{tmp_path}", f"hf:{tmp_path}"):
        got = load_encoder(EncoderConfig(source=source, pooling="mean")).encode(texts)
        assert np.allclose(got, want, atol=1e-6), source


def test_saved_pooling_and_prefix_are_the_local_defaults(tmp_path):
    enc = load_encoder(EncoderConfig(source="tiny:bert", pooling="mean", prefix="query: "))
    enc.save(tmp_path)
    back = load_encoder(f"local:{tmp_path}")
    assert (back.pooling, back.prefix) == ("mean", "query: ")
    assert np.allclose(back.encode(["hello"]), enc.encode(["hello"]), atol=1e-6)
    explicit = load_encoder(EncoderConfig(source=f"local:{tmp_path}", pooling="cls", prefix=""))
    assert (explicit.pooling, explicit.prefix) == ("cls", "")


def test_saved_masked_lm_wrapper_loads_as_the_backbone(tmp_path):
    from transformers import AutoModelForMaskedLM

    enc = load_encoder(EncoderConfig(source="tiny:xlm-roberta", pooling="mean"))
    mlm = AutoModelForMaskedLM.from_config(enc.backbone.config)
    setattr(mlm, mlm.base_model_prefix, enc.backbone)
    enc.save(tmp_path, model=mlm)
    assert np.allclose(load_encoder(f"local:{tmp_path}").encode(["hello"]), enc.encode(["hello"]), atol=1e-6)


def test_local_missing_checkpoint_says_what_is_expected(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_encoder(f"local:{tmp_path}")


def test_a_random_source_is_the_shape_of_a_checkpoint_without_its_weights(tmp_path):
    """``random:`` takes a checkpoint's config and tokenizer, no weights, and draws the weights from the seed."""
    from xlt.models.sources import write_random_source

    trained = load_encoder(EncoderConfig(source="tiny:xlm-roberta", pooling="mean"))
    trained.save(tmp_path / "trained")
    source = write_random_source(f"local:{tmp_path / 'trained'}", tmp_path / "shape")
    assert source == f"random:{tmp_path / 'shape'}"
    assert not [p.name for p in (tmp_path / "shape").iterdir() if p.suffix in (".safetensors", ".bin", ".pt")]
    a, b, c = (load_encoder(EncoderConfig(source=source, pooling="mean", seed=seed)) for seed in (1, 1, 2))
    shape = {k: v for k, v in a.backbone.config.to_dict().items() if k != "_name_or_path"}
    assert shape == {k: v for k, v in trained.backbone.config.to_dict().items() if k != "_name_or_path"}
    assert a.tokenizer("日本語 hello")["input_ids"] == trained.tokenizer("日本語 hello")["input_ids"]
    texts = ["bonjour", "日本語"]
    assert np.array_equal(a.encode(texts), b.encode(texts)) and not np.allclose(a.encode(texts), c.encode(texts))
    assert not np.allclose(a.encode(texts), trained.encode(texts))  # drawn, not the checkpoint's
    with pytest.raises(FileNotFoundError, match="random:.*no config.json.*tokenizer"):
        load_encoder(f"random:{tmp_path / 'absent'}")


def test_hf_unreachable_name_is_explained(monkeypatch):
    import huggingface_hub.constants

    # Offline mode, as on this machine: the hub is never contacted, so this cannot hang on retries.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(OSError, match="not reachable or the name is wrong"):
        load_encoder("hf:xlt-tests/definitely-not-a-model")


def test_tiny_is_deterministic_per_seed():
    a = load_encoder(EncoderConfig(source="tiny:bert", seed=1)).encode(["abc"])
    b = load_encoder(EncoderConfig(source="tiny:bert", seed=1)).encode(["abc"])
    c = load_encoder(EncoderConfig(source="tiny:bert", seed=2)).encode(["abc"])
    assert np.array_equal(a, b) and not np.allclose(a, c)


@pytest.mark.slow
def test_use_m3_is_frozen_and_multilingual():
    enc = load_encoder("bundled:use-multilingual-v3")
    assert not enc.trainable and enc.dim == 512
    v = enc.encode(["The weather is nice today.", "Il fait beau aujourd'hui.", "Stocks fell sharply."])
    assert v.shape == (3, 512) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2  # a translation is closer than an unrelated sentence


def test_use_m3_rejects_pooling():
    with pytest.raises(ValueError, match="fixed sentence encoder"):
        load_encoder(EncoderConfig(source="bundled:use-multilingual-v3", pooling="cls"))
