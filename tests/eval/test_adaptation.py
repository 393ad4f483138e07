"""The probe's adaptation to unlabelled target pools against each step written out by hand."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from xlt.config import ConfigError
from xlt.eval.adaptation import ProbeAdaptation, adapted_probe, balanced_confident, centred

C_GRID = (0.1, 1.0, 10.0)


def blobs(seed=0):
    rng = np.random.default_rng(seed)
    x = np.vstack([rng.normal(-1, 1, (20, 3)), rng.normal(1, 1, (20, 3))])
    y = np.repeat([0, 1], 20)
    pools = {"de": rng.normal(0.3, 1.5, (30, 3)), "fr": rng.normal(-0.5, 1.5, (17, 3))}
    return x, y, x[::3], y[::3], pools


def reference_fit(x, y, x_dev, y_dev, c_values):
    fits = [LogisticRegression(C=c, max_iter=2000, random_state=0).fit(x, y) for c in sorted(c_values)]
    best = max(range(len(fits)), key=lambda i: (np.mean(fits[i].predict(x_dev) == y_dev), -i))
    return fits[best]


def reference_round(model, x, y, pools, fraction):
    """One self-training round by hand: per pool and predicted class, the top ``fraction`` by confidence."""
    xs, ys = [x], [y]
    for pool in pools.values():
        p = model.predict_proba(pool)
        for k in range(p.shape[1]):
            members = sorted((i for i in range(len(pool)) if p[i].argmax() == k), key=lambda i: -p[i].max())
            if members:
                chosen = members[:max(1, int(fraction * len(members)))]
                xs.append(pool[chosen])
                ys.append(np.full(len(chosen), k))
    return LogisticRegression(C=model.C, max_iter=2000, random_state=0).fit(np.vstack(xs), np.concatenate(ys))


def test_centring_subtracts_the_mean_and_renormalises_each_row():
    x = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 2.0]])
    mean = np.array([1.0, 1.0])
    got = centred(x, mean)
    for row, out in zip(x, got):
        shifted = [row[0] - 1.0, row[1] - 1.0]
        norm = (shifted[0] ** 2 + shifted[1] ** 2) ** 0.5
        assert out.tolist() == pytest.approx([shifted[0] / norm, shifted[1] / norm])


def test_balanced_selection_keeps_the_most_confident_fraction_of_each_predicted_class():
    p = np.array([[0.9, 0.1], [0.6, 0.4], [0.8, 0.2], [0.3, 0.7], [0.7, 0.3], [0.45, 0.55]])
    # class 0: rows 0 (0.9), 2 (0.8), 4 (0.7), 1 (0.6) -> half: 0, 2; class 1: rows 3 (0.7), 5 (0.55) -> half: 3
    assert np.flatnonzero(balanced_confident(p, 0.5)).tolist() == [0, 2, 3]
    # a class predicted once keeps its row even when the fraction rounds down to none
    assert np.flatnonzero(balanced_confident(p[:5], 0.3)).tolist() == [0, 3]


def test_a_round_adds_the_most_confident_fraction_of_each_predicted_class_of_each_pool():
    x, y, x_dev, y_dev, pools = blobs()
    got = adapted_probe(x, y, x_dev, y_dev, "en", pools, ProbeAdaptation(rounds=2, fraction=0.5), C_GRID)
    reference = reference_fit(x, y, x_dev, y_dev, C_GRID)
    for _ in range(2):
        reference = reference_round(reference, x, y, pools, 0.5)
    assert np.allclose(got.model.coef_, reference.coef_) and np.allclose(got.model.intercept_, reference.intercept_)
    assert got.means == {}


def test_centred_probe_centres_every_language_on_its_own_mean_source_on_its_train_rows():
    x, y, x_dev, y_dev, pools = blobs(1)
    got = adapted_probe(x, y, x_dev, y_dev, "en", pools, ProbeAdaptation(center=True, rounds=1), C_GRID)

    def by_hand(rows, mean):
        return np.array([(r - mean) / np.linalg.norm(r - mean) for r in rows])

    means = {"en": x.sum(0) / len(x), **{lang: pool.sum(0) / len(pool) for lang, pool in pools.items()}}
    cx = by_hand(x, means["en"])
    cpools = {lang: by_hand(pool, means[lang]) for lang, pool in pools.items()}
    reference = reference_round(reference_fit(cx, y, by_hand(x_dev, means["en"]), y_dev, C_GRID), cx, y, cpools, 0.5)
    assert np.allclose(got.model.coef_, reference.coef_)
    test = np.random.default_rng(2).normal(size=(9, 3))
    assert got.predict(test, "fr").tolist() == reference.predict(by_hand(test, means["fr"])).tolist()
    assert got.predict(test, "en").tolist() == reference.predict(by_hand(test, means["en"])).tolist()


def test_the_defaults_adapt_nothing_and_bad_settings_say_what_was_expected():
    x, y, x_dev, y_dev, pools = blobs()
    assert not ProbeAdaptation().active
    plain = adapted_probe(x, y, x_dev, y_dev, "en", pools, ProbeAdaptation(), C_GRID)
    assert np.allclose(plain.model.coef_, reference_fit(x, y, x_dev, y_dev, C_GRID).coef_)
    with pytest.raises(ConfigError, match="adapt.fraction"):
        ProbeAdaptation(rounds=1, fraction=0)
    with pytest.raises(ConfigError, match="adapt.rounds"):
        ProbeAdaptation(rounds=-1)


class Fixed(torch.nn.Module):
    """A frozen encoder whose embedding of text ``"i"`` is row i of ``table``: the probe's inputs, as a
    ``Classifier`` reads them."""

    trainable = False

    def __init__(self, table):
        super().__init__()
        self.table = torch.as_tensor(table, dtype=torch.float32)

    def feature_dim(self, paired):
        return self.table.shape[1]

    def embed(self, texts):
        return self.table[[int(t) for t in texts]]

    def encode(self, texts, **_):
        return self.embed(texts).numpy()


@pytest.mark.parametrize("classes", [2, 3])
def test_the_probe_as_a_classifier_predicts_and_scores_what_the_probe_does(classes):
    """The exported form (``Probe.classifier``): raw embeddings normalised, centred on the row's language and
    normalised again by hand, then the logistic regression's own probabilities."""
    rng = np.random.default_rng(classes)
    x, y = rng.normal(0, 1, (30, 4)) + np.eye(4)[np.arange(30) % classes] * 2, np.arange(30) % classes
    pools = {"de": rng.normal(0.5, 1, (25, 4)), "fr": rng.normal(-0.5, 1, (20, 4))}
    unit = {lang: p / np.linalg.norm(p, axis=1, keepdims=True) for lang, p in pools.items()}
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    probe = adapted_probe(xn, y, xn, y, "en", unit, ProbeAdaptation(center=True, rounds=1), C_GRID)
    rows, langs = np.vstack([x, pools["de"], pools["fr"]]), ["en"] * 30 + ["de"] * 25 + ["fr"] * 20
    labels = ["neg", "neu", "pos"][:classes]
    clf = probe.classifier(Fixed(rows), labels, paired=False, normalize=True)
    assert clf.languages == ["en", "de", "fr"]
    got = clf.predict([str(i) for i in range(len(rows))], langs=langs)
    for lang in ("en", "de", "fr"):
        at = np.array(langs) == lang
        unit_rows = rows[at] / np.linalg.norm(rows[at], axis=1, keepdims=True)
        by_hand = centred(unit_rows, probe.means[lang])
        assert np.allclose(got.probabilities[at], probe.model.predict_proba(by_hand), atol=1e-5)
        assert [labels.index(label) for label in np.array(got.labels)[at]] == probe.predict(unit_rows, lang).tolist()
    with pytest.raises(ValueError, match="it needs the language of every text"):
        clf.predict(["0", "1"])
    with pytest.raises(ValueError, match=r"has none for \['sw'\]; it knows en, de, fr"):
        clf.predict(["0", "1"], langs=["en", "sw"])
