"""The probe's adaptation to unlabelled target pools against each step written out by hand."""

import numpy as np
import pytest
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
