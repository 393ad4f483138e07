"""The concatenated contextual embedding against a naive loop; multi-sub-token words; shapes; errors."""

from __future__ import annotations

import pytest
import torch

from xlt.losses.cce import ConcatenatedContextualEmbedding, avg_first_last, span_mask

B, L, H = 3, 6, 4


def batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    states = tuple(torch.randn(B, L, H, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(4))
    attention = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    spans = torch.tensor([[1, 2], [2, 5], [1, 3]])  # rows 1 and 2: words of 3 and 2 sub-tokens
    return states, attention, spans


def naive_cce(module, states, attention, spans):
    out = []
    for b in range(B):
        layer_avg = [(states[1][b, t] + states[-1][b, t]) / 2 for t in range(L)]
        real = [t for t in range(L) if attention[b, t] == 1]
        sentence = sum(layer_avg[t] for t in real) / len(real)
        word_positions = range(int(spans[b, 0]), int(spans[b, 1]))
        word = sum(layer_avg[t] for t in word_positions) / len(word_positions)
        out.append(module.proj.weight @ torch.cat([sentence, word]) + module.proj.bias)
    return torch.stack(out)


def test_matches_naive_loop_with_gradient():
    torch.manual_seed(0)
    cce = ConcatenatedContextualEmbedding(H, out_dim=5).double()
    states, attention, spans = batch()
    got, want = cce(states, attention, spans), naive_cce(cce, states, attention, spans)
    assert got.shape == (B, 5)
    assert torch.allclose(got, want)
    wrt = [states[0], states[1], states[2], states[3], cce.proj.weight]
    g_got = torch.autograd.grad(got.sum(), wrt, allow_unused=True)
    g_want = torch.autograd.grad(want.sum(), wrt, allow_unused=True)
    assert g_got[0] is None and g_got[2] is None  # only layers 1 and last enter
    for a, b in zip(g_got[1:], g_want[1:]):
        if a is not None:
            assert torch.allclose(a, b)


def test_multi_subtoken_word_is_the_mean_of_its_subtokens():
    states, attention, spans = batch(1)
    cce = ConcatenatedContextualEmbedding(H).double()
    with torch.no_grad():  # identity on the word half, zero on the sentence half: output = word vector
        cce.proj.weight.zero_()
        cce.proj.weight[:, H:] = torch.eye(H)
        cce.proj.bias.zero_()
    out = cce(states, attention, spans)
    layer_avg = (states[1] + states[3]) / 2
    assert torch.allclose(out[1], layer_avg[1, 2:5].mean(0))
    assert torch.allclose(out[2], layer_avg[2, 1:3].mean(0))
    assert torch.allclose(out[0], layer_avg[0, 1])
    # Padding does not leak into the sentence half.
    padded = tuple(s.detach().clone() for s in states)
    for s in padded:
        s[0, 4:] = 1e3
    with torch.no_grad():
        cce.proj.weight.zero_()
        cce.proj.weight[:, :H] = torch.eye(H)
    assert torch.allclose(cce(padded, attention, spans)[0], cce(states, attention, spans)[0])


def test_default_size_and_helpers():
    states, attention, spans = batch()
    cce = ConcatenatedContextualEmbedding(H).double()
    assert cce(states, attention, spans).shape == (B, H)
    assert cce.proj.in_features == 2 * H
    assert span_mask(spans, L).long().tolist()[1] == [0, 0, 1, 1, 1, 0]
    assert torch.allclose(avg_first_last(states), (states[1] + states[-1]) / 2)


def test_errors_name_the_problem():
    states, attention, spans = batch()
    cce = ConcatenatedContextualEmbedding(H).double()
    with pytest.raises(ValueError, match="row 0"):
        cce(states, attention, torch.tensor([[3, 5], [2, 5], [1, 3]]))  # reaches padding
    with pytest.raises(ValueError, match="row 2"):
        cce(states, attention, torch.tensor([[1, 2], [2, 5], [2, 2]]))  # empty
    with pytest.raises(ValueError, match="word_spans"):
        cce(states, attention, spans[:2])
    with pytest.raises(ValueError, match="output_hidden_states"):
        cce(states[:1], attention, spans)
    with pytest.raises(ValueError, match="positive"):
        ConcatenatedContextualEmbedding(0)
