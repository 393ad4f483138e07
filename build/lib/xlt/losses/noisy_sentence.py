"""MGC sentence-level contrast with noisy (back-translated) positives (Li et al. 2021, §2.4, Eq. 1, 7, 8)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .base import Objective
from .info_nce import contrast_rows, mean_over_groups
from .numerics import check_temperature, full_precision, upcast


class NoisySentenceContrast(Objective):
    """Sentence contrast over the four clean/noisy combinations of each parallel pair (Li et al. 2021, §2.4).

    Clean parallel pairs separate positives from negatives too easily and the contrastive signal
    vanishes; back-translation x̂ of x (and ŷ of y) blurs the boundary. The semantic equivalents
    of a pair are every clean/noisy combination::

        N_sent(x, y) = { (x', y') | x' ∈ {x, x̂}, y' ∈ {y, ŷ} }                                (Eq. 7)

    and for each (x', y') ∈ N_sent, with MP the mean over token states::

        u = ℓ2(MP(h_x')),  v+ = ℓ2(MP(h_y')),  v- = { ℓ2(MP(h_z)) | z ≠ y' }, z from the batch   (Eq. 8)
        L(u, v+, v-) = -log( e^{u·v+/τ} / (e^{u·v+/τ} + Σ_{v-} e^{u·v-/τ}) )                   (Eq. 1)

    Readings:
    - All four combinations enter the loss of every pair, (x, y) included (Eq. 7 defines the set;
      "by sampling from x and x̂" describes the noise the set contains). To sample instead, draw
      which back-translation (of several, footnote 3) fills ``*_noisy_features`` in the data step.
    - Negatives are the target-side sentences of the *other* pairs of the batch in the same
      variant as the positive (for (x̂, ŷ): the ŷ_j, j ≠ i): each combination is one in-batch
      contrast over the batch. Cross-language only ("derived from other instances"), no
      same-language negatives — unlike ``ParallelInfoNCE``.
    - Both directions ("without loss of generality ... source units as anchors", §2.1): y' is
      also an anchor against x' and the x'_j of the other pairs.
    - A pair's loss is the sum over its 4 combinations × 2 directions (as Eq. 4 sums over a
      pair's semantic-equivalent set); the batch loss averages it over the contributing pairs.
    - MP: pass mean-pooled sentence states (the encoder's ``mean`` pooling). τ = 0.1 (Li et al. 2021, §3.1).

    Inputs (``requires``): ``src_features`` (B, D), ``tgt_features`` (B, D), ``src_noisy_features``
    (B, D) (row i: a back-translation x̂_i of x_i, encoded), ``tgt_noisy_features`` (B, D) (ŷ_i).
    ``src_noisy_features`` and ``tgt_noisy_features`` are keys this objective adds to the
    ``Outputs`` vocabulary. Similarities are computed in float32 (float64 stays float64) with
    autocast off: fp16/bf16 inputs and mixed-precision training are safe.

    Edge cases: with a batch of one there is no negative and the loss is a 0 connected to the
    graph; identical embeddings give a finite loss (8·log B per pair).
    """

    name = "noisy_sentence_contrast"
    requires = ("src_features", "tgt_features", "src_noisy_features", "tgt_noisy_features")

    def __init__(self, temperature: float = 0.1) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)

    def compute_loss_from_embeddings(self, src_features: torch.Tensor, tgt_features: torch.Tensor,
                                     src_noisy_features: torch.Tensor,
                                     tgt_noisy_features: torch.Tensor) -> torch.Tensor:
        shapes = [tuple(t.shape) for t in (src_features, tgt_features, src_noisy_features, tgt_noisy_features)]
        if len(shapes[0]) != 2 or len(set(shapes)) != 1:
            raise ValueError(f"src_features, tgt_features, src_noisy_features and tgt_noisy_features must all be "
                             f"(B, D) with the same shape, got {', '.join(map(str, shapes))}")
        with full_precision(src_features):
            # The four (x', y') of Eq. 7, stacked: (x, y), (x, ŷ), (x̂, y), (x̂, ŷ).
            x_variants = [src_features, src_features, src_noisy_features, src_noisy_features]
            y_variants = [tgt_features, tgt_noisy_features, tgt_features, tgt_noisy_features]
            u = F.normalize(upcast(torch.stack(x_variants)), dim=-1)  # (4, B, D)
            v = F.normalize(upcast(torch.stack(y_variants)), dim=-1)  # (4, B, D)
            logits = torch.bmm(u, v.transpose(1, 2)) / self.temperature  # (4, B, B), [c, i, j] = u'_i · v'_j / τ
            positive = logits.diagonal(dim1=1, dim2=2)  # (4, B)
            B = u.shape[1]
            others = ~torch.eye(B, dtype=torch.bool, device=u.device).expand(4, B, B)  # z ≠ y': other pairs
            loss_x, valid_x = contrast_rows(positive, logits, others)  # (4, B): anchors x'
            loss_y, valid_y = contrast_rows(positive, logits.transpose(1, 2), others)  # (4, B): anchors y'
            pair = torch.arange(B, device=u.device).expand(8, B).flatten()
            return mean_over_groups(torch.cat([loss_x, loss_y]).flatten(), torch.cat([valid_x, valid_y]).flatten(),
                                    pair, B, within="sum")
