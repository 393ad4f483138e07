"""The job's classifier (``xlt.cotrain.classifier``) against naive references: Blum & Mitchell's product of the
views' probabilities, renormalised; the iteration kept by the source language's dev, ties to the earliest."""

from __future__ import annotations

import numpy as np
import pytest

from xlt.config import ConfigError
from xlt.cotrain.classifier import (CLASSIFIER, ClassifierSettings, classifier_name, classifier_predictions,
                                    combined_predictions, kept_iteration, members, read_predictions, rescore, scores,
                                    write_predictions)
from xlt.models.classifier import combine

LABELS = ["a", "b", "c"]


def predictions(probabilities, ids=("r0", "r1", "r2"), langs=("en", "de", "de"), gold=("a", "b", "c")):
    probabilities = np.asarray(probabilities, dtype=float)
    return {"id": list(ids), "lang": list(langs), "label": list(gold), "labels": LABELS,
            "predicted": [LABELS[k] for k in probabilities.argmax(1)], "probabilities": probabilities.tolist()}


def test_combine_is_the_renormalised_product_of_the_probabilities():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(3), 5), rng.dirichlet(np.ones(3), 5)
    naive = [[p[i, k] * q[i, k] / sum(p[i, j] * q[i, j] for j in range(3)) for k in range(3)] for i in range(5)]
    assert combine([p, q]) == pytest.approx(np.array(naive))
    assert combine([p]) == pytest.approx(p)
    # A probability of 0 (rounded) is floored, so one learner's 0 does not veto the other's certainty.
    assert combine([[[0.0, 1.0, 0.0]], [[1.0, 0.0, 0.0]]]).sum() == pytest.approx(1.0)


def test_the_combination_can_disagree_with_both_learners_alone():
    lm = predictions([[0.5, 0.45, 0.05], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4]])
    emb = predictions([[0.05, 0.45, 0.5], [0.1, 0.6, 0.3], [0.4, 0.2, 0.4]])
    both = combined_predictions({"lm": lm, "emb": emb}, ["lm", "emb"])
    assert both["predicted"] == ["b", "b", "c"]  # row 0: a (lm), c (emb), b together
    assert both["id"] == lm["id"] and both["labels"] == LABELS
    with pytest.raises(ValueError, match="different rows"):
        combined_predictions({"lm": lm, "emb": predictions(np.eye(3), ids=("r0", "r2", "r1"))}, ["lm", "emb"])


def test_a_single_learner_is_itself_and_scores_name_each_split():
    lm = predictions([[0.9, 0.05, 0.05], [0.1, 0.2, 0.7], [0.1, 0.2, 0.7]])
    chosen, out = classifier_predictions({"lm": {"test": lm, "val": lm}, "emb": {"test": lm, "val": lm}},
                                         ClassifierSettings(("lm",)), "en")
    assert chosen == ("lm",)
    assert out["test"]["predicted"] == lm["predicted"]
    metrics = scores(out, "en")
    assert metrics["test/acc/en"] == 1.0 and metrics["test/acc/de"] == 0.5 and metrics["test/acc/avg_target"] == 0.5
    # A split of the source language alone (the English dev) has its own scores, no target average.
    dev = scores({"val": predictions([[1, 0, 0]], ids=("d0",), langs=("en",), gold=("a",))}, "en")
    assert dev == {"val/acc/en": 1.0, "val/f1/en": 1.0}


def test_the_kept_iteration_is_the_last_or_the_first_best_on_source_dev():
    history = [{"learner": "lm", "iteration": 0, "val/acc/en": 0.99}]
    history += [{"learner": CLASSIFIER, "iteration": i, "val/acc/en": dev} for i, dev in enumerate([0.7, 0.8, 0.8, 0.6])]
    assert kept_iteration(history, "last", "en") == 3
    assert kept_iteration(history, "best-dev", "en") == 1  # 1 and 2 tie: the earliest
    with pytest.raises(ValueError, match="no record of the job's classifier"):
        kept_iteration(history[:1], "last", "en")
    # The iteration is the job's to keep; a learner's fit ends at its last epoch.
    from conftest import REPO
    from xlt.cotrain import load_cotrain_config

    with pytest.raises(ConfigError, match="lm.optim.keep='best-dev' .*classifier.keep: best-dev"):
        load_cotrain_config(REPO / "configs" / "cotrain_demo.yaml", ["lm.optim.keep=best-dev"])


def test_settings_refuse_an_unknown_learner_and_predictions_round_trip(tmp_path):
    with pytest.raises(ConfigError, match="classifier.learners"):
        ClassifierSettings(("lm", "lm"))
    with pytest.raises(ConfigError, match="classifier.learners"):
        ClassifierSettings(("xlmr",))
    assert classifier_name(("lm", "emb")) == "lm × emb"
    written = {"lm": {"test": predictions(np.eye(3))}}
    write_predictions(str(tmp_path), 2, written)
    assert read_predictions(str(tmp_path), 2) == written
    with pytest.raises(FileNotFoundError, match="iteration3.json does not exist"):
        read_predictions(str(tmp_path), 3)


