"""The baselines' rows are exactly their job's: a co-training config's labelled draw and evaluation rows, a
fine-tuning config's train draw and scored split; and a study of a co-training job takes baselines."""

from __future__ import annotations

from dataclasses import asdict

from conftest import REPO
from xlt.cotrain import load_cotrain_config, prepare
from xlt.study import load_study
from xlt.study.recipes import job_rows
from xlt.train.config import load_finetune_config
from xlt.train.data import eval_rows


def test_a_co_training_jobs_rows_are_its_labelled_draw_and_its_evaluation_rows(data_dir):
    cfg = load_cotrain_config(REPO / "configs" / "cotrain_demo.yaml", [f"data.data_dir={data_dir}",
                                                                       "data.max_examples=40"])
    rows = job_rows("cotrain", asdict(cfg), "test")
    prepared = prepare(cfg)
    assert [ex.id for ex in rows.train] == [r["id"] for r in prepared.labeled] and len(rows.train) == 30  # 0.75 of 40
    assert [(lang, ex.id) for lang, examples in rows.scored.items() for ex in examples] == \
        [(r["lang"], r["id"]) for r in prepared.evaluation_rows]
    assert {ex.id for ex in rows.dev}.isdisjoint(ex.id for ex in rows.train) and rows.model == cfg.lm.model
    predicted = rows.predictions({lang: [0] * len(examples) for lang, examples in rows.scored.items()})
    assert set(predicted["predicted"]) == {rows.task.labels[0]} and predicted["id"][:3] == [ex.id for ex in rows.scored["en"][:3]]
    from xlt.cotrain.pool import pool_rows  # an adapted probe's pools: the rows co-training pseudo-labels

    assert {lang: [ex.id for ex in examples] for lang, examples in rows.pools().items()} == \
        {lang: [r["id"] for r in pool_rows(prepared.task, lang, 40)] for lang in prepared.targets}


def test_a_fine_tuning_jobs_rows_are_its_train_draw_and_the_scored_split(data_dir):
    cfg = load_finetune_config(REPO / "configs" / "finetune_nusax.yaml", [f"data.data_dir={data_dir}",
                                                                          "data.max_examples=20"])
    rows = job_rows("finetune", asdict(cfg), "val")
    assert [ex.id for ex in rows.train] == [ex.id for ex in rows.task.examples("train", "en", 20)]
    assert [(lang, ex.id) for lang, examples in rows.scored.items() for ex in examples] == \
        [(r["lang"], r["id"]) for r in eval_rows(rows.task, "dev", 20)]
    assert rows.freeze_word_embeddings and rows.model == cfg.model


def test_every_baselines_study_names_the_probes_ce_and_its_declared_recipe():
    for path in sorted((REPO / "studies").glob("baselines_*.yaml")):
        study = load_study(path)
        recipes = {v.name: v.recipe for v in study.variants}
        assert {"declared": "job", "probe-e5": "probe", "probe-use": "probe", "ce": "job"}.items() <= recipes.items()
        declared, ce = ("declared/lm", "ce/lm") if study.job == "cotrain" else ("declared", "ce")
        assert {(c.a, c.b) for c in study.comparisons} >= {(declared, "probe-e5"), (declared, "probe-use"),
                                                          (declared, ce)}, path.name


def test_setfits_adapted_head_is_the_adapted_probe_on_the_tuned_bodys_embeddings(data_dir):
    import numpy as np

    from xlt.eval.adaptation import ProbeAdaptation, adapted_probe
    from xlt.eval.protocols import EvaluateConfig
    from xlt.eval.baselines import probe_labels

    cfg = load_cotrain_config(REPO / "configs" / "cotrain_demo.yaml", [f"data.data_dir={data_dir}",
                                                                       "data.max_examples=40"])
    rows = job_rows("cotrain", asdict(cfg), "test")
    rng = np.random.default_rng(0)
    table: dict[str, np.ndarray] = {}

    def embed(examples):  # a stand-in body: a fixed random vector per row, nudged by its label where it is English
        for ex in examples:
            if ex.id not in table:
                table[ex.id] = rng.normal(size=8)
                if ex.lang == "en":
                    table[ex.id][rows.task.labels.index(ex.label)] += 1.0
        return np.stack([table[ex.id] for ex in examples])

    adapt = ProbeAdaptation(center=True, rounds=1)
    got, _ = probe_labels(rows, embed, EvaluateConfig(task=rows.task.config, progress=False, adapt=adapt))
    gold = lambda examples: np.array([rows.task.labels.index(ex.label) for ex in examples])  # noqa: E731
    probe = adapted_probe(embed(rows.train), gold(rows.train), embed(rows.dev), gold(rows.dev), "en",
                          {lang: embed(examples) for lang, examples in rows.pools().items()}, adapt,
                          (0.1, 1.0, 10.0, 100.0))
    assert got == {lang: probe.predict(embed(examples), lang).tolist() for lang, examples in rows.scored.items()}
    assert set(got) == {"en", *rows.task.target_langs}
