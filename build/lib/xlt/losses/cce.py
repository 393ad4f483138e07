"""Concatenated contextual embedding (CCE) of a word-positioned sample (Chen et al. 2022, §2.2, Fig. 1a).

The ML-CTL encoder represents a sentence *and* one of its words: sentence avg-first-last ⊕
word avg-first-last, then a fully connected layer. Its outputs are the ``src_features`` /
``tgt_features`` that the InfoNCE or cross-zero NCE objective contrasts (Chen et al. 2022, Eq. 1–2, 5).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ..models.encoder import masked_mean


def avg_first_last(hidden_states: Sequence[torch.Tensor]) -> torch.Tensor:
    """(hidden_states[1] + hidden_states[-1]) / 2: (B, L, H) per token.

    ``hidden_states`` is the backbone's tuple with the embedding output first (as
    ``output_hidden_states=True`` returns it). Reading, as in ``xlt.models.encoder``: "the
    first transformer layer" is the output of layer 1, not the embedding layer.
    """
    if len(hidden_states) < 2:
        raise ValueError(f"avg-first-last needs the embeddings and at least one layer; got {len(hidden_states)} "
                         "state tensor(s): run the backbone with output_hidden_states=True")
    return (hidden_states[1] + hidden_states[-1]) / 2


def span_mask(spans: torch.Tensor, length: int) -> torch.Tensor:
    """(B, 2) ``[start, end)`` token spans -> (B, length) bool mask of the positions inside."""
    positions = torch.arange(length, device=spans.device)  # (L,)
    return (positions >= spans[:, :1]) & (positions < spans[:, 1:])  # (B, L)


class ConcatenatedContextualEmbedding(nn.Module):
    """CCE = W [s ; w] + b, with s and w the avg-first-last sentence and word embeddings.

    Chen et al. 2022, §2.2: "For the sentence-level representation, we choose the average of all tokens
    from the first and last transformer layers (avg-first-last)"; for the word of a WPS "we also
    adapt avg-first-last pattern"; "these two embeddings are spliced and fed into the following
    FC layer to obtain the final CCE". So, with h_t = (h¹_t + h^last_t) / 2 per token t::

        s   = Σ_t m_t h_t / Σ_t m_t          (m = attention mask: every token, specials included)
        w   = Σ_{t ∈ word} h_t / |word|      (the word's sub-tokens)
        CCE = Linear([s ; w])                 (2H -> out_dim)

    Readings where the paper is silent: a word split into several sub-tokens is represented by
    the mean of their states (the same averaging as for the sentence); "all tokens" includes
    ``<s>``/``</s>`` but not padding, as ``xlt.models.encoder.pool`` does; the FC layer is a plain
    affine map with no activation (the paper names only "FC layer"), to ``out_dim`` = H unless
    given; no normalisation here (the contrastive loss takes cosines).

    Args:
        hidden_size: H, the backbone's hidden size.
        out_dim: size of the CCE; defaults to H.

    Forward inputs:
        hidden_states: tuple of (B, L, H), embeddings first (``output_hidden_states=True``)
        attention_mask: (B, L), 1 on real tokens
        word_spans: (B, 2) long ``[start, end)`` token positions of each row's WPS word (from
            ``xlt.pretrain.word_spans``); must be non-empty and inside the row's real tokens

    Returns: (B, out_dim).
    """

    def __init__(self, hidden_size: int, out_dim: int | None = None) -> None:
        super().__init__()
        if hidden_size < 1 or (out_dim is not None and out_dim < 1):
            raise ValueError(f"hidden_size={hidden_size} and out_dim={out_dim} must be positive")
        self.proj = nn.Linear(2 * hidden_size, out_dim or hidden_size)

    def forward(self, hidden_states: Sequence[torch.Tensor], attention_mask: torch.Tensor,
                word_spans: torch.Tensor) -> torch.Tensor:
        states = avg_first_last(hidden_states)  # (B, L, H)
        B, L, _ = states.shape
        if attention_mask.shape != (B, L) or word_spans.shape != (B, 2):
            raise ValueError(f"attention_mask must be ({B}, {L}) and word_spans ({B}, 2) for hidden states of shape "
                             f"{tuple(states.shape)}; got {tuple(attention_mask.shape)} and {tuple(word_spans.shape)}")
        word = span_mask(word_spans, L)  # (B, L)
        real = attention_mask.bool()
        bad = (word.sum(1) == 0) | (word & ~real).any(1)
        if bool(bad.any()):
            b = int(bad.nonzero()[0])
            raise ValueError(f"row {b}: word span {word_spans[b].tolist()} is empty or not inside the "
                             f"{int(real[b].sum())} real tokens of the row")
        sentence = masked_mean(states, attention_mask)  # (B, H)
        word_vec = masked_mean(states, word)  # (B, H)
        return self.proj(torch.cat([sentence, word_vec], dim=-1))  # (B, out_dim)
