"""Naive loop references for the parallel-text objectives, written straight from the equations.

One function per objective, ``naive_<objective>``, taking the same tensors as the objective's
``compute_loss_from_embeddings`` plus its hyperparameters as keywords. Python loops over pairs,
tokens and keys; exp/log without any stabilisation: use float64 and small inputs. The tests
compare losses and gradients with ``xlt.losses``; the parallel-loss benchmark imports them too.

Documented edge behaviour is mirrored: an anchor with no negative is skipped, averages are over
what contributes, and with nothing contributing the result is ``0 * sum(inputs)``.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a @ b) / (a.norm() * b.norm())


def _unit(a: torch.Tensor) -> torch.Tensor:
    return a / a.norm()


def _eq1(u: torch.Tensor, v_pos: torch.Tensor, v_negs: list[torch.Tensor], temperature: float) -> torch.Tensor:
    """Li et al. 2021, Eq. 1 on already ℓ2-normalised vectors: -log(e^{u·v+/τ} / (e^{u·v+/τ} + Σ e^{u·v-/τ}))."""
    pos = torch.exp(u @ v_pos / temperature)
    return -torch.log(pos / (pos + sum(torch.exp(u @ k / temperature) for k in v_negs)))


def _zero(*tensors: torch.Tensor) -> torch.Tensor:
    return sum(t.sum() for t in tensors) * 0


def naive_parallel_info_nce(src_features: torch.Tensor, tgt_features: torch.Tensor, temperature: float = 0.07,
                            symmetric: bool = True, positive_in_denominator: bool = True) -> torch.Tensor:
    """Zhang et al. 2023, Eq. 1–3 literally (keys X\\x_i ∪ Y hold the positive); without the positive:
    Chen et al. 2022, Eq. 5."""
    n = len(src_features)
    terms = []
    directions = [(src_features, tgt_features)] + ([(tgt_features, src_features)] if symmetric else [])
    for anchors, partners in directions:
        for i in range(n):
            keys = [anchors[k] for k in range(n) if k != i] + [partners[k] for k in range(n)
                                                              if positive_in_denominator or k != i]
            if len(keys) == (1 if positive_in_denominator else 0):
                continue  # only the positive (or nothing): no negative
            numerator = torch.exp(_cos(anchors[i], partners[i]) / temperature)
            denominator = sum(torch.exp(_cos(anchors[i], k) / temperature) for k in keys)
            terms.append(-torch.log(numerator / denominator))
    return sum(terms) / len(terms) if terms else _zero(src_features, tgt_features)


def naive_cross_zero_nce(src_features: torch.Tensor, tgt_features: torch.Tensor, temperature: float = 0.07,
                         symmetric: bool = True) -> torch.Tensor:
    """Chen et al. 2022, Eq. 5 averaged as Eq. 2: -log(e^{s+} / Σ_{k ∈ X\\x_i ∪ Y\\y_i} e^{s(x_i, k)})."""
    n = len(src_features)
    terms = []
    directions = [(src_features, tgt_features)] + ([(tgt_features, src_features)] if symmetric else [])
    for anchors, partners in directions:
        for i in range(n):
            negatives = [anchors[k] for k in range(n) if k != i] + [partners[k] for k in range(n) if k != i]
            if not negatives:
                continue
            s_pos = _cos(anchors[i], partners[i]) / temperature
            terms.append(-torch.log(torch.exp(s_pos) / sum(torch.exp(_cos(anchors[i], k) / temperature)
                                                           for k in negatives)))
    return sum(terms) / len(terms) if terms else _zero(src_features, tgt_features)


def naive_token_alignment(src_tokens: torch.Tensor, tgt_tokens: torch.Tensor, src_mask: torch.Tensor,
                          tgt_mask: torch.Tensor, alignment: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """Zhang et al. 2023, Eq. 4–7 literally: keys W \\ a_j over the real tokens of both sentences of the pair."""
    per_pair: dict[int, list[torch.Tensor]] = {}
    for b, i, j in alignment.tolist():
        W = [("x", t) for t in range(src_tokens.shape[1]) if src_mask[b, t]] + \
            [("y", t) for t in range(tgt_tokens.shape[1]) if tgt_mask[b, t]]
        vec = {("x", t): src_tokens[b, t] for t in range(src_tokens.shape[1])}
        vec.update({("y", t): tgt_tokens[b, t] for t in range(tgt_tokens.shape[1])})
        for anchor, positive in ((("x", i), ("y", j)), (("y", j), ("x", i))):
            keys = [k for k in W if k != anchor]
            if len(keys) <= 1:
                continue  # the positive alone: no negative
            numerator = torch.exp(_cos(vec[anchor], vec[positive]) / temperature)
            denominator = sum(torch.exp(_cos(vec[anchor], vec[k]) / temperature) for k in keys)
            per_pair.setdefault(b, []).append(-torch.log(numerator / denominator))
    if not per_pair:
        return _zero(src_tokens, tgt_tokens)
    l_tok = [sum(terms) / len(terms) for terms in per_pair.values()]  # Eq. 6
    return sum(l_tok) / len(l_tok)  # Eq. 7


def naive_word_hard_contrast(src_tokens: torch.Tensor, tgt_tokens: torch.Tensor, src_mask: torch.Tensor,
                             tgt_mask: torch.Tensor, alignment: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """Li et al. 2021, Eq. 1, 3, 4: per pair L_word(x) + L_word(y); mean over pairs that contribute."""
    per_pair: dict[int, list[torch.Tensor]] = {}
    for b, i, j in alignment.tolist():
        # L_word(x): u = h_x[i], v+ = h_y[j], v- = the other real words of y
        negatives = [_unit(tgt_tokens[b, t]) for t in range(tgt_tokens.shape[1]) if tgt_mask[b, t] and t != j]
        if negatives:
            per_pair.setdefault(b, []).append(
                _eq1(_unit(src_tokens[b, i]), _unit(tgt_tokens[b, j]), negatives, temperature))
        # L_word(y): swapped
        negatives = [_unit(src_tokens[b, t]) for t in range(src_tokens.shape[1]) if src_mask[b, t] and t != i]
        if negatives:
            per_pair.setdefault(b, []).append(
                _eq1(_unit(tgt_tokens[b, j]), _unit(src_tokens[b, i]), negatives, temperature))
    if not per_pair:
        return _zero(src_tokens, tgt_tokens)
    return sum(sum(terms) for terms in per_pair.values()) / len(per_pair)


def _mha(query: torch.Tensor, keys: list[torch.Tensor], attention: nn.MultiheadAttention) -> torch.Tensor:
    """nn.MultiheadAttention for one query vector over a list of key/value vectors, by hand."""
    D, H = attention.embed_dim, attention.num_heads
    d = D // H
    Wq, Wk, Wv = attention.in_proj_weight.chunk(3)
    bq, bk, bv = attention.in_proj_bias.chunk(3)
    q = Wq @ query + bq
    ks = [Wk @ k + bk for k in keys]
    vs = [Wv @ k + bv for k in keys]
    heads = []
    for h in range(H):
        sl = slice(h * d, (h + 1) * d)
        scores = [q[sl] @ k[sl] / math.sqrt(d) for k in ks]
        z = sum(torch.exp(s) for s in scores)
        heads.append(sum(torch.exp(s) / z * v[sl] for s, v in zip(scores, vs)))
    return attention.out_proj.weight @ torch.cat(heads) + attention.out_proj.bias


def naive_word_soft_contrast(src_tokens: torch.Tensor, tgt_tokens: torch.Tensor, src_mask: torch.Tensor,
                             tgt_mask: torch.Tensor, attention: nn.MultiheadAttention,
                             temperature: float = 0.1) -> torch.Tensor:
    """Li et al. 2021, Eq. 1, 5: every real word against MHA soft equivalents; both directions, one attention."""
    per_pair: dict[int, list[torch.Tensor]] = {}
    for b in range(src_tokens.shape[0]):
        sides = ((src_tokens[b], src_mask[b], tgt_tokens[b], tgt_mask[b]),
                 (tgt_tokens[b], tgt_mask[b], src_tokens[b], src_mask[b]))
        for h_x, m_x, h_y, m_y in sides:
            words = [t for t in range(len(h_x)) if m_x[t]]
            keys = [h_y[t] for t in range(len(h_y)) if m_y[t]]
            if not keys:
                continue
            soft = {t: _unit(_mha(h_x[t], keys, attention)) for t in words}
            for t in words:
                negatives = [soft[z] for z in words if z != t]
                if negatives:
                    per_pair.setdefault(b, []).append(_eq1(_unit(h_x[t]), soft[t], negatives, temperature))
    if not per_pair:
        return _zero(src_tokens, tgt_tokens)
    return sum(sum(terms) for terms in per_pair.values()) / len(per_pair)


def naive_span_contrast(src_tokens: torch.Tensor, tgt_tokens: torch.Tensor, src_spans: torch.Tensor,
                        tgt_spans: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """Li et al. 2021, Eq. 1, 6: negatives = the set of the pair's other aligned spans on the other side."""
    def mp(tokens: torch.Tensor, b: int, start: int, end: int) -> torch.Tensor:
        return _unit(sum(tokens[b, t] for t in range(start, end)) / (end - start))

    rows = list(zip(src_spans.tolist(), tgt_spans.tolist()))
    per_pair: dict[int, list[torch.Tensor]] = {}
    for (b, xs, xe), (_, ys, ye) in rows:
        # anchor x̄ against the distinct target spans of the pair other than ȳ, and the reverse
        tgt_others = {(s, e) for (_, _, _), (c, s, e) in rows if c == b and (s, e) != (ys, ye)}
        src_others = {(s, e) for (c, s, e), _ in rows if c == b and (s, e) != (xs, xe)}
        u, v = mp(src_tokens, b, xs, xe), mp(tgt_tokens, b, ys, ye)
        if tgt_others:
            per_pair.setdefault(b, []).append(
                _eq1(u, v, [mp(tgt_tokens, b, s, e) for s, e in sorted(tgt_others)], temperature))
        if src_others:
            per_pair.setdefault(b, []).append(
                _eq1(v, u, [mp(src_tokens, b, s, e) for s, e in sorted(src_others)], temperature))
    if not per_pair:
        return _zero(src_tokens, tgt_tokens)
    return sum(sum(terms) for terms in per_pair.values()) / len(per_pair)


def naive_noisy_sentence_contrast(src_features: torch.Tensor, tgt_features: torch.Tensor,
                                  src_noisy_features: torch.Tensor, tgt_noisy_features: torch.Tensor,
                                  temperature: float = 0.1) -> torch.Tensor:
    """Li et al. 2021, Eq. 1, 7, 8: the four (x', y') of each pair, both directions, same-variant in-batch negatives."""
    n = len(src_features)
    per_pair: dict[int, list[torch.Tensor]] = {}
    for xs in (src_features, src_noisy_features):
        for ys in (tgt_features, tgt_noisy_features):
            for i in range(n):
                if n == 1:
                    continue
                per_pair.setdefault(i, []).append(
                    _eq1(_unit(xs[i]), _unit(ys[i]), [_unit(ys[k]) for k in range(n) if k != i], temperature))
                per_pair.setdefault(i, []).append(
                    _eq1(_unit(ys[i]), _unit(xs[i]), [_unit(xs[k]) for k in range(n) if k != i], temperature))
    if not per_pair:
        return _zero(src_features, tgt_features, src_noisy_features, tgt_noisy_features)
    return sum(sum(terms) for terms in per_pair.values()) / len(per_pair)
