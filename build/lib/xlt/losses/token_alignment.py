"""Token- and span-level contrast within parallel pairs.

- ``TokenAlignment``: VECO 2.0 token-to-token contrast (Zhang et al. 2023, §3.2, Eq. 4–7)
- ``WordHardContrast``: MGC word-level hard contrast on aligned word pairs (Li et al. 2021, §2.2, Eq. 1, 3, 4)
- ``WordSoftContrast``: MGC word-level soft contrast through multi-head attention (Li et al. 2021, §2.2, Eq. 1, 5)
- ``SpanContrast``: MGC span-level contrast on aligned spans (Li et al. 2021, §2.3, Eq. 1, 6)

Shared conventions. Token states ``src_tokens`` (B, Ls, D) and ``tgt_tokens`` (B, Lt, D) with
attention masks ``src_mask`` (B, Ls) and ``tgt_mask`` (B, Lt) (bool or 0/1; False/0 = padding);
row b of each side is one parallel pair. Similarities are cosines (ℓ2-normalised dot products)
divided by τ, computed in float32 (float64 inputs stay float64) with autocast off, so fp16/bf16
inputs and mixed-precision training are safe.
Padding never enters a loss: changing padded states leaves the loss unchanged.

An anchor (token or span) with no negative contributes nothing; a pair with no contributing
anchor (no alignment, or no negative) contributes nothing; averages are over the contributing
pairs only, and with none the loss is a 0 connected to the inputs' graph (zero gradients).

"Words" are token positions: which subword stands for a word (e.g. the first one) and which
positions count (special tokens or not) is decided by whoever builds ``alignment`` and the masks.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .base import Objective
from .info_nce import contrast_rows, mean_over_groups
from .numerics import check_temperature, full_precision, upcast


def check_tokens(src_tokens: torch.Tensor, tgt_tokens: torch.Tensor,
                 src_mask: torch.Tensor | None = None, tgt_mask: torch.Tensor | None = None) -> None:
    """(B, Ls, D) and (B, Lt, D) with the same B and D, masks (B, Ls) and (B, Lt); else a ValueError."""
    if src_tokens.dim() != 3 or tgt_tokens.dim() != 3 or src_tokens.shape[0] != tgt_tokens.shape[0] \
            or src_tokens.shape[2] != tgt_tokens.shape[2]:
        raise ValueError(f"src_tokens and tgt_tokens must be (B, Ls, D) and (B, Lt, D) with the same B and D, "
                         f"got {tuple(src_tokens.shape)} and {tuple(tgt_tokens.shape)}")
    for side, tokens, mask in (("src", src_tokens, src_mask), ("tgt", tgt_tokens, tgt_mask)):
        if mask is not None and mask.shape != tokens.shape[:2]:
            raise ValueError(f"{side}_mask must be {tuple(tokens.shape[:2])} to match {side}_tokens, "
                             f"got {tuple(mask.shape)}")


def check_index(name: str, index: torch.Tensor) -> None:
    """An (N, 3) integer index tensor, else a ValueError."""
    if index.dim() != 2 or index.shape[1] != 3 or index.dtype.is_floating_point or index.dtype == torch.bool:
        raise ValueError(f"{name} must be an (N, 3) integer tensor, got {tuple(index.shape)} {index.dtype}")


def check_alignment(alignment: torch.Tensor, src_mask: torch.Tensor, tgt_mask: torch.Tensor) -> None:
    """Rows (pair, src pos, tgt pos) in range and on real (unpadded) tokens, else a ValueError."""
    check_index("alignment", alignment)
    (B, Ls), Lt = src_mask.shape, tgt_mask.shape[1]
    pair, i, j = alignment.unbind(1)
    in_range = (pair >= 0) & (pair < B) & (i >= 0) & (i < Ls) & (j >= 0) & (j < Lt)
    if not bool(in_range.all()):
        bad = alignment[~in_range][0].tolist()
        raise ValueError(f"alignment row {bad} is out of range: pairs [0, {B}), src positions [0, {Ls}), "
                         f"tgt positions [0, {Lt})")
    on_tokens = src_mask[pair, i] & tgt_mask[pair, j]
    if not bool(on_tokens.all()):
        bad = alignment[~on_tokens][0].tolist()
        raise ValueError(f"alignment row {bad} points at a padded position (mask 0); align real tokens only")


def aligned_token_contrast(src_tokens: torch.Tensor, tgt_tokens: torch.Tensor, src_mask: torch.Tensor,
                           tgt_mask: torch.Tensor, alignment: torch.Tensor, temperature: float,
                           same_side_negatives: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """InfoNCE (positive in the denominator) for both tokens of every aligned pair, negatives within its sentence pair.

    The anchor a = x_b[i] has positive y_b[j] and negatives the other real tokens of y_b (and,
    with ``same_side_negatives``, the other real tokens of x_b); the anchor y_b[j] symmetrically.

    Returns (loss (2P,), has_negative (2P,), pair (2P,)): source anchors first, then target anchors.
    """
    xs = F.normalize(upcast(src_tokens), dim=-1)  # (B, Ls, D)
    yt = F.normalize(upcast(tgt_tokens), dim=-1)  # (B, Lt, D)
    pair, i, j = alignment.long().unbind(1)  # (P,) each
    xy = torch.bmm(xs, yt.transpose(1, 2)) / temperature  # (B, Ls, Lt)
    positive = xy[pair, i, j]  # (P,)
    other_src = src_mask[pair] & (torch.arange(xs.shape[1], device=xs.device) != i.unsqueeze(1))  # (P, Ls)
    other_tgt = tgt_mask[pair] & (torch.arange(yt.shape[1], device=yt.device) != j.unsqueeze(1))  # (P, Lt)
    src_rows, src_neg = xy[pair, i], other_tgt  # (P, Lt): a = x_b[i] against the target tokens
    tgt_rows, tgt_neg = xy[pair, :, j], other_src  # (P, Ls): y_b[j] against the source tokens
    if same_side_negatives:
        xx = torch.bmm(xs, xs.transpose(1, 2)) / temperature  # (B, Ls, Ls)
        yy = torch.bmm(yt, yt.transpose(1, 2)) / temperature  # (B, Lt, Lt)
        src_rows, src_neg = torch.cat([src_rows, xx[pair, i]], 1), torch.cat([src_neg, other_src], 1)  # (P, Lt+Ls)
        tgt_rows, tgt_neg = torch.cat([tgt_rows, yy[pair, j]], 1), torch.cat([tgt_neg, other_tgt], 1)  # (P, Ls+Lt)
    loss_src, valid_src = contrast_rows(positive, src_rows, src_neg)
    loss_tgt, valid_tgt = contrast_rows(positive, tgt_rows, tgt_neg)
    return torch.cat([loss_src, loss_tgt]), torch.cat([valid_src, valid_tgt]), torch.cat([pair, pair])


class TokenAlignment(Objective):
    """VECO 2.0 token-to-token contrast within each parallel pair (Zhang et al. 2023, §3.2, Eq. 4–7).

    For pair (x_i, y_i) with aligned ("synonym") token pairs S_i = {(a_j, b_j)} and W the set of
    tokens of x_i *and* y_i, s = cosine::

        l(a_j) = -log  e^{s(a_j, b_j)/τ} / Σ_{k ∈ W\\a_j} e^{s(a_j, k)/τ}          (Eq. 4; Eq. 5 for b_j)
        l_tok(x_i, y_i) = 1/(2|S_i|) Σ_j ( l(a_j) + l(b_j) )                        (Eq. 6)
        L_tok = 1/n Σ_i l_tok(x_i, y_i)                                              (Eq. 7)

    Readings:
    - Negatives are, per the paper, "the remaining tokens in the instance x_i and y_i": every
      real token of *both* sentences of the pair except the anchor and its positive (W\\a_j
      minus b_j; b_j stays in the denominator as the positive). Same-language tokens of the
      anchor's own sentence are negatives too, not only the other sentence's tokens.
    - Tokens are positions: with a many-to-many alignment, a second target token aligned to the
      same a_j is still in W\\a_j, i.e. a negative of the pair (a_j, b_j) — the literal Eq. 4.
    - Eq. 6's 2|S_i| is the number of contributing anchors of the pair (all 2|S_i| of them
      unless some anchor has no negative), and n in Eq. 7 counts the contributing pairs.
    - τ: Zhang et al. (2023) do not state it; 0.1 per the design table.

    Inputs (``requires``): ``src_tokens`` (B, Ls, D), ``tgt_tokens`` (B, Lt, D), ``src_mask`` (B, Ls),
    ``tgt_mask`` (B, Lt), ``alignment`` (P, 3) long rows (pair, src pos, tgt pos) on real tokens.

    Edge cases: a pair with no alignment row, or whose anchors have no negative (one token on each
    side), contributes nothing; with no contributing pair the loss is a 0 connected to the graph.
    """

    name = "token_alignment"
    requires = ("src_tokens", "tgt_tokens", "src_mask", "tgt_mask", "alignment")
    same_side_negatives = True  # W = tokens of x_i and y_i (Eq. 4)
    within_pair = "mean"  # Eq. 6, then Eq. 7 averages the pairs

    def __init__(self, temperature: float = 0.1) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)

    def compute_loss_from_embeddings(self, src_tokens: torch.Tensor, tgt_tokens: torch.Tensor, src_mask: torch.Tensor,
                                     tgt_mask: torch.Tensor, alignment: torch.Tensor) -> torch.Tensor:
        check_tokens(src_tokens, tgt_tokens, src_mask, tgt_mask)
        src_mask, tgt_mask = src_mask.bool(), tgt_mask.bool()
        check_alignment(alignment, src_mask, tgt_mask)
        with full_precision(src_tokens):
            loss, valid, pair = aligned_token_contrast(src_tokens, tgt_tokens, src_mask, tgt_mask, alignment,
                                                       self.temperature, same_side_negatives=self.same_side_negatives)
        return mean_over_groups(loss, valid, pair, src_tokens.shape[0], within=self.within_pair)


class WordHardContrast(TokenAlignment):
    """MGC word-level hard contrast on aligned word pairs (Li et al. 2021, §2.2 "Hard contrasting", Eq. 1, 3, 4).

    For each pair (x, y) and each aligned word pair (x, y) ∈ N_word(x, y)::

        u = ℓ2(h_x),  v+ = ℓ2(h_y),  v- = { ℓ2(h_z) | z ∈ y \\ y }                         (Eq. 3)
        L(u, v+, v-) = -log( e^{u·v+/τ} / (e^{u·v+/τ} + Σ_{v-} e^{u·v-/τ}) )                (Eq. 1)
        L_word(x) = Σ_{(x, y) ∈ N_word} L(u, v+, v-)                                       (Eq. 4)

    and L_word(y) the same with the roles of x and y swapped (anchor h_y, negatives the other
    words of x), as the paper states.

    Readings:
    - Negatives are only the other real tokens of the *other* sentence of the same pair
      (cross-language, within the pair), per Eq. 3 — unlike ``TokenAlignment``.
    - ``alignment`` is N_word: the caller passes the mutually aligned pairs (e.g. the
      intersection of both fast_align directions, Eq. 2). With a many-to-many alignment a second
      token aligned to the same word is a negative (literal "y \\ y").
    - The loss of a pair is L_word(x) + L_word(y) (sums, per Eq. 4 and "the final objective is the
      sum of the contrastive losses"); the batch loss averages it over the contributing pairs
      (the paper does not state the batch reduction).
    - τ = 0.1 (Li et al. 2021, §3.1).

    Inputs (``requires``) and edge cases as ``TokenAlignment``.
    """

    name = "word_hard_contrast"
    same_side_negatives = False  # the other sentence's words only (Eq. 3)
    within_pair = "sum"  # Eq. 4, both directions


class WordSoftContrast(Objective):
    """MGC word-level soft contrast through multi-head attention (Li et al. 2021, §2.2 "Soft contrasting", Eq. 1, 5).

    For each pair (x, y) and *every* word x of x (no aligner), with MHA(h_x, h_y) the multi-head
    attention of query h_x over keys/values h_y (the soft semantic equivalent of x in y)::

        u = ℓ2(h_x),  v+ = ℓ2(MHA(h_x, h_y)),  v- = { ℓ2(MHA(h_z, h_y)) | z ∈ x \\ x }       (Eq. 5)

    with L(u, v+, v-) of Eq. 1 (positive in the denominator), and the swapped direction (words of
    y as anchors, attending over x). The attention is trainable (``self.attention``, an
    ``nn.MultiheadAttention``), so this objective has parameters: give them to the optimiser.

    Readings:
    - Negatives are the soft equivalents of the *other* real words of the anchor's sentence
      (z ∈ x \\ x), per Eq. 5 — not raw target tokens.
    - One attention module serves both directions (x→y and y→x); the paper does not say.
    - Pair loss = Σ over the words of both sentences (as Eq. 4 sums); batch = mean over
      contributing pairs. τ = 0.1 (Li et al. 2021, §3.1).
    - The head count of this attention is not given; the default 12 matches the paper's encoder
      (12 heads, model dim 768). ``embed_dim`` must be divisible by ``num_heads``.
    - The attention runs in its parameters' dtype (inputs are cast to it); similarities in float32.

    Inputs (``requires``): ``src_tokens`` (B, Ls, D), ``tgt_tokens`` (B, Lt, D), ``src_mask`` (B, Ls),
    ``tgt_mask`` (B, Lt); D = ``embed_dim``.

    Edge cases: a sentence with one real word has no negative and contributes nothing in that
    direction; a sentence whose partner is empty (all padding) contributes nothing (its attention
    would have no key). Nothing contributing gives a 0 connected to the graph.
    """

    name = "word_soft_contrast"
    requires = ("src_tokens", "tgt_tokens", "src_mask", "tgt_mask")

    def __init__(self, embed_dim: int, num_heads: int = 12, temperature: float = 0.1, dropout: float = 0.0) -> None:
        super().__init__()
        if not (isinstance(embed_dim, int) and embed_dim > 0):
            raise ValueError(f"embed_dim must be a positive int (the token state size D), got {embed_dim!r}")
        if not (isinstance(num_heads, int) and num_heads > 0 and embed_dim % num_heads == 0):
            raise ValueError(f"num_heads must be a positive int dividing embed_dim={embed_dim}, got {num_heads!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.temperature = check_temperature(temperature)
        self.attention = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, batch_first=True)

    def compute_loss_from_embeddings(self, src_tokens: torch.Tensor, tgt_tokens: torch.Tensor, src_mask: torch.Tensor,
                                     tgt_mask: torch.Tensor) -> torch.Tensor:
        check_tokens(src_tokens, tgt_tokens, src_mask, tgt_mask)
        if src_tokens.shape[2] != self.attention.embed_dim:
            raise ValueError(f"token states have D={src_tokens.shape[2]} but the attention was built with "
                             f"embed_dim={self.attention.embed_dim}")
        src_mask, tgt_mask = src_mask.bool(), tgt_mask.bool()
        loss_x, valid_x = self._anchor_losses(src_tokens, tgt_tokens, src_mask, tgt_mask)  # (B, Ls)
        loss_y, valid_y = self._anchor_losses(tgt_tokens, src_tokens, tgt_mask, src_mask)  # (B, Lt)
        pair_x = torch.arange(src_tokens.shape[0], device=src_tokens.device).repeat_interleave(src_tokens.shape[1])
        pair_y = torch.arange(tgt_tokens.shape[0], device=tgt_tokens.device).repeat_interleave(tgt_tokens.shape[1])
        return mean_over_groups(torch.cat([loss_x.flatten(), loss_y.flatten()]),
                                torch.cat([valid_x.flatten(), valid_y.flatten()]),
                                torch.cat([pair_x, pair_y]), src_tokens.shape[0], within="sum")

    def _anchor_losses(self, query: torch.Tensor, keys: torch.Tensor, query_mask: torch.Tensor,
                       key_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Eq. 5 for every word of ``query`` against its sentence's soft equivalents over ``keys``: (B, Lq) each."""
        has_key = key_mask.any(dim=1)  # (B,)
        # An all-padding partner would make every attention row fully masked (NaN); let it attend
        # to its padding instead, and drop its anchors below.
        key_padding = ~(key_mask | ~has_key.unsqueeze(1))  # (B, Lk), True = ignore
        dtype = self.attention.in_proj_weight.dtype
        soft, _ = self.attention(query.to(dtype), keys.to(dtype), keys.to(dtype), key_padding_mask=key_padding,
                                 need_weights=False)  # (B, Lq, D): MHA(h_x, h_y) for every x
        anchor = query_mask & has_key.unsqueeze(1)  # (B, Lq)
        eye = torch.eye(query.shape[1], dtype=torch.bool, device=query.device)
        negatives = anchor.unsqueeze(2) & anchor.unsqueeze(1) & ~eye  # (B, Lq, Lq): z ∈ x \ x
        with full_precision(query):
            u = F.normalize(upcast(query), dim=-1)  # (B, Lq, D)
            v = F.normalize(upcast(soft), dim=-1)  # (B, Lq, D)
            logits = torch.bmm(u, v.transpose(1, 2)) / self.temperature  # (B, Lq, Lq), [b, x, z] = u_x · v_z / τ
            return contrast_rows(logits.diagonal(dim1=1, dim2=2), logits, negatives)


def mean_pool_spans(tokens: torch.Tensor, spans: torch.Tensor) -> torch.Tensor:
    """MP of Li et al. 2021, Eq. 6: the mean of ``tokens`` (B, L, D) over each span (pair, start, end): (S, D)."""
    pair, start, end = spans.long().unbind(1)
    length = end - start  # (S,)
    span_id = torch.repeat_interleave(torch.arange(len(spans), device=tokens.device), length)  # (T,) one per token
    first = torch.repeat_interleave(torch.cumsum(length, 0) - length, length)  # (T,) index of the span's first token
    position = start[span_id] + torch.arange(len(span_id), device=tokens.device) - first  # (T,)
    summed = tokens.new_zeros(len(spans), tokens.shape[2]).index_add(0, span_id, tokens[pair[span_id], position])
    return summed / length.unsqueeze(1).to(tokens.dtype)


def check_spans(name: str, spans: torch.Tensor, batch: int, length: int) -> None:
    """Rows (pair, start, end) with 0 <= pair < batch and 0 <= start < end <= length, else a ValueError."""
    check_index(name, spans)
    pair, start, end = spans.unbind(1)
    ok = (pair >= 0) & (pair < batch) & (start >= 0) & (start < end) & (end <= length)
    if not bool(ok.all()):
        bad = spans[~ok][0].tolist()
        raise ValueError(f"{name} row {bad} is invalid: need 0 <= pair < {batch} and 0 <= start < end <= {length} "
                         f"(end exclusive, spans non-empty)")


def distinct_others(spans: torch.Tensor) -> torch.Tensor:
    """(S, S) bool: [s, k] = span k is a negative of span s's side, read as the set "y \\ ȳ".

    True when k is in the same pair, is the first occurrence of its (start, end) in the list
    (each distinct span counted once) and differs from span s's (start, end).
    """
    same = (spans.unsqueeze(1) == spans.unsqueeze(0)).all(dim=2)  # (S, S): same pair and bounds
    first = ~torch.tril(same, diagonal=-1).any(dim=1)  # (S,): no earlier identical row
    same_pair = spans[:, 0].unsqueeze(1) == spans[:, 0].unsqueeze(0)  # (S, S)
    return same_pair & first.unsqueeze(0) & ~same


class SpanContrast(Objective):
    """MGC span-level contrast on aligned spans (Li et al. 2021, §2.3, Eq. 1, 6).

    For each pair (x, y) and each aligned span pair (x̄, ȳ) ∈ N_span(x, y) (from a phrase table),
    with MP the mean over the span's token states::

        u = ℓ2(MP(h_x̄)),  v+ = ℓ2(MP(h_ȳ)),  v- = { ℓ2(MP(h_z̄)) | z̄ ∈ y \\ ȳ }            (Eq. 6)

    with L(u, v+, v-) of Eq. 1 (positive in the denominator); the pair's loss is the sum over
    N_span "similar to Eq. (4)", in both directions (anchors x̄ against target spans, anchors ȳ
    against source spans).

    Readings:
    - z̄ ∈ y \\ ȳ: the *other aligned spans of y* in N_span of the same pair (not all spans of y,
      not tokens), taken as a set: each distinct (start, end) once, and never ȳ itself — so when
      one target span is aligned to two source spans it is the positive of both and a negative
      of neither. The reverse direction reads x \\ x̄ the same way.
    - Pair loss = Σ over spans of both directions; batch = mean over contributing pairs (the
      paper states neither the direction nor the batch reduction). τ = 0.1 (Li et al. 2021, §3.1).

    Inputs (``requires``): ``src_tokens`` (B, Ls, D), ``tgt_tokens`` (B, Lt, D), ``src_spans`` and
    ``tgt_spans`` (S, 3) long rows (pair, start, end), end exclusive; row s of ``src_spans`` is
    aligned to row s of ``tgt_spans`` (same pair). Spans must be non-empty and inside the sentence.

    Edge cases: a pair with a single distinct span on the other side has no negative and
    contributes nothing; no spans at all gives a 0 connected to the graph.
    """

    name = "span_contrast"
    requires = ("src_tokens", "tgt_tokens", "src_spans", "tgt_spans")

    def __init__(self, temperature: float = 0.1) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)

    def compute_loss_from_embeddings(self, src_tokens: torch.Tensor, tgt_tokens: torch.Tensor, src_spans: torch.Tensor,
                                     tgt_spans: torch.Tensor) -> torch.Tensor:
        check_tokens(src_tokens, tgt_tokens)
        (B, Ls, _), Lt = src_tokens.shape, tgt_tokens.shape[1]
        check_spans("src_spans", src_spans, B, Ls)
        check_spans("tgt_spans", tgt_spans, B, Lt)
        if src_spans.shape != tgt_spans.shape or not bool((src_spans[:, 0] == tgt_spans[:, 0]).all()):
            raise ValueError(f"src_spans {tuple(src_spans.shape)} and tgt_spans {tuple(tgt_spans.shape)} must be "
                             f"row-aligned: row s of each is one aligned span pair of the same parallel pair")
        with full_precision(src_tokens):
            u = F.normalize(mean_pool_spans(upcast(src_tokens), src_spans), dim=-1)  # (S, D)
            v = F.normalize(mean_pool_spans(upcast(tgt_tokens), tgt_spans), dim=-1)  # (S, D)
            logits = u @ v.T / self.temperature  # (S, S), [s, k] = u_s · v_k / τ
            positive = logits.diagonal()  # (S,)
            loss_x, valid_x = contrast_rows(positive, logits, distinct_others(tgt_spans.long()))
            loss_y, valid_y = contrast_rows(positive, logits.T, distinct_others(src_spans.long()))
            pair = src_spans[:, 0].long()
            return mean_over_groups(torch.cat([loss_x, loss_y]), torch.cat([valid_x, valid_y]),
                                    torch.cat([pair, pair]), B, within="sum")
