"""In-batch InfoNCE over parallel pairs (Chen et al. 2022, Eq. 1–2; Zhang et al. 2023, Eq. 1–3) and cross-zero NCE
(Chen et al. 2022, Eq. 5).

Also the masked-contrast helpers the other parallel-text objectives (``token_alignment``,
``noisy_sentence``) share: ``contrast_rows`` (one InfoNCE term per anchor, stable, masked) and
``mean_over_groups`` (per-pair aggregation).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F

from .base import Objective
from .numerics import check_temperature, full_precision, upcast


def contrast_rows(positive: torch.Tensor, candidates: torch.Tensor, negative_mask: torch.Tensor,
                  positive_in_denominator: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """One contrastive term per anchor: ``-log(e^{s+} / ([e^{s+}] + Σ_{k ∈ negatives} e^{s_k}))``.

    Args:
        positive: (...,) logit s+ of each anchor with its positive (similarity / τ).
        candidates: (..., K) logits of each anchor against K candidate keys.
        negative_mask: (..., K) bool, which candidates are negatives of the anchor. The positive
            is passed separately and must not be marked here.
        positive_in_denominator: InfoNCE (True; Chen et al. 2022, Eq. 1/4; Li et al. 2021, Eq. 1;
            Zhang et al. 2023, Eq. 1) or cross-zero NCE (False; Chen et al. 2022, Eq. 5).

    Returns:
        (loss (...,), has_negative (...,) bool). An anchor without a negative has loss exactly 0
        and ``has_negative`` False, with finite (zero) gradients: aggregate over ``has_negative``.
    """
    has_negative = negative_mask.any(dim=-1)
    logits = candidates.masked_fill(~negative_mask, float("-inf"))
    # A row that is all -inf would give logsumexp = -inf and a NaN gradient even behind a where();
    # such rows get finite stand-ins and are zeroed below.
    logits = torch.where(has_negative.unsqueeze(-1), logits, torch.zeros_like(logits))
    if positive_in_denominator:
        logits = torch.cat([positive.unsqueeze(-1), logits], dim=-1)
    loss = torch.logsumexp(logits, dim=-1) - positive
    return torch.where(has_negative, loss, torch.zeros_like(loss)), has_negative


def mean_over_groups(loss: torch.Tensor, valid: torch.Tensor, group: torch.Tensor, num_groups: int,
                     within: Literal["sum", "mean"]) -> torch.Tensor:
    """Reduce anchor losses within each group (parallel pair), then average over contributing groups.

    ``loss`` (A,) is 0 where ``valid`` (A,) is False; ``group`` (A,) long in [0, num_groups).
    ``within="sum"`` adds a group's anchor losses, ``"mean"`` averages them. A group without a valid
    anchor contributes nothing; with no contributing group the result is a 0 still connected to
    the graph of ``loss`` (so ``backward`` gives zero gradients, never None or NaN).
    """
    sums = loss.new_zeros(num_groups).index_add(0, group, loss)  # (G,)
    counts = loss.new_zeros(num_groups).index_add(0, group, valid.to(loss.dtype))  # (G,)
    per_group = sums if within == "sum" else sums / counts.clamp(min=1)
    return per_group.sum() / (counts > 0).sum().clamp(min=1)


def check_pairs(src_features: torch.Tensor, tgt_features: torch.Tensor) -> None:
    """Both sides (B, D) with the same shape; a ValueError naming the shapes otherwise."""
    if src_features.dim() != 2 or src_features.shape != tgt_features.shape:
        raise ValueError(f"src_features and tgt_features must both be (B, D) with the same shape, got "
                         f"{tuple(src_features.shape)} and {tuple(tgt_features.shape)}")


class ParallelInfoNCE(Objective):
    """Symmetric in-batch InfoNCE over parallel pairs: Chen et al. 2022, Eq. 1–2 (ML-CTL) = Zhang et al. 2023,
    Eq. 1–3 (VECO 2.0).

    For a batch of n parallel pairs (x_i, y_i), with s(a, b) = cos(a, b) / τ::

        l(x_i) = -log  e^{s(x_i, y_i)} / ( [e^{s(x_i, y_i)}] + Σ_{k ∈ X\\x_i ∪ Y\\y_i} e^{s(x_i, k)} )
        l(y_i) = -log  e^{s(y_i, x_i)} / ( [e^{s(y_i, x_i)}] + Σ_{k ∈ X\\x_i ∪ Y\\y_i} e^{s(y_i, k)} )
        L      = 1/(2n) Σ_i ( l(x_i) + l(y_i) )        (Chen et al. 2022, Eq. 2; Zhang et al. 2023, Eq. 3)

    Negatives of an anchor are every other sentence of the batch on *both* sides: the other
    translations (cross-language) and the other same-language sentences. Both papers say so:
    Chen et al. (2022, §2.3) take {X_c/x_ci ∪ Y_c/y_ci} as negatives; Eq. 1 of Zhang et al. (2023)
    sums over the keys X\\x_i ∪ Y. Rows are not deduplicated: a sentence repeated in the batch is a
    (false) negative.

    The bracketed positive term in the denominator (``positive_in_denominator``):

    - ``True`` (default): InfoNCE as both Chen et al. 2022, Eq. 1 (e^{s+} + Σ e^{s-}) and
      Zhang et al. 2023, Eq. 1 (keys X\\x_i ∪ Y contain y_i) write it. The two papers do *not* differ here: their
      equations are the same loss (Zhang et al. 2023 add nothing to Eq. 1–2 of Chen et al. 2022).
    - ``False``: the positive removed from the denominator, which is Chen et al. (2022)'s cross-zero NCE
      (§3, Eq. 5); ``CrossZeroNCE`` is this setting under its own name.

    Args:
        temperature: τ > 0; 0.07 as in Chen et al. 2022, §2.3 (Zhang et al. 2023 do not state theirs).
        symmetric: average over both directions (Eq. 2/3); False keeps only the source anchors
            x_i (L = 1/n Σ_i l(x_i)).
        positive_in_denominator: see above.

    Inputs (``requires``): ``src_features`` (B, D), ``tgt_features`` (B, D); row i of each side is
    one parallel pair. Any float dtype; similarities are computed in float32 (float64 stays float64)
    with autocast off, so fp16/bf16 inputs and mixed-precision training are safe.

    Edge cases: an anchor with no negative (batch of one) contributes nothing and the mean is
    over the anchors that have one; with none at all the loss is a 0 connected to the inputs'
    graph. Identical or zero embeddings give a finite loss (log(2B-1) for identical ones).
    """

    name = "parallel_info_nce"
    requires = ("src_features", "tgt_features")

    def __init__(self, temperature: float = 0.07, symmetric: bool = True, positive_in_denominator: bool = True) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)
        self.symmetric = bool(symmetric)
        self.positive_in_denominator = bool(positive_in_denominator)

    def extra_repr(self) -> str:
        return (f"temperature={self.temperature}, symmetric={self.symmetric}, "
                f"positive_in_denominator={self.positive_in_denominator}")

    def compute_loss_from_embeddings(self, src_features: torch.Tensor, tgt_features: torch.Tensor) -> torch.Tensor:
        check_pairs(src_features, tgt_features)
        with full_precision(src_features):
            x = F.normalize(upcast(src_features), dim=-1)  # (B, D)
            y = F.normalize(upcast(tgt_features), dim=-1)  # (B, D)
            others = ~torch.eye(x.shape[0], dtype=torch.bool, device=x.device)  # (B, B)
            negatives = torch.cat([others, others], dim=1)  # (B, 2B): other translations, other same-language rows
            xy = x @ y.T / self.temperature  # (B, B), xy[i, j] = s(x_i, y_j)
            positive = xy.diagonal()  # (B,)
            loss, valid = contrast_rows(positive, torch.cat([xy, x @ x.T / self.temperature], dim=1), negatives,
                                        self.positive_in_denominator)
            if self.symmetric:
                loss_y, valid_y = contrast_rows(positive, torch.cat([xy.T, y @ y.T / self.temperature], dim=1),
                                                negatives, self.positive_in_denominator)
                loss, valid = torch.cat([loss, loss_y]), torch.cat([valid, valid_y])  # (2B,)
            return loss.sum() / valid.sum().clamp(min=1)


class CrossZeroNCE(ParallelInfoNCE):
    """Cross-zero NCE (CZ-NCE) of Chen et al. 2022, §3, Eq. 5, over the in-batch parallel setting of Eq. 1–2.

    Per anchor, the positive is removed from the InfoNCE denominator::

        L_CZ-NCE = -log( e^{s+} / Σ_i e^{s_i^-} ) = log Σ_i e^{s_i^- - s+} = log φ        (Eq. 5–6)

    with the same anchors, negatives (all other sentences of the batch, both languages) and
    averaging 1/(2n) Σ (l(x_i) + l(y_i)) as ``ParallelInfoNCE`` (the batch form L_CZ-NCE_batch of
    Eq. 8). Without e^{s+} in the denominator the loss has no lower bound 0: it goes negative
    ("crosses zero") once the positive outscores the sum of the negatives, which keeps its value
    away from the floating-point noise around 0 with small batches (§3). Eq. 7 (ρ = φ / sg(φ))
    is the paper's argument that only the gradient matters; the value returned is Eq. 5 itself,
    whose gradient equals ρ's.

    This is ``ParallelInfoNCE(positive_in_denominator=False)`` under its own name.

    Args:
        temperature: τ > 0; 0.07 (Chen et al. 2022, §2.3).
        symmetric: both directions (Eq. 2 averaging) or source anchors only.

    Inputs and edge cases as ``ParallelInfoNCE``: an anchor without a negative (batch of one)
    contributes nothing (its Eq. 5 would be -log(e^{s+}/0)); identical embeddings give log(2B-2).
    """

    name = "cross_zero_nce"

    def __init__(self, temperature: float = 0.07, symmetric: bool = True) -> None:
        super().__init__(temperature=temperature, symmetric=symmetric, positive_in_denominator=False)