def dev_and_test(dev_probabilities, test_probabilities):
    """A learner's recorded predictions: three English dev rows (gold a, b, c) and three test rows."""
    return {"val": predictions(dev_probabilities, ids=("d0", "d1", "d2"), langs=("en",) * 3),
            "test": predictions(test_probabilities, ids=("t0", "t1", "t2"))}


def naive_dev_choice(by_learner, candidates):
    """The candidate of the best English dev accuracy, the first of equals: each candidate's dev predictions are
    the argmax of its learners' renormalised product, written out."""
    def accuracy(learners):
        dev = [by_learner[n]["val"] for n in learners]
        right = 0
        for i, gold in enumerate(dev[0]["label"]):
            product = [np.prod([p["probabilities"][i][k] for p in dev]) for k in range(3)]
            right += LABELS[int(np.argmax(product))] == gold
        return right
    best = candidates[0]
    for c in candidates[1:]:
        best = c if accuracy(c) > accuracy(best) else best
    return best


def test_choosing_on_dev_keeps_the_best_candidate_ties_to_the_declared_combination():
    settings = ClassifierSettings(("lm", "emb"), choose="dev")
    assert settings.candidates == (("lm", "emb"), ("lm",), ("emb",))
    right, wrong = np.eye(3) * 0.4 + 0.2, np.roll(np.eye(3), 1, axis=1) * 0.4 + 0.2
    # emb right on all of dev; lm wrong on two rows, and so sure there that the product is wrong on them too
    sure_and_wrong = [[0.05, 0.9, 0.05], [0.05, 0.05, 0.9], [0.1, 0.1, 0.8]]
    weak_lm = {"lm": dev_and_test(sure_and_wrong, wrong), "emb": dev_and_test(right, right)}
    chosen, out = classifier_predictions(weak_lm, settings, "en")
    assert chosen == ("emb",) == naive_dev_choice(weak_lm, settings.candidates)
    assert out["test"]["predicted"] == weak_lm["emb"]["test"]["predicted"]
    # level on dev: the declared combination
    level = {"lm": dev_and_test(right, wrong), "emb": dev_and_test(right, right)}
    assert classifier_predictions(level, settings, "en")[0] == ("lm", "emb") == naive_dev_choice(
        level, settings.candidates)
    # the declared classifier is kept whatever dev says
    assert classifier_predictions(weak_lm, ClassifierSettings(("lm", "emb")), "en")[0] == ("lm", "emb")
    with pytest.raises(ConfigError, match="classifier.choose"):
        ClassifierSettings(("lm",), choose="dev")
    with pytest.raises(ValueError, match="dev rows"):
        classifier_predictions({n: {"test": p["test"]} for n, p in weak_lm.items()}, settings, "en")


def test_a_finished_runs_classifier_is_scored_again_from_its_recorded_predictions(tmp_path):
    right, wrong = np.eye(3) * 0.4 + 0.2, np.roll(np.eye(3), 1, axis=1) * 0.4 + 0.2
    learners = {"lm": dev_and_test([[0.05, 0.9, 0.05], [0.05, 0.05, 0.9], [0.1, 0.1, 0.8]], wrong),
                "emb": dev_and_test(right, right)}
    declared = ClassifierSettings(("lm", "emb"))
    history = [{"iteration": 0, "learner": "lm", "mode": "cotrain", "val/acc/en": 0.0}]
    chosen, out = classifier_predictions(learners, declared, "en")
    write_predictions(str(tmp_path), 0, {**learners, CLASSIFIER: out})
    history.append({"iteration": 0, "learner": CLASSIFIER, "mode": "cotrain", "combines": "lm × emb",
                    **scores(out, "en")})
    rescore(str(tmp_path), history, ClassifierSettings(("lm", "emb"), choose="dev"), "en")
    assert history[0] == {"iteration": 0, "learner": "lm", "mode": "cotrain", "val/acc/en": 0.0}
    assert members(history[1]) == ("emb",) and history[1]["test/acc/de"] == 1.0 and history[1]["val/acc/en"] == 1.0
    assert read_predictions(str(tmp_path), 0)[CLASSIFIER]["test"]["predicted"] == ["a", "b", "c"]  # the file follows
    rescore(str(tmp_path), history, declared, "en")  # and back: the same settings give the same record
    assert history[1] == {"iteration": 0, "learner": CLASSIFIER, "mode": "cotrain", "combines": "lm × emb",
                          **scores(out, "en")}
