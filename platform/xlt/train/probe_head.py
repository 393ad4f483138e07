"""LP-FT's linear probe as the head's starting point (``optim.head_init: probe``; Kumar et al. 2022, §4).

Before the first step of a fresh fine-tuning run the classifier's head becomes the L2-regularised multinomial
logistic regression (scikit-learn's L-BFGS, to convergence, C = ``optim.probe_c``) fitted on the frozen encoder's
features of the labelled training originals (views and unlabelled rows are left out): the features the head reads,
in inference mode (no dropout). Fine-tuning then starts from a head that already fits, so its first gradients do
not have to pull the encoder's features towards a random head (the paper's account of why fine-tuning distorts
features and loses out of distribution).

Every worker fits the same head: each embeds its share of the rows, the shares are gathered, and the rows are put
in one order (by text and label) before the fit, so neither the number of workers nor the order Ray hands the rows
over in changes the result. A label the rows lack keeps its row of the head as initialised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from ..eval.adaptation import logits
from ..models import Classifier
from .batches import UNKNOWN_LABEL, flatten_batch

PROBE_MAX_ITER = 1000


def labelled_features(classifier: Classifier, batches: Iterable[Mapping[str, Any]], label_index: Mapping[str, int],
                      batch_size: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The frozen features (N, D), label ids (N,) and a sort key (the item's text) of the labelled originals in
    ``batches`` (rows as the train dataset holds them)."""
    items, labels = [], []
    for rows in batches:
        batch = flatten_batch(rows, label_index)
        for item, label, anchor in zip(batch.texts, batch.labels.tolist(), batch.is_anchor.tolist()):
            if anchor and label != UNKNOWN_LABEL:
                items.append(item)
                labels.append(label)
    features = classifier.encoder.encode(items, batch_size=batch_size)
    return features, np.asarray(labels, dtype=np.int64), [repr(item) for item in items]


def gathered(features: np.ndarray, labels: np.ndarray, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every worker's rows (one worker's own without a process group), in the order of (key, label)."""
    import torch.distributed as dist

    parts = [(features, labels, list(keys))]
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        parts = [None] * dist.get_world_size()
        dist.all_gather_object(parts, (features, labels, list(keys)))
    x = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    k = [key for p in parts for key in p[2]]
    order = sorted(range(len(k)), key=lambda i: (k[i], int(y[i])))
    return x[order], y[order]


def fit_head(features: np.ndarray, labels: np.ndarray, c: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray,
                                                                                          np.ndarray]:
    """(classes present, weight (K', D), bias (K',)) of the multinomial logistic regression on ``features``, as
    logits over the classes present: a binary fit's one score z becomes the logits (−z/2, z/2), whose softmax is
    its sigmoid."""
    from sklearn.linear_model import LogisticRegression

    classes = np.unique(labels)
    if len(classes) < 2:
        raise ValueError(f"optim.head_init: probe needs labelled training rows of at least two labels; "
                         f"these have {len(classes)} ({len(labels)} rows)")
    probe = LogisticRegression(C=c, max_iter=PROBE_MAX_ITER, random_state=seed).fit(features, labels)
    return probe.classes_, *logits(probe)


@torch.no_grad()
def set_head(head: nn.Linear, classes: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> None:
    """Rows ``classes`` of ``head`` set to the fitted ``weight`` and ``bias``; the others stay."""
    index = torch.as_tensor(classes, dtype=torch.long, device=head.weight.device)
    head.weight[index] = torch.as_tensor(weight, dtype=head.weight.dtype, device=head.weight.device)
    head.bias[index] = torch.as_tensor(bias, dtype=head.bias.dtype, device=head.bias.device)


def init_head_from_probe(classifier: Classifier, batches: Iterable[Mapping[str, Any]],
                         label_index: Mapping[str, int], c: float, batch_size: int = 64, seed: int = 0) -> int:
    """The module docstring: ``classifier.head`` set to the probe fitted on ``batches``' labelled originals (this
    worker's share; all workers' together under a process group). Returns the rows it was fitted on."""
    x, y = gathered(*labelled_features(classifier, batches, label_index, batch_size))
    set_head(classifier.head, *fit_head(x, y, c, seed))
    return len(y)
