"""benchmarks/frozen_adaptation.py: a self-training round against the same round written out by hand."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression

from benchmarks.loading import load_benchmark


def test_a_round_adds_the_most_confident_fraction_of_each_predicted_class_of_each_pool():
    module = load_benchmark("frozen_adaptation")
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(-1, 1, (20, 3)), rng.normal(1, 1, (20, 3))])
    y = np.repeat([0, 1], 20)
    x_dev, y_dev = x[::3], y[::3]
    pools = {"de": rng.normal(0.3, 1.5, (30, 3)), "fr": rng.normal(-0.5, 1.5, (17, 3))}
    model = module.self_trained(x, y, x_dev, y_dev, pools, rounds=1, fraction=0.5)

    first = module.fit(x, y, x_dev, y_dev)
    xs, ys = [x], [y]
    for pool in pools.values():  # by hand: per pool and predicted class, the top half by confidence
        p = first.predict_proba(pool)
        for k in (0, 1):
            members = [i for i in range(len(pool)) if p[i].argmax() == k]
            members.sort(key=lambda i: -p[i].max())
            chosen = members[:max(1, int(0.5 * len(members)))]
            xs.append(pool[chosen])
            ys.append(np.full(len(chosen), k))
    reference = LogisticRegression(C=first.C, max_iter=2000, random_state=0).fit(np.vstack(xs), np.concatenate(ys))
    assert np.allclose(model.coef_, reference.coef_) and np.allclose(model.intercept_, reference.intercept_)

