"""Loop-by-loop reference implementations of the sentence-level alignment objectives.

Each ``naive_<objective>`` is written straight from its equation with Python loops over
anchors and pairs, no masking tricks, so that the vectorised losses in ``xlt.losses`` can be
checked against it (loss and gradients, float64) and benchmarked. The edge-case conventions
are the objectives' documented ones (a term without positive or negative is skipped; nothing
to average gives ``x.sum() * 0``). ``random_view_batch`` builds the inputs both sides take.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def random_view_batch(
    views_per_anchor: Sequence[int],
    *,
    n_labels: int = 3,
    dim: int = 8,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    shuffle: bool = True,
) -> dict[str, torch.Tensor]:
    """A view batch: one original per entry of ``views_per_anchor`` followed by that many views,
    rows shuffled (``group`` remapped), labels drawn in ``[0, n_labels)`` per original and kept by
    its views. Returns ``features`` (N, dim), ``logits`` (N, n_labels), ``labels``, ``group``,
    ``is_anchor``; the float tensors require grad."""
    g = torch.Generator().manual_seed(seed)
    group: list[int] = []
    is_anchor: list[bool] = []
    labels: list[int] = []
    for v in views_per_anchor:
        start = len(group)
        y = int(torch.randint(n_labels, (1,), generator=g))
        group += [start] * (1 + v)
        is_anchor += [True] + [False] * v
        labels += [y] * (1 + v)
    n = len(group)
    perm = torch.randperm(n, generator=g) if shuffle else torch.arange(n)
    new_row = torch.empty(n, dtype=torch.long)
    new_row[perm] = torch.arange(n)  # old row perm[k] is new row k
    group_t = new_row[torch.tensor(group, dtype=torch.long)[perm]]
    return {
        "features": torch.randn(n, dim, generator=g, dtype=torch.float64).to(dtype).requires_grad_(),
        "logits": (2 * torch.randn(n, n_labels, generator=g, dtype=torch.float64)).to(dtype).requires_grad_(),
        "labels": torch.tensor(labels, dtype=torch.long)[perm],
        "group": group_t,
        "is_anchor": torch.tensor(is_anchor)[perm],
    }


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.dot(a, b) / (a.norm() * b.norm())


def _mean_or_zero(terms: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    return torch.stack(terms).mean() if terms else x.sum() * 0


def naive_multiview_alignment(
    values: torch.Tensor, group: torch.Tensor, is_anchor: torch.Tensor, similarity: str = "cosine"
) -> torch.Tensor:
    """Wang et al. 2022, §3.2/§5.2: mean over (original, view) pairs of −s(Φ(x), Φ(x̂)); ``values`` are
    features (cosine, mse: Φ = x/‖x‖) or logits (kl, symmetric_kl: Φ = softmax)."""
    terms = []
    for v in range(len(group)):
        if is_anchor[v]:
            continue
        x, xh = values[int(group[v])], values[v]
        if similarity == "cosine":
            terms.append(-_cos(x, xh))
        elif similarity == "mse":
            terms.append(((x / x.norm() - xh / xh.norm()) ** 2).sum())
        else:
            p, q = torch.softmax(x, 0), torch.softmax(xh, 0)
            kl = (p * torch.log(p / q)).sum()
            terms.append(kl if similarity == "kl" else kl + (q * torch.log(q / p)).sum())
    return _mean_or_zero(terms, values)


def _view_contrast(
    features: torch.Tensor,
    group: torch.Tensor,
    is_anchor: torch.Tensor,
    temperature: float,
    labels: torch.Tensor | None,
) -> torch.Tensor:
    def s(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.exp(_cos(a, b) / temperature)

    n = len(group)
    terms = []
    for v in range(n):  # one term per (anchor, view) pair
        if is_anchor[v]:
            continue
        i = int(group[v])
        negatives = []
        for u in range(n):
            if is_anchor[u] or int(group[u]) == i:
                continue
            if labels is not None and (labels[i] < 0 or labels[u] < 0 or labels[u] == labels[i]):
                continue
            negatives.append(s(features[i], features[u]))
        if not negatives:
            continue
        pos = s(features[i], features[v])
        terms.append(-torch.log(pos / (pos + sum(negatives))))
    return _mean_or_zero(terms, features)


def naive_contrastive_alignment(
    features: torch.Tensor, group: torch.Tensor, is_anchor: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """Wang et al. 2022, §3.2 L_CL with s = exp(cos/τ): per (anchor i, view v), the views of every other
    original are the negatives; mean over pairs with ≥ 1 negative."""
    return _view_contrast(features, group, is_anchor, temperature, labels=None)


def naive_supervised_contrastive_alignment(
    features: torch.Tensor,
    labels: torch.Tensor,
    group: torch.Tensor,
    is_anchor: torch.Tensor,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Wang et al. 2022, §3.3 L_SCL: as CL, negatives only views with a known label ≠ the anchor's."""
    return _view_contrast(features, group, is_anchor, temperature, labels=labels)


def naive_label_alignment(features: torch.Tensor, labels: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Yu & Joty 2021, Eq. 2: Σ_i 1/(N_{y_i}−1) Σ_{j≠i, y_j=y_i} −log exp(h_i·h_j/τ) / Σ_{k≠i} exp(h_i·h_k/τ);
    anchors without a positive or a negative (known other label) skipped; label −1 never an anchor
    or positive."""
    n = len(labels)
    h = [features[i] / features[i].norm() for i in range(n)]
    total = features.sum() * 0
    for i in range(n):
        if labels[i] < 0:
            continue
        positives = [j for j in range(n) if j != i and labels[j] == labels[i]]
        negatives = [j for j in range(n) if labels[j] >= 0 and labels[j] != labels[i]]
        if not positives or not negatives:
            continue
        n_y = 1 + len(positives)
        denominator = sum(torch.exp(torch.dot(h[i], h[k]) / temperature) for k in range(n) if k != i)
        for j in positives:
            total = total + (1 / (n_y - 1)) * -torch.log(torch.exp(torch.dot(h[i], h[j]) / temperature) / denominator)
    return total


def naive_semantic_alignment(
    features: torch.Tensor,
    labels: torch.Tensor,
    group: torch.Tensor,
    is_anchor: torch.Tensor,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Yu & Joty 2021, Eq. 4 per anchor i: −Σ_{t ∈ positives} log exp(h_i·h_t/τ) / Σ_{k ∈ B_i} exp(h_i·h_k/τ),
    B_i = the rows with group i other than i, positives those with the anchor's label; mean over
    anchors with ≥ 1 positive and ≥ 1 negative."""
    n = len(labels)
    h = [features[i] / features[i].norm() for i in range(n)]
    terms = []
    for i in range(n):
        if not is_anchor[i]:
            continue
        partners = [k for k in range(n) if k != i and int(group[k]) == i]
        positives = [k for k in partners if labels[i] >= 0 and labels[k] == labels[i]]
        if not positives or len(positives) == len(partners):
            continue
        denominator = sum(torch.exp(torch.dot(h[i], h[k]) / temperature) for k in partners)
        terms.append(sum(-torch.log(torch.exp(torch.dot(h[i], h[t]) / temperature) / denominator) for t in positives))
    return _mean_or_zero(terms, features)
