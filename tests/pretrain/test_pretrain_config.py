"""PretrainConfig: recipes fill objectives and batch settings; what is refused and why; the presets."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import REPO
from xlt.config import ConfigError, save_config
from xlt.losses import ObjectiveConfig
from xlt.losses.mlm import MLM_WEIGHT
from xlt.pretrain.config import RECIPES, load_pretrain_config

from .helpers import tiny_config


def test_recipes_fill_objectives_features_and_mlm_input():
    ml_ctl = tiny_config("ml-ctl")
    assert ml_ctl.objective_names == ("cross_zero_nce", "mlm") and ml_ctl.objectives[1].weight == MLM_WEIGHT
    assert (ml_ctl.batch.features, ml_ctl.batch.mlm_input) == ("cce", "monolingual")
    mgc = tiny_config("mgc")
    assert mgc.objective_names == ("word_hard_contrast", "span_contrast", "noisy_sentence_contrast", "mlm")
    assert (mgc.batch.features, mgc.batch.mlm_input) == ("pooled", "concatenated")
    assert tiny_config("veco2").objective_names == ("parallel_info_nce", "token_alignment", "mlm")
    # Objectives given replace the recipe's; its batch construction stays.
    info = tiny_config("ml-ctl", (ObjectiveConfig("parallel_info_nce", params={"temperature": 0.07}),))
    assert info.objective_names == ("parallel_info_nce",) and info.batch.features == "cce"
    custom = tiny_config("custom", (ObjectiveConfig("token_alignment", 2.0),))
    assert custom.batch.features == "pooled" and custom.batch.mlm_input is None
    assert custom.requires == {"src_tokens", "tgt_tokens", "src_mask", "tgt_mask", "alignment"}
    assert set(RECIPES) == {"ml-ctl", "mgc", "veco2"}


@pytest.mark.parametrize("change, match", [
    (dict(recipe="custom", objectives=()), "at least one objective with recipe custom"),
    (dict(objectives=(ObjectiveConfig("supervised_contrastive_alignment"),)), "labels belong to fine-tuning"),
    (dict(objectives=(ObjectiveConfig("mlm"), ObjectiveConfig("mlm"))), "each objective once"),
    (dict(objectives=(ObjectiveConfig("mlm", start_epoch=1),)), "start_epoch is fine-tuning's"),
])
def test_objectives_pretraining_cannot_train(change, match):
    with pytest.raises(ConfigError, match=match):
        dataclasses.replace(tiny_config(), **change)


def test_pretraining_keeps_its_last_epoch():
    from xlt.engine import OptimSettings

    with pytest.raises(ConfigError, match="optim.keep='best-dev' .*pretraining scores no labelled dev split"):
        dataclasses.replace(tiny_config(), optim=OptimSettings(keep="best-dev"))


def test_refusals_name_key_and_remedy():
    cfg = tiny_config()
    with pytest.raises(ConfigError, match="noisy positives have no word-positioned samples"):
        dataclasses.replace(tiny_config("mgc"), batch=dataclasses.replace(cfg.batch, features="cce"))
    with pytest.raises(ConfigError, match="frozen numpy encoder"):
        dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, source="bundled:use-multilingual-v3"))
    bitext = REPO / "configs" / "bitext"
    overrides = ["model.source=tiny:bert", f"data.sources=[{{include: {bitext}/tatoeba.yaml, langs: [de]}}]"]
    with pytest.raises(ConfigError, match="data.sources.1..split='test' .*train split only, never dev or test"):
        load_pretrain_config(None, overrides[:1] + [f"data.sources=[{{include: {bitext}/tatoeba.yaml}}, "
                                                    f"{{include: {bitext}/sib200.yaml, langs: [de], split: test}}]"])
    with pytest.raises(ConfigError, match="data.sources.0..tgt_lang='en' is not valid"):
        load_pretrain_config(None, overrides[:1] + [f"data.sources=[{{include: {bitext}/tatoeba.yaml, langs: [en]}}]"])
    with pytest.raises(ConfigError, match="missing key data for PretrainConfig"):
        load_pretrain_config(None, overrides[:1])
    with pytest.raises(ConfigError, match="data.eval_source=None is not valid: expected the pairs of data.eval_langs"):
        load_pretrain_config(None, overrides + ["data.eval_langs=[fr]"])
    with pytest.raises(ConfigError, match="data.eval_langs"):
        load_pretrain_config(None, overrides + ["data.eval_langs=[en]"])
    with pytest.raises(ConfigError, match="data.alpha"):
        load_pretrain_config(None, overrides + ["data.alpha=0"])
    with pytest.raises(ConfigError, match="optim.grad_accum_steps"):
        load_pretrain_config(None, overrides + ["optim.grad_accum_steps=0"])
    with pytest.raises(ConfigError, match="recipe"):
        load_pretrain_config(None, overrides + ["recipe=simcse"])
    with pytest.raises(ConfigError, match="optim.encoder_pass_rows=4 .*one encoder pass"):
        load_pretrain_config(None, overrides + ["optim.encoder_pass_rows=4"])


def test_steps_per_epoch_count_optimizer_steps():
    cfg = tiny_config(batch_size=4, grad_accum_steps=3)
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, train_rows=0))
    with pytest.raises(ConfigError, match="data.train_rows"):
        cfg.steps_per_epoch(1)
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, train_rows=50))
    assert cfg.steps_per_epoch(1) == 5  # 13 micro-batches, 3 per step
    assert cfg.steps_per_epoch(2) == 3  # 25 pairs per worker: 7 micro-batches


@pytest.mark.parametrize("preset", ["pretrain_veco2", "pretrain_ml_ctl", "pretrain_mgc"])
def test_presets_load_alone_and_with_the_smoke_preset(preset, tmp_path):
    cfg = load_pretrain_config(REPO / "configs" / f"{preset}.yaml")
    assert cfg.model.source == "bundled:multilingual-e5-small" and cfg.data.eval_langs == ("fr", "ar", "sw")
    assert [(s.name, s.type, s.langs) for s in cfg.data.sources] == [
        ("tatoeba", "lines", ("de", "es", "ru", "zh", "hi", "ja")), ("sib200", "task", ("de", "es", "ru", "zh", "hi", "ja"))]
    assert cfg.data.eval_source.name == "tatoeba" and [t.name for t in cfg.data.eval_tasks] == ["sib200"]
    assert cfg.optim.grad_accum_steps == 4
    smoke = load_pretrain_config(REPO / "configs" / f"{preset}.yaml", smoke=REPO / "configs" / "pretrain_smoke.yaml")
    assert smoke.model.source == "tiny:bert" and smoke.objectives == cfg.objectives
    save_config(smoke, tmp_path / "config.yaml")
    assert load_pretrain_config(tmp_path / "config.yaml") == smoke  # a saved config reads back equal
