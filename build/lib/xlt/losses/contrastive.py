"""Contrastive alignment (CL): InfoNCE of every example against its cross-lingual views.

Wang et al. 2022 (*Supervised Contrastive Learning for Cross-lingual Transfer Learning*), §3.2–3.3:
the "vanilla" contrastive learning that SCL (``supcon.py``) modifies. This module also holds
the pieces every contrastive objective of ``xlt.losses`` shares: the temperature check and
:func:`masked_info_nce`, the log-softmax-over-a-candidate-set that CL, SCL, LA and SA are
instances of.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from .base import Objective
from .multiview import view_pairs
from .numerics import check_temperature, full_precision, upcast


def check_labels(labels: torch.Tensor, n: int) -> None:
    """``labels`` must be an integer (N,) tensor, ``-1`` where unknown."""
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},) like the {n} embedding rows; got {tuple(labels.shape)}")
    if labels.dtype.is_floating_point or labels.dtype == torch.bool:
        raise ValueError(f"labels must hold integer class ids (-1 = unknown); got dtype {labels.dtype}")


def masked_info_nce(logits: torch.Tensor, candidates: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    """Per row r: ``−Σ_{j ∈ positives[r]} log( exp(logits[r, j]) / Σ_{k ∈ candidates[r]} exp(logits[r, k]) )``.

    ``logits``, ``candidates``, ``positives``: (R, C); ``positives`` ⊆ ``candidates``, and every
    row must have at least one candidate (callers keep only rows that contribute). The
    denominator is a masked logsumexp, so it is stable for any temperature. Returns (R,).
    """
    log_denominator = logits.masked_fill(~candidates, float("-inf")).logsumexp(dim=1, keepdim=True)  # (R, 1)
    log_prob = logits - log_denominator  # (R, C)
    return -torch.where(positives, log_prob, torch.zeros_like(log_prob)).sum(dim=1)  # (R,)


def view_info_nce(
    features: torch.Tensor,
    group: torch.Tensor,
    is_anchor: torch.Tensor,
    temperature: float,
    labels: torch.Tensor | None = None,
) -> torch.Tensor:
    """The CL loss, or with ``labels`` the SCL loss: one InfoNCE term per (anchor, view) pair,
    averaged over the pairs that have at least one negative. See :class:`ContrastiveAlignment`
    and ``supcon.SupervisedContrastiveAlignment`` for the equations."""
    with full_precision(features):
        anchors, views = view_pairs(features, group, is_anchor)  # (P,), (P,): pair p = (anchors[p], views[p])
        if labels is not None:
            check_labels(labels, features.shape[0])
        z = F.normalize(upcast(features), dim=-1)  # (N, D)
        if views.numel() == 0:
            return z.sum() * 0
        logits = z[anchors] @ z[views].T / temperature  # (P, P): anchor of pair p against view q
        positives = torch.eye(len(views), dtype=torch.bool, device=logits.device)  # (P, P): its own view
        negatives = anchors[:, None] != anchors[None, :]  # (P, P): views of the other originals, 𝕀_{j≠i}
        if labels is not None:
            y_anchor, y_view = labels[anchors], labels[views]  # (P,), (P,)
            known = (y_anchor >= 0)[:, None] & (y_view >= 0)[None, :]
            negatives &= known & (y_anchor[:, None] != y_view[None, :])  # 𝕀_{y_j≠y_i}
        contributes = negatives.any(dim=1)  # (P,)
        if not bool(contributes.any()):
            return z.sum() * 0
        loss = masked_info_nce(
            logits[contributes], (positives | negatives)[contributes], positives[contributes]
        )  # (P',)
        return loss.mean()


class ContrastiveAlignment(Objective):
    """Vanilla contrastive alignment: each original against its own view, the views of every
    other original in the batch as negatives.

    Wang et al. 2022, §3.2 (equation of L_CL) with the InfoNCE similarity of §3.3,
    s(a, b) = exp(cos(a, b) / τ)::

        ℓ(i, v) = −log  s(Φ(x_i), Φ(v)) / ( s(Φ(x_i), Φ(v)) + Σ_{j≠i} Σ_{u ∈ views(j)} s(Φ(x_i), Φ(u)) )

        L_CL = 1/|P| Σ_{(i, v) ∈ P} ℓ(i, v)

    where Φ is the L2-normalised sentence embedding, x_i an original (anchor) and v = x̂_i one
    of its views (code-switched, partially or fully translated, §3.1).

    Reading of the equation for several views per original (a batch holds each original and its
    t_f + t_p + t_c views; the paper writes one view x̂_i per x_i):

    - Several positives: one InfoNCE term per (original, view) pair, each with that single view
      in the numerator; the loss is the mean over all pairs P of the batch (the paper leaves the
      batch reduction open; the mean keeps λ = 1 of §5.2 independent of the batch size).
    - The original's *other* own views are not negatives: 𝕀_{j≠i} ranges over examples, and
      every view of x_i carries the index i, so all of them are excluded; they are not positives
      of this term either (they have terms of their own).
    - Only views are contrasted (the sum runs over x̂_j): other originals x_j are not negatives.

    Args:
        temperature: τ > 0 of s(a, b) = exp(cos(a, b)/τ). Default 1.0, the value Wang et al. (2022, §5.3)
            use in all experiments.
        projection: ``{dims: [...]}`` contrasts g(Φ), a projection head of the objective's own, instead
            of Φ, which the classifier keeps reading (``xlt.losses.projection``). Default ``None``: Φ.

    Inputs (``requires``):
        - ``features`` (N, D): embeddings of the originals and their views, any row order
        - ``group`` (N,) long: row of the original each row is a view of; originals point to themselves
        - ``is_anchor`` (N,) bool: the originals

    Edge cases: an original without views contributes nothing; a pair without negatives (all
    views in the batch belong to the same original) contributes nothing; if no pair contributes
    (e.g. a batch of one) the loss is a zero connected to ``features`` (zero gradients).
    Identical embeddings give log(1 + #negatives), finite. Similarities are computed in float32
    (float64 stays float64); the denominator is a logsumexp, so fp16/bf16 inputs and small τ are safe.

    References:
        - Wang et al. 2022, Supervised Contrastive Learning for Cross-lingual Transfer Learning, CCL 2022
          (docs/references.md).
        - van den Oord et al., Representation Learning with Contrastive Predictive Coding (InfoNCE), 2018.
    """

    name: ClassVar[str] = "contrastive_alignment"
    requires: ClassVar[tuple[str, ...]] = ("features", "group", "is_anchor")

    def __init__(self, temperature: float = 1.0, projection: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)
        self.project(projection)

    def compute_loss_from_embeddings(
        self, features: torch.Tensor, group: torch.Tensor, is_anchor: torch.Tensor
    ) -> torch.Tensor:
        return view_info_nce(features, group, is_anchor, self.temperature)
