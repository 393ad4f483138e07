"""Multi-view alignment (MVA): pull every example toward its cross-lingual augmentations.

Wang et al. 2022 (*Supervised Contrastive Learning for Cross-lingual Transfer Learning*), §3.2 and
§5.2. This module also holds :func:`view_pairs`, the reading of the shared view-batch layout
(``group``, ``is_anchor``) that CL and SCL (``contrastive.py``, ``supcon.py``) use as well.
"""

from __future__ import annotations

from typing import ClassVar, Literal, get_args

import torch
import torch.nn.functional as F

from .base import Objective
from .numerics import full_precision, upcast

Similarity = Literal["cosine", "kl", "symmetric_kl", "mse"]
SIMILARITIES: tuple[str, ...] = get_args(Similarity)

# Which Outputs key holds Φ for each similarity: a divergence compares distributions, so it
# reads the classifier's logits; cosine and MSE compare L2-normalised sentence embeddings.
_PHI_KEY: dict[str, str] = {"cosine": "features", "mse": "features", "kl": "logits", "symmetric_kl": "logits"}


def view_pairs(
    rows: torch.Tensor, group: torch.Tensor, is_anchor: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Checks the view-batch layout and returns ``(originals, views)``: two ``(P,)`` long tensors,
    one entry per non-anchor row (in row order), ``views[p]`` a view of ``originals[p]``.

    Layout (``xlt.losses.base``): ``rows`` (N, ·) holds originals and their views in any order;
    ``group[i]`` is the row of the original that row ``i`` is a view of, originals point to
    themselves; ``is_anchor`` marks the originals. Anything else raises ``ValueError`` naming the
    first offending row: a wrong ``group`` would otherwise give a wrong loss silently.
    """
    if rows.ndim != 2:
        raise ValueError(f"embeddings must be 2-D (N, D); got shape {tuple(rows.shape)}")
    n = rows.shape[0]
    if group.shape != (n,) or is_anchor.shape != (n,):
        raise ValueError(
            f"group and is_anchor must have shape ({n},) like the {n} embedding rows; "
            f"got {tuple(group.shape)} and {tuple(is_anchor.shape)}"
        )
    if group.dtype.is_floating_point or group.dtype == torch.bool:
        raise ValueError(f"group must hold integer row indices; got dtype {group.dtype}")
    if is_anchor.dtype != torch.bool:
        raise ValueError(f"is_anchor must be a bool tensor; got dtype {is_anchor.dtype}")
    idx = torch.arange(n, device=group.device)
    in_range = (group >= 0) & (group < n)
    target_is_anchor = is_anchor[group.clamp(0, max(n - 1, 0))]
    bad = ~in_range | (is_anchor & (group != idx)) | (~is_anchor & ~target_is_anchor)
    if bad.any():
        i = int(bad.nonzero()[0])
        g = int(group[i])
        kind = "anchor" if bool(is_anchor[i]) else "view"
        raise ValueError(
            f"row {i} ({kind}) has group {g}; an anchor must point to itself and a view to an "
            f"anchor row in [0, {n})"
        )
    views = (~is_anchor).nonzero().squeeze(1)  # (P,)
    return group[views].long(), views


class MultiViewAlignment(Objective):
    """Multi-view alignment: every view is pulled toward the example it was made from.

    Wang et al. 2022, §3.2 (equation of L_MVA) with the similarities of §5.2::

        L_MVA = 1/P Σ_(x, x̂) −s(Φ(x), Φ(x̂))

    averaged over the P (original x, view x̂) pairs of the batch, where x̂ is an augmentation of
    x (code-switching, partial or full translation: t_c + t_p + t_f views per original, §3.1).
    The similarities, written as losses −s (Wang et al. 2022, §5.2)::

        cosine        −cos(Φ(x), Φ(x̂)) = −Φ(x)·Φ(x̂) / (‖Φ(x)‖ ‖Φ(x̂)‖)     ∈ [−1, 1]
        mse           ‖Φ(x) − Φ(x̂)‖²  (squared L2 distance, summed over D)  ∈ [0, 4]
        kl            KL(Φ(x) ‖ Φ(x̂)) = Σ_c Φ(x)_c log(Φ(x)_c / Φ(x̂)_c)  ≥ 0
        symmetric_kl  KL(Φ(x) ‖ Φ(x̂)) + KL(Φ(x̂) ‖ Φ(x))                 ≥ 0

    Reading of Φ (the paper uses one symbol for two things): §3.2/§5.2 define Φ as the
    L2-normalised aggregated ([CLS]) representation, but a KL divergence needs probability
    distributions, and §4.2 uses KL as in xTune (Zheng et al. 2021), i.e. between the
    classifier's predicted distributions. So:

    - ``cosine``, ``mse``: Φ(x) = the L2-normalised sentence embedding (``features``). With
      normalised vectors ‖a − b‖² = 2 − 2 cos(a, b), so ``mse`` is ``2 + 2·cosine`` (the same
      gradient direction, twice the scale); both are kept because §5.2 tabulates both.
    - ``kl``, ``symmetric_kl``: Φ(x) = softmax of the classifier ``logits``. §5.2 writes the KL
      similarity as Φ(x) log(Φ(x̂)/Φ(x)) = −KL(Φ(x) ‖ Φ(x̂)), so the loss is KL from the
      original's distribution to the view's. Gradients flow through both sides (no stop-gradient;
      the paper states none).

    The paper chose cosine with λ = 10 (§5.2), hence the default. At small scale a large λ can pull every
    input onto one class (the views agree perfectly when nothing is told apart), and KL, bounded by the
    classifier's own distribution, less so: pick λ on dev (``benchmarks/studies/scl-xnli/results.md``).

    Args:
        similarity: ``"cosine"`` (default), ``"kl"``, ``"symmetric_kl"`` or ``"mse"``.

    Inputs (``requires`` depends on ``similarity``: an instance attribute):
        - ``features`` (N, D) for cosine / mse, or ``logits`` (N, C) for kl / symmetric_kl
        - ``group`` (N,) long: row of the original each row is a view of; originals point to themselves
        - ``is_anchor`` (N,) bool: the originals

    Edge cases: an original without views contributes nothing; a batch without any view
    (e.g. a batch of one) returns a zero connected to the inputs (``.backward()`` gives zero
    gradients); identical rows give −1 (cosine) or 0 (the others). Computed in float32 (float64
    inputs stay float64), so fp16/bf16 inputs give a float32 loss.

    References:
        - Wang et al. 2022, Supervised Contrastive Learning for Cross-lingual Transfer Learning, CCL 2022
          (docs/references.md).
        - Zheng et al., Consistency Regularization for Cross-Lingual Fine-Tuning (xTune), ACL 2021.
    """

    name: ClassVar[str] = "multiview_alignment"

    def __init__(self, similarity: Similarity = "cosine") -> None:
        super().__init__()
        if similarity not in SIMILARITIES:
            raise ValueError(
                f"similarity={similarity!r} is not supported; choose one of {', '.join(map(repr, SIMILARITIES))}"
            )
        self.similarity = similarity
        self.requires = (_PHI_KEY[similarity], "group", "is_anchor")

    def extra_repr(self) -> str:
        return f"similarity={self.similarity!r}"


    def compute_loss_from_embeddings(
        self, embeddings: torch.Tensor, group: torch.Tensor, is_anchor: torch.Tensor
    ) -> torch.Tensor:
        """``embeddings`` are ``features`` (N, D) for cosine / mse and ``logits`` (N, C) for the KLs."""
        with full_precision(embeddings):
            originals, views = view_pairs(embeddings, group, is_anchor)  # (P,), (P,)
            x = upcast(embeddings)
            if views.numel() == 0:
                return x.sum() * 0
            a, b = x[originals], x[views]  # (P, D)
            if self.similarity in ("cosine", "mse"):
                a, b = F.normalize(a, dim=-1), F.normalize(b, dim=-1)
                per_pair = -(a * b).sum(-1) if self.similarity == "cosine" else (a - b).pow(2).sum(-1)  # (P,)
            else:
                log_p, log_q = F.log_softmax(a, dim=-1), F.log_softmax(b, dim=-1)  # (P, C)
                if self.similarity == "kl":
                    per_pair = (log_p.exp() * (log_p - log_q)).sum(-1)
                else:  # KL(p‖q) + KL(q‖p) = Σ (p − q)(log p − log q)
                    per_pair = ((log_p.exp() - log_q.exp()) * (log_p - log_q)).sum(-1)
            return per_pair.mean()
