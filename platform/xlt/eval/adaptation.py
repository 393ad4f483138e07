"""The frozen-linear probe, and its adaptation to each target language without that language's labels.

``fit_probe``: logistic regression on frozen embeddings, its inverse regularisation C the best of a
grid on the source language's dev rows (the first, smallest, of ties). ``adapted_probe`` adds, as
``ProbeAdaptation`` asks, two steps that use each target language's *unlabelled* pool only:

- **centring** (``center``): every language's embeddings minus that language's own mean, then
  L2-normalised again; the source language's mean is that of its labelled train rows, a target's
  that of its unlabelled pool. Multilingual encoders put a language-specific offset on every
  sentence, which an English-trained probe has never seen; removing each language's mean makes the
  representations more language-neutral (Libovický et al. 2020, "On the Language Neutrality of
  Pre-trained Multilingual Representations", §3: centring each language's vectors).
- **class-balanced self-training** (``rounds`` r, ``fraction`` f): the probe labels each target
  pool; of the rows it predicts as each class, the most confident f (at least one) join the source
  rows with the predicted label, and the probe is fitted again on source rows plus those (C kept);
  r rounds, each selecting again from the whole pool with the latest probe (Yu & Joty 2021's
  self-training with a single frozen-feature learner). Selecting per predicted class keeps a class
  the probe is unsure of from vanishing from the pseudo-labels, which a global threshold would let
  happen.

Nothing here reads a target language's labels; dev is the source language's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..config import check
from ..models import Classifier, TextEncoder
from ..models.classifier import build_classifier_over


@dataclass(frozen=True)
class ProbeAdaptation:
    """How the probe adapts to each target language's unlabelled pool (module docstring); the
    defaults adapt nothing (the plain probe)."""

    center: bool = False
    rounds: int = 0
    fraction: float = 0.5

    def __post_init__(self) -> None:
        check(self.rounds >= 0, "adapt.rounds", self.rounds, "an integer >= 0 (0: no self-training)")
        check(0 < self.fraction <= 1, "adapt.fraction", self.fraction, "a number in (0, 1]")

    @property
    def active(self) -> bool:
        """Whether it reads the target pools at all."""
        return self.center or self.rounds > 0


@dataclass(frozen=True, eq=False)
class Probe:
    """A fitted probe: the logistic regression, and the mean each language's embeddings are centred on
    (empty: not centred)."""

    model: object  # sklearn.linear_model.LogisticRegression
    means: Mapping[str, np.ndarray]

    @property
    def c(self) -> float:
        return float(self.model.C)

    def features(self, x: np.ndarray, lang: str) -> np.ndarray:
        """``x`` (embeddings of ``lang``) as the probe reads them."""
        return centred(x, self.means[lang]) if self.means else x

    def predict(self, x: np.ndarray, lang: str) -> np.ndarray:
        return self.model.predict(self.features(x, lang))

    def classifier(self, encoder: TextEncoder, labels: Sequence[str], paired: bool, normalize: bool) -> Classifier:
        """This probe as a ``Classifier`` over ``encoder`` (whose embeddings it was fitted on, L2-normalised if
        ``normalize``): the logistic regression as its head, each language's mean as its ``language_means``, so
        that it predicts what the probe predicts and saves, exports and labels as any classifier does."""
        import torch

        classes = [int(k) for k in self.model.classes_]
        if classes != list(range(len(labels))):
            raise ValueError(f"the probe was fitted on {len(classes)} of the task's {len(labels)} labels "
                             f"({', '.join(labels[k] for k in classes)}): a classifier predicts every label")
        weight, bias = logits(self.model)
        head = {"head.weight": torch.as_tensor(weight, dtype=torch.float32),
                "head.bias": torch.as_tensor(bias, dtype=torch.float32)}
        if self.means:
            head["language_means"] = torch.as_tensor(np.stack(list(self.means.values())), dtype=torch.float32)
        encoder_names = [f"encoder.{name}" for name in encoder.state_dict()]
        return build_classifier_over(encoder, labels, paired=paired, normalize=normalize, languages=list(self.means),
                                     state=head, from_source=encoder_names)


def logits(model) -> tuple[np.ndarray, np.ndarray]:
    """(weight (K, D), bias (K,)) of a fitted scikit-learn logistic regression as a linear head's logits over its K
    classes: a binary fit's one score z for the second class becomes (−z/2, z/2), whose softmax is its sigmoid."""
    weight, bias = model.coef_, model.intercept_
    if len(model.classes_) == 2:
        weight, bias = np.concatenate([-weight / 2, weight / 2]), np.concatenate([-bias / 2, bias / 2])
    return weight, bias


def centred(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """``x`` minus ``mean``, each row L2-normalised again."""
    shifted = x - mean
    return shifted / np.maximum(np.linalg.norm(shifted, axis=1, keepdims=True), 1e-12)


def fit_probe(x: np.ndarray, y: np.ndarray, x_dev: np.ndarray, y_dev: np.ndarray, c_values: Sequence[float],
              max_iter: int, seed: int):
    """The logistic regression of the C among ``c_values`` with the best dev accuracy (the smallest of ties)."""
    from sklearn.linear_model import LogisticRegression

    probes = [LogisticRegression(C=c, max_iter=max_iter, random_state=seed).fit(x, y) for c in sorted(c_values)]
    dev_acc = [float(np.mean(p.predict(x_dev) == y_dev)) for p in probes]
    return probes[int(np.argmax(dev_acc))]  # argmax takes the first (smallest C) of ties


def balanced_confident(probabilities: np.ndarray, fraction: float) -> np.ndarray:
    """Which rows to keep: of the rows predicted as each class, the ``fraction`` most confident (at
    least one; ties in the order of the rows)."""
    predicted, confidence = probabilities.argmax(1), probabilities.max(1)
    keep = np.zeros(len(probabilities), bool)
    for k in np.unique(predicted):
        members = np.flatnonzero(predicted == k)
        ranked = members[np.argsort(-confidence[members], kind="stable")]
        keep[ranked[:max(1, int(fraction * len(members)))]] = True
    return keep


def adapted_probe(x: np.ndarray, y: np.ndarray, x_dev: np.ndarray, y_dev: np.ndarray, source: str,
                  pools: Mapping[str, np.ndarray], adapt: ProbeAdaptation, c_values: Sequence[float],
                  max_iter: int = 2000, seed: int = 0) -> Probe:
    """The probe on source rows ``x, y`` (C chosen on ``x_dev, y_dev``), adapted to the unlabelled
    ``pools`` of the target languages (``{lang: embeddings}``) as ``adapt`` says (module docstring)."""
    means = {source: x.mean(0), **{lang: pool.mean(0) for lang, pool in pools.items()}} if adapt.center else {}
    probe = Probe(None, means)
    x, x_dev = probe.features(x, source), probe.features(x_dev, source)
    pools = {lang: probe.features(pool, lang) for lang, pool in pools.items()}
    model = fit_probe(x, y, x_dev, y_dev, c_values, max_iter, seed)
    for _ in range(adapt.rounds):
        xs, ys = [x], [y]
        for pool in pools.values():
            probabilities = model.predict_proba(pool)
            keep = balanced_confident(probabilities, adapt.fraction)
            xs.append(pool[keep])
            ys.append(model.classes_[probabilities[keep].argmax(1)])
        model = fit_probe(np.vstack(xs), np.concatenate(ys), x_dev, y_dev, [model.C], max_iter, seed)
    return Probe(model, means)
