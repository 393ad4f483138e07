"""Label-aware contrast: SCL (Wang et al. 2022, §3.3) and label alignment LA (Yu & Joty 2021, Eq. 2–3).

Both keep the contrast of ``contrastive.py`` but let the class labels decide what is pushed
apart: SCL removes same-class views from an anchor's negatives ("false negatives", Wang et al. 2022,
Fig. 2); LA treats every same-class example of the batch as a positive (Gunel et al. 2020).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from .base import Objective
from .contrastive import check_labels, masked_info_nce, view_info_nce
from .numerics import check_temperature, full_precision, upcast


class SupervisedContrastiveAlignment(Objective):
    """Supervised contrastive alignment: CL whose negatives are only views of another class.

    Wang et al. 2022, §3.3 (equation of L_SCL) with s(a, b) = exp(cos(a, b) / τ)::

        ℓ(i, v) = −log  s(Φ(x_i), Φ(v)) / ( s(Φ(x_i), Φ(v)) + Σ_j 𝕀_{y_j≠y_i} Σ_{u ∈ views(j)} s(Φ(x_i), Φ(u)) )

        L_SCL = 1/|P'| Σ_{(i, v) ∈ P'} ℓ(i, v)

    over the (original x_i, view v) pairs P' that have at least one negative; Φ is the
    L2-normalised sentence embedding. "The core idea is simple, just to remove the negative
    samples which belong to the same class with the anchor point" (§3.3).

    Reading, as for :class:`~xlt.losses.contrastive.ContrastiveAlignment` (of which this is the
    ``labels``-restricted form): one term per (original, view) pair, averaged; the positive is
    that view alone; only views are contrasted, never other originals; the original's own other
    views are not negatives (they share its label, and 𝕀_{j≠i} of CL is kept). y_j is read from
    the view's own row of ``labels`` (a view keeps the label of its original); a label
    of ``-1`` (unknown) is never taken as different, so an unlabelled anchor or view is never
    contrasted. Same-class views of other originals appear neither in the numerator nor in the
    denominator (the retrieval variant of §5.4, which makes paraphrases positives, is not this
    loss).

    Args:
        temperature: τ > 0. Default 1.0 (Wang et al. 2022, §5.3, Table 5).
        projection: ``{dims: [...]}`` contrasts g(Φ), a projection head of the objective's own, instead
            of Φ, which the classifier keeps reading (``xlt.losses.projection``). Default ``None``: Φ.

    Inputs (``requires``):
        - ``features`` (N, D): embeddings of the originals and their views, any row order
        - ``labels`` (N,) long: class of each row, ``-1`` where unknown
        - ``group`` (N,) long: row of the original each row is a view of; originals point to themselves
        - ``is_anchor`` (N,) bool: the originals

    Edge cases: a pair whose anchor has no view of another (known) class in the batch
    contributes nothing, so a batch of one class, a batch of one, or an unlabelled anchor gives
    a zero connected to ``features`` (zero gradients), never NaN. A class seen once is fine
    (all other-class views are its negatives). Identical embeddings give a finite loss.
    Similarities in float32 (float64 stays float64), logsumexp denominator: fp16/bf16-safe.

    References:
        - Wang et al. 2022, Supervised Contrastive Learning for Cross-lingual Transfer Learning, CCL 2022
          (docs/references.md).
        - Khosla et al., Supervised Contrastive Learning, NeurIPS 2020.
    """

    name: ClassVar[str] = "supervised_contrastive_alignment"
    requires: ClassVar[tuple[str, ...]] = ("features", "labels", "group", "is_anchor")

    def __init__(self, temperature: float = 1.0, projection: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)
        self.project(projection)

    def compute_loss_from_embeddings(
        self, features: torch.Tensor, labels: torch.Tensor, group: torch.Tensor, is_anchor: torch.Tensor
    ) -> torch.Tensor:
        return view_info_nce(features, group, is_anchor, self.temperature, labels=labels)


class LabelAlignment(Objective):
    """Label alignment: every pair of same-class examples in the batch is a positive pair.

    Yu & Joty 2021 (*Effective Fine-tuning Methods for Cross-lingual Adaptation*), §3.2,
    Eq. 2: the supervised contrastive loss of Gunel et al. (2020), combined with CE in Eq. 3::

        L_LA = Σ_{i ∈ B} 1/(N_{y_i} − 1) Σ_{j ∈ B} 𝕀_{i≠j} 𝕀_{y_i=y_j} ℓ_ij

        ℓ_ij = −log  exp(h_i·h_j / τ) / Σ_{k ∈ B} 𝕀_{i≠k} exp(h_i·h_k / τ)

    h = L2-normalised sentence embedding (the paper's [CLS]), N_{y_i} = number of rows of B
    with label y_i (i included), so N_{y_i} − 1 is the number of i's positives.

    Reading: exactly Eq. 2. Every row is an anchor (no original/view distinction: B is drawn
    from D ∪ D^bi, sources and translations alike); the denominator runs over every other row
    of the batch, positives included; the batch reduction is the *sum* over anchors of Eq. 2
    (as in Gunel et al., where CE is a mean and this term a sum), so λ_LA scales with the batch
    size; divide λ_LA by |B| for a per-anchor mean.

    Edge cases (the objectives' contract, ``xlt.losses.base``): an anchor with no positive (a class seen
    once, N_{y_i} = 1, where Eq. 2 is 0/0) or with no negative (no row of another known class)
    contributes nothing; rows labelled ``-1`` are never anchors or positives but stay in the
    denominators (they are in B). If no anchor contributes (a batch of one, a batch of one
    class) the loss is a zero connected to ``features``. Identical embeddings give a finite
    loss. Similarities in float32 (float64 stays float64), logsumexp denominator: fp16/bf16-safe.

    Args:
        temperature: τ > 0. Yu & Joty (2021) give no value; the default 1.0 is Wang et al. (2022)'s (§5.3) for
            its label-aware contrast. A sweep parameter.
        projection: ``{dims: [...]}`` contrasts g(Φ), a projection head of the objective's own, instead
            of Φ, which the classifier keeps reading (``xlt.losses.projection``). Default ``None``: Φ.

    Inputs (``requires``):
        - ``features`` (N, D): embeddings of the batch
        - ``labels`` (N,) long: class of each row, ``-1`` where unknown

    References:
        - Yu & Joty 2021, Effective Fine-tuning Methods for Cross-lingual Adaptation, EMNLP 2021 (docs/references.md).
        - Gunel et al., Supervised Contrastive Learning for Pre-trained Language Model Fine-tuning, ICLR 2021.
    """

    name: ClassVar[str] = "label_alignment"
    requires: ClassVar[tuple[str, ...]] = ("features", "labels")

    def __init__(self, temperature: float = 1.0, projection: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)
        self.project(projection)

    def compute_loss_from_embeddings(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        with full_precision(features):
            if features.ndim != 2:
                raise ValueError(f"features must be 2-D (N, D); got shape {tuple(features.shape)}")
            n = features.shape[0]
            check_labels(labels, n)
            z = F.normalize(upcast(features), dim=-1)  # (N, D)
            logits = z @ z.T / self.temperature  # (N, N)
            others = ~torch.eye(n, dtype=torch.bool, device=logits.device)  # (N, N): k ≠ i
            known = labels >= 0  # (N,)
            same = labels[:, None] == labels[None, :]  # (N, N)
            positives = others & same & known[:, None]  # (N, N): j ≠ i, y_j = y_i
            negatives = ~same & known[:, None] & known[None, :]  # (N, N): another known class
            n_pos = positives.sum(dim=1)  # (N,) = N_{y_i} − 1
            contributes = (n_pos > 0) & negatives.any(dim=1)  # (N,)
            if not bool(contributes.any()):
                return z.sum() * 0
            per_anchor = masked_info_nce(logits[contributes], others[contributes], positives[contributes])  # (A,)
            return (per_anchor / n_pos[contributes]).sum()
