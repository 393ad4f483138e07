"""A probe learner (``xlt.cotrain.probe``) against a naive reference: normalised embeddings, each language
minus its mean (the source's from its labelled rows, a target's from its pool) normalised again, a logistic
regression with C the first best on English dev; and its classifier, which pseudo-labels the pool, predicts
what the probe predicts. Tiny model, no Ray."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import REPO
from xlt.cotrain import load_cotrain_config, prepare
from xlt.cotrain.probe import ProbeLearner, ProbeSettings
from xlt.models import load_encoder


@pytest.fixture(scope="module")
def setup(data_dir):
    cfg = load_cotrain_config(REPO / "configs" / "cotrain_sib200.yaml",
                              [f"data.data_dir={data_dir}", "task.target_langs=[de, zh]", "data.max_examples=24",
                               "emb.kind=probe", "emb.model.source=tiny:bert"],
                              smoke=REPO / "configs" / "cotrain_smoke.yaml")
    return cfg, prepare(cfg)


def naive(cfg, data, rows, settings: ProbeSettings):
    from sklearn.linear_model import LogisticRegression

    encoder, task = load_encoder(cfg.emb.model), data.task

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    def embed(texts):
        return unit(encoder.encode(list(texts)))

    means = {task.source_lang: embed(r["text"] for r in data.labeled if r["lang"] == task.source_lang).mean(0)}
    for lang in task.target_langs:
        means[lang] = embed(ex.text for ex in task.examples("pool", lang, data.pool_limit)).mean(0)

    def features(rs):
        return np.stack([unit((embed([r["text"]])[0] - means[r["lang"]])[None])[0] for r in rs])

    y = [task.labels.index(r["label"]) for r in rows]
    dev = [r for r in data.dev_rows]
    y_dev = [task.labels.index(r["label"]) for r in dev]
    best = None
    for c in sorted(settings.c_values):
        model = LogisticRegression(C=c, max_iter=settings.max_iter, random_state=0).fit(features(rows), y)
        acc = np.mean(model.predict(features(dev)) == y_dev)
        if best is None or acc > best[0]:
            best = (acc, model)
    return best[1], features


def test_a_probe_learner_is_the_naive_centred_probe_and_its_classifier_predicts_the_same(setup):
    cfg, data = setup
    learner = ProbeLearner("emb", cfg.emb.model, cfg.emb.probe, data.task, data.labeled, data.evaluation_rows,
                           data.dev_rows, cfg.data.metric_split, data.pool_limit)
    # D and three received pseudo-labels of target rows (centred on their own language's mean)
    received = [{**r, "label": data.task.labels[0]} for r in data.evaluation_rows if r["lang"] != "en"][:3]
    rows = data.labeled + received
    probe, metrics, predictions = learner.fitted(rows)
    model, features = naive(cfg, data, rows, cfg.emb.probe)
    assert probe.c == model.C and metrics["probe/c"] == model.C
    test = predictions["test"]
    want = model.predict_proba(features(data.evaluation_rows))
    assert np.asarray(test["probabilities"]) == pytest.approx(want, abs=1e-3)
    assert set(predictions) == {"test", "val"} and set(predictions["val"]["lang"]) == {"en"}
    assert metrics["train/rows"] == len(rows) and "test/acc/avg_target" in metrics and "val/acc/en" in metrics
    # What the job's labellers rebuild: the probe as a Classifier over the same encoder, centred per language.
    classifier = probe.classifier(learner.encoder, list(data.task.labels), data.task.paired, normalize=True)
    items = [r["text"] for r in data.evaluation_rows]
    got = classifier.predict(items, langs=[r["lang"] for r in data.evaluation_rows]).probabilities
    assert np.asarray(got) == pytest.approx(want, abs=1e-3)


def test_a_probe_learner_holds_no_worker():
    from xlt.cotrain.config import LearnerConfig
    from xlt.engine import ScalingSettings

    probe = LearnerConfig(kind="probe", scaling=ScalingSettings(num_workers=2))
    assert probe.footprint() == {} and probe.driver_share() == {}
