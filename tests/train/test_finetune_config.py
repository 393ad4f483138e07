"""FinetuneConfig validation, presets, resolution against the data, the results table."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from presets import task
from xlt.config import ConfigError, from_dict
from xlt.resume import incompatible_changes
from xlt.train.config import FinetuneConfig, load_finetune_config
from xlt.train.data import train_dataset
from xlt.train.trainer import prepare, results_rows

from .helpers import tiny_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SIB200 = CONFIGS / "finetune_sib200.yaml"


def test_round_trips_through_asdict_as_ray_passes_it():
    cfg = load_finetune_config(CONFIGS / "finetune_sib200_scl.yaml")
    assert from_dict(FinetuneConfig, dataclasses.asdict(cfg)) == cfg
    assert cfg.objectives[0].name == "supervised_contrastive_alignment"
    assert (cfg.optim.lr, cfg.optim.weight_decay, cfg.optim.batch_size, cfg.model.max_length) == (5e-5, 0.01, 16, 128)


def test_smoke_preset_merges_over_a_preset_and_set_wins():
    cfg = load_finetune_config(CONFIGS / "finetune_sib200_scl.yaml", ["optim.epochs=1"], smoke=CONFIGS / "smoke.yaml")
    assert cfg.model.source == "tiny:bert" and cfg.optim.epochs == 1 and cfg.data.max_examples == 16
    assert cfg.objectives == load_finetune_config(CONFIGS / "finetune_sib200_scl.yaml").objectives
    assert load_finetune_config(SIB200).data.setting == "zero-shot"
    for name in ("xnli", "pawsx", "nusax"):  # every preset loads, with its task included
        cfg = load_finetune_config(CONFIGS / f"finetune_{name}.yaml", smoke=CONFIGS / "smoke.yaml")
        assert cfg.task.name == name and cfg.task.paired == (name != "nusax")


@pytest.mark.parametrize("overrides, message", [
    (["objectives=[{name: parallel_info_nce}]"], "also needs src_features, tgt_features"),
    (["objectives=[{name: supcon}]"], "name='supcon' is not valid"),
    (["task.target_langs=[en, de]"], "languages other than the source language 'en'"),
    (["task.target_langs=[xx]"], "task.target_langs: unknown language code 'xx'"),
    (["task.type=csv"], "task.type='csv' is not valid: expected one of files, hf"),
    (["task.link=id", "task.fields.id=null"], "unless fields.id names an id column"),
    (["data.setting=few-shot"], "one of 'zero-shot', 'translate-train'"),
    (["data.augment_actors=-1"], r"data.augment_actors=-1 is not valid: expected an integer >= 0 \(0 = in the process"),
    (["optim.lr=0"], "optim.lr=0.0 is not valid"),
    (["optim.shuffle_buffer=4"], "at least the batch size 16"),
    (["optim.encoder_pass_rows=-1"], "optim.encoder_pass_rows=-1 is not valid"),
    (["optim.precision=fp8"], "optim.precision='fp8' is not valid: expected one of auto, fp32, bf16, fp16"),
    (["scaling.num_workers=-1"], r"scaling.num_workers=-1 is not valid: expected an integer >= 0 \(0 = in the job.s own process\)"),
    (["model.source=bundled:use-multilingual-v3", "objectives=[{name: supervised_contrastive_alignment}]"],
     "none with the frozen bundled:use-multilingual-v3"),
    (["evals=[{type: retrieval, split: val, data: tatoeba}]"],
     r"evals\[val\]='retrieval on tatoeba' is not valid: expected one of classification on val"),
    (["optim.keep=best"], "optim.keep='best' is not valid: expected last or best-dev"),
    (["optim.patience=2"], "0 unless optim.keep is best-dev"),
    (["optim.keep=best-dev", "evals=[{type: classification, split: test}]"],
     "best-dev keeps the epoch of the best en dev accuracy"),
    (["optim.keep=best-dev", "optim.probe_epochs=1", "optim.wise_alpha=0.5"], "last under WiSE-FT"),
])
def test_bad_values_are_named(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_finetune_config(SIB200, overrides)


def test_a_config_without_a_task_says_so():
    with pytest.raises(ConfigError, match="task"):
        load_finetune_config(None, [])


def test_codes_are_normalised():
    cfg = load_finetune_config(SIB200, ["task.source_lang=eng_Latn", "task.target_langs=[deu_Latn, zho_Hans]"])
    assert (cfg.task.source_lang, cfg.task.target_langs) == ("en", ("de", "zh"))


def test_steps_per_epoch_follow_the_equal_split():
    cfg = tiny_config()  # 4 rows, batch 4
    assert cfg.steps_per_epoch(1) == 1
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, train_rows=37))
    assert cfg.steps_per_epoch(2) == 5  # 18 rows per worker -> 4 full batches + 1
    with pytest.raises(ConfigError, match="at most the number of train rows"):
        cfg.steps_per_epoch(38)


def test_resuming_may_change_length_not_content():
    cfg = tiny_config()
    longer = dataclasses.replace(cfg, optim=dataclasses.replace(cfg.optim, epochs=5))
    other = dataclasses.replace(cfg, optim=dataclasses.replace(cfg.optim, lr=1e-3, epochs=5))
    assert incompatible_changes(cfg, longer) == []
    assert incompatible_changes(cfg, other) == ["optim.lr"]
    passes = dataclasses.replace(cfg, optim=dataclasses.replace(cfg.optim, encoder_pass_rows=16))
    assert incompatible_changes(cfg, passes) == []  # how the encoder reads a step, not what it learns


def test_translate_train_adds_the_translations_of_the_same_sentences(data_dir):
    prepared = prepare(load_finetune_config(SIB200, [f"data.data_dir={data_dir}", "data.max_examples=5",
                                                     "task.target_langs=[de, zh]", "data.setting=translate-train"]))
    cfg, rows = prepared.config, prepared.train
    assert cfg.data.train_rows == len(rows) == 15 and [r["lang"] for r in rows] == ["en"] * 5 + ["de"] * 5 + ["zh"] * 5
    label_of = {r["source_id"]: r["label"] for r in rows[:5]}
    assert all(label_of[r["source_id"]] == r["label"] for r in rows[5:])
    assert "views" not in rows[0]


def test_augmented_views_are_made_once_from_the_train_split(data_dir, ray_cluster):
    prepared = prepare(load_finetune_config(SIB200, [
        f"data.data_dir={data_dir}", "data.max_examples=4", "task.target_langs=[de]",
        "data.setting=translate-train", "data.augment={t_f: 2, t_p: 1, t_c: 1, languages: [fr, zh], partial_languages: [fr],"
        " codeswitch_languages: [zh-Hant], seed: 3}"]))
    cfg, rows = prepared.config, prepared.train
    assert len(rows) == 8 and cfg.task.labels
    ds = train_dataset(cfg.data, prepared.task, rows)
    # Made once, here: what each epoch reads holds the views (no augmentation step left to run).
    assert "CrossLingualAugment" not in str(ds) and "MapBatches" not in str(ds), str(ds)
    out = ds.take_all()
    assert sorted(r["id"] for r in out) == sorted(r["id"] for r in rows)  # one row per example
    sib = task("sib200", data_dir)
    train = {(ex.lang, ex.source_id): ex.text for lang in ("fr", "zh") for ex in sib.examples("train", lang)}
    for row in out:
        if row["lang"] == "de":  # translate-train rows are already translated: no views
            assert list(row["views"]) == [] and row["view_pairs"] is None
            continue
        assert list(row["view_kinds"]) == ["full", "full", "partial", "codeswitch"]
        full = [(lang, view) for lang, view, kind in zip(row["view_langs"], row["views"], row["view_kinds"])
                if kind == "full"]
        assert sorted(lang for lang, _ in full) == ["fr", "zh"]  # two full views: distinct languages
        assert all(view == train[(lang, row["source_id"])] for lang, view in full)


@pytest.mark.ray  # train_dataset builds a Ray Dataset, which starts Ray
def test_augmentation_languages_are_checked(data_dir):
    with pytest.raises(ConfigError, match=r"data\.augment\.t_c=-1"):
        load_finetune_config(SIB200, ["data.augment={t_c: -1, languages: [de]}"])
    with pytest.raises(ConfigError, match="data.augment.source_lang"):
        load_finetune_config(SIB200, ["data.augment={languages: [de], source_lang: fr}"])
    prepared = prepare(load_finetune_config(SIB200, [f"data.data_dir={data_dir}", "data.max_examples=2",
                                                     "data.augment={t_f: 0, t_p: 0, t_c: 1, languages: [sw]}"]))
    with pytest.raises(FileNotFoundError, match="en-sw.txt does not exist"):
        train_dataset(prepared.config.data, prepared.task, prepared.train)


def test_missing_language_is_reported(data_dir):
    with pytest.raises(ConfigError, match="no data for ko under .* languages found: ar, de"):
        prepare(load_finetune_config(SIB200, [f"data.data_dir={data_dir}", "task.target_langs=[ko]"]))


def test_results_rows_source_first_then_targets_then_summary():
    metrics = {"val/acc/en": 0.9, "val/acc/de": 0.8, "val/acc/zh": 0.6, "val/acc/avg_target": 0.7,
               "val/transfer_gap": 0.2, "test/acc/en": 0.85, "test/acc/de": 0.75, "test/acc/zh": 0.55,
               "test/acc/avg_target": 0.65, "test/transfer_gap": 0.2, "train/loss/ce": 0.1}
    metrics |= {"val/f1/de": 0.7, "val/transfer_gap_f1": 0.3}
    rows = results_rows(metrics, "en")
    assert [r["lang"] for r in rows] == ["en", "de", "zh", "avg_target", "transfer_gap"]
    assert rows[1] == {"lang": "de", "val acc": 0.8, "val f1": 0.7, "test acc": 0.75, "test f1": None}
    assert rows[-1]["val f1"] == 0.3 and rows[-1]["test acc"] == 0.2
    with pytest.raises(ValueError, match="no score for the source language 'fr'"):
        results_rows(metrics, "fr")


def test_semantic_alignment_needs_b_full_views_and_translations():
    sa = "objectives=[{name: semantic_alignment, params: {b: 1}}]"
    with pytest.raises(ConfigError, match="params.b"):
        load_finetune_config(SIB200, ["objectives=[{name: semantic_alignment}]"])
    with pytest.raises(ConfigError, match="data.augment.t_f=0 is not valid: expected at least b=1 full-translation"):
        load_finetune_config(SIB200, [sa])
    with pytest.raises(ConfigError, match="task.link='none' is not valid"):
        load_finetune_config(SIB200, [sa, "task.link=none", "data.augment={t_f: 1, t_p: 0, t_c: 0, languages: [de]}"])
    cfg = load_finetune_config(SIB200, [sa, "data.augment={t_f: 1, t_p: 0, t_c: 0, languages: [de]}"])
    assert cfg.objectives[0].params == {"b": 1}


def test_semantic_alignment_gets_a_gradient_in_a_fine_tuning_step():
    from xlt.losses import ObjectiveConfig
    from xlt.train.batches import flatten_batch
    from xlt.train.workload import finetune_training, compute_losses

    from .helpers import LABELS, tiny_config

    from xlt.augment import AugmentConfig

    cfg = tiny_config((ObjectiveConfig("semantic_alignment", params={"b": 1}),),
                      augment=AugmentConfig(t_f=1, t_p=0, t_c=0, languages=("de",)))
    training = finetune_training(cfg, steps_per_epoch=1)
    rows = [{"text": f"sentence {i} about {LABELS[i % 3]}", "label": LABELS[i % 3], "lang": "en",
             "views": [f"Satz {i} über {LABELS[i % 3]}"], "view_kinds": ["full"], "view_langs": ["de"]}
            for i in range(4)]
    batch = flatten_batch({k: [r[k] for r in rows] for k in rows[0]}, training.label_index)
    total, parts = compute_losses(training.model, training.objectives, batch)
    assert parts["semantic_alignment"].item() > 0
    parts["semantic_alignment"].backward()
    grads = [p.grad for p in training.classifier.encoder.parameters() if p.grad is not None]
    assert grads and sum(float(g.abs().sum()) for g in grads) > 0


def test_the_translator_of_full_views_is_chosen_in_config(data_dir):
    from xlt.translate import DictionaryTranslator, ProvidedTranslations, Seq2SeqTranslator
    from xlt.train.data import augmentation_sources

    augment = "data.augment={t_f: 1, t_p: 0, t_c: 0, languages: [de, fr]}"
    base = [f"data.data_dir={data_dir}", "data.max_examples=4", "task.target_langs=[de, fr]", augment]
    chosen = {}
    for translator in ("provided", "dictionary", "seq2seq"):
        extra = ["data.translator_model=Helsinki-NLP/opus-mt-en-{lang}"] if translator == "seq2seq" else []
        prepared = prepare(load_finetune_config(SIB200, [*base, f"data.translator={translator}", *extra]))
        chosen[translator] = augmentation_sources(prepared.config.data, prepared.task)["translator"]
    assert isinstance(chosen["provided"], ProvidedTranslations) and chosen["provided"].supports("en", "fr")
    assert isinstance(chosen["dictionary"], DictionaryTranslator) and chosen["dictionary"].supports("en", "de")
    seq2seq = chosen["seq2seq"]  # loads its models on first use only
    assert isinstance(seq2seq, Seq2SeqTranslator) and seq2seq.supports("en", "fr") and not seq2seq.supports("en", "ja")
    with pytest.raises(ConfigError, match="data.translator_model"):
        load_finetune_config(SIB200, ["data.translator=seq2seq"])
