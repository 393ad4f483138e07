"""Pooling against naive loops; the encode() contract (order, bucketing, normalisation)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xlt.models import Classifier, EncoderConfig, load_encoder, pool
from xlt.models.encoder import batch_bounds

TEXTS = ["a", "a much longer sentence than the others", "中文句子", "mid length one", "", "x y"]


def naive_pool(states, mask, pooling, layer):
    out = []
    for b in range(mask.shape[0]):
        keep = [t for t in range(mask.shape[1]) if mask[b, t] == 1]
        if pooling == "cls":
            out.append(states[layer][b, 0])
        elif pooling == "mean":
            out.append(sum(states[layer][b, t] for t in keep) / len(keep))
        else:
            out.append(sum((states[1][b, t] + states[-1][b, t]) / 2 for t in keep) / len(keep))
    return torch.stack(out)


@pytest.mark.parametrize("pooling", ["cls", "mean", "avg_first_last"])
@pytest.mark.parametrize("layer", [-1, 2, 0])
def test_pool_matches_naive(pooling, layer):
    g = torch.Generator().manual_seed(3)
    states = tuple(torch.randn(3, 5, 4, generator=g) for _ in range(4))
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    assert torch.allclose(pool(states, mask, pooling, layer), naive_pool(states, mask, pooling, layer), atol=1e-6)


def test_pool_rejects_unknown():
    with pytest.raises(ValueError, match="valid: cls, mean, avg_first_last"):
        pool((torch.zeros(1, 1, 1),), torch.ones(1, 1), "max")


@pytest.mark.parametrize("pooling", ["cls", "mean", "avg_first_last"])
def test_encode_order_independent_of_bucketing(pooling):
    enc = load_encoder(EncoderConfig(source="tiny:xlm-roberta", pooling=pooling))
    sorted_ = enc.encode(TEXTS, batch_size=2, sort_by_length=True)
    plain = enc.encode(TEXTS, batch_size=2, sort_by_length=False)
    one_by_one = np.stack([enc.encode([t])[0] for t in TEXTS])
    # Padding must not leak into the pooled vector: bucketed, unbucketed and single-text agree.
    assert np.allclose(sorted_, one_by_one, atol=1e-5)
    assert np.allclose(plain, one_by_one, atol=1e-5)


def naive_batches(lengths: list[int], rows: int, tokens: int) -> list[list[int]]:
    """Greedy, as written: add the next item unless the batch would then exceed ``rows`` items or
    (with a budget) ``tokens`` = items × its longest; a lone item is always a batch."""
    batches: list[list[int]] = []
    for i, _ in enumerate(lengths):
        if batches:
            grown = batches[-1] + [i]
            if len(grown) <= rows and (not tokens or len(grown) * max(lengths[j] for j in grown) <= tokens):
                batches[-1] = grown
                continue
        batches.append([i])
    return batches


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("rows, tokens", [(4, 0), (64, 40), (3, 25), (100, 7)])
def test_batch_bounds_match_a_naive_greedy_batching(seed, rows, tokens):
    lengths = sorted(np.random.default_rng(seed).integers(1, 20, size=30).tolist()) if seed % 2 else \
        np.random.default_rng(seed).integers(1, 20, size=30).tolist()  # sorted as encode passes them, or not
    bounds = batch_bounds(lengths, rows, tokens)
    assert [list(range(a, b)) for a, b in bounds] == naive_batches(lengths, rows, tokens)


def test_batch_bounds_check_their_arguments():
    assert batch_bounds([], 4) == []
    with pytest.raises(ValueError, match="rows must be >= 1 and tokens >= 0"):
        batch_bounds([3], 0)


def test_encode_in_a_token_budget_gives_the_same_features():
    enc = load_encoder(EncoderConfig(source="tiny:xlm-roberta"))
    calls: list[int] = []
    embed = enc.embed
    enc.embed = lambda texts: (calls.append(len(texts)), embed(texts))[1]
    budgeted = enc.encode(TEXTS, batch_size=64, tokens_per_batch=12)
    assert len(calls) > 1 and sum(calls) == len(TEXTS)
    assert np.allclose(budgeted, enc.encode(TEXTS, batch_size=64), atol=1e-5)


def test_encode_normalize_and_layer_choice():
    enc = load_encoder(EncoderConfig(source="tiny:bert", pooling="mean", layer=1))
    v = enc.encode(TEXTS, normalize=True)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    last = load_encoder(EncoderConfig(source="tiny:bert", pooling="mean")).encode(TEXTS)
    assert not np.allclose(enc.encode(TEXTS), last)


def test_layer_out_of_range():
    with pytest.raises(ValueError, match="out of range for a 2-layer model"):
        load_encoder(EncoderConfig(source="tiny:bert", layer=5))


def test_embed_is_differentiable_and_encode_restores_train_mode():
    enc = load_encoder("tiny:bert")
    enc.train()
    enc.embed(["hello", "world"]).sum().backward()
    assert any(p.grad is not None for p in enc.parameters())
    enc.encode(["x"])
    assert enc.training


PAIRS = [("a", "b c"), ("a much longer premise than the others", "short"), ("中文句子", "另一个"), ("x", "")]


@pytest.mark.parametrize("pair_encoding", ["joint", "combine"])
@pytest.mark.parametrize("items", [TEXTS, PAIRS], ids=["texts", "pairs"])
def test_embed_by_length_gives_one_pass_features_and_gradients(items, pair_encoding):
    enc = load_encoder(EncoderConfig(source="tiny:xlm-roberta", pair_encoding=pair_encoding))
    enc.eval()  # no dropout: the passes are deterministic
    weights = torch.randn(len(items), enc.feature_dim(isinstance(items[0], tuple)), generator=torch.Generator().manual_seed(1))

    def features_and_grads(embed):
        enc.zero_grad()
        features = embed()
        (features * weights).sum().backward()
        return features.detach(), [p.grad.clone() for p in enc.parameters() if p.grad is not None]

    one, one_grads = features_and_grads(lambda: enc.embed(items))
    for rows in (1, 2, 3, len(items)):
        passes, grads = features_and_grads(lambda: enc.embed_by_length(items, rows))
        # In input order, whatever the passes: each item's features and the summed gradient are one pass's.
        assert torch.allclose(passes, one, atol=1e-5), rows
        assert len(grads) == len(one_grads) and all(torch.allclose(g, h, atol=1e-5) for g, h in zip(grads, one_grads))


def test_embed_by_length_sorts_its_passes():
    enc = load_encoder("tiny:bert")
    shapes = []
    enc.register_forward_hook(lambda module, inputs, output: shapes.append(tuple(inputs[0].shape)))
    enc.embed_by_length(TEXTS, 2)
    lengths = sorted(enc.lengths(TEXTS))
    # Three passes of two texts, each padded to its own longest text, shortest first.
    assert shapes == [(2, lengths[1]), (2, lengths[3]), (2, lengths[5])]


def test_classifier_predict_contract():
    clf = Classifier(load_encoder("tiny:bert"), ["sports", "health", "travel"])
    pred = clf.predict(TEXTS, batch_size=4)
    assert len(pred) == len(TEXTS) and set(pred.labels) <= {"sports", "health", "travel"}
    assert np.allclose(pred.probabilities.sum(1), 1.0, atol=1e-5)
    assert np.allclose(pred.confidence, pred.probabilities.max(1))
    assert [clf.labels[i] for i in pred.probabilities.argmax(1)] == pred.labels
    clf.train()
    logits = clf(TEXTS[:2])
    assert logits.shape == (2, 3) and logits.requires_grad


def test_classifier_rejects_bad_labels():
    with pytest.raises(ValueError, match="at least two distinct"):
        Classifier(load_encoder("tiny:bert"), ["a", "a"])


@pytest.mark.parametrize("pair_encoding", ["joint", "combine"])
@pytest.mark.parametrize("items", [TEXTS, PAIRS], ids=["texts", "pairs"])
def test_items_tokenised_ahead_embed_as_the_items_do(items, pair_encoding):
    enc = load_encoder(EncoderConfig(source="tiny:xlm-roberta", pair_encoding=pair_encoding))
    enc.eval()
    tokens = enc.tokens(items)
    # Naive reference: the tokenizer called by hand as the module docstring says each encoding reads a pair.
    texts = [enc.prefix + (item[0] if isinstance(item, tuple) else item) for item in items]
    if isinstance(items[0], tuple) and pair_encoding == "combine":
        sides = [b for _, b in items]
        by_hand = enc.tokenizer(texts + [enc.prefix + b for b in sides], padding=True, truncation=True,
                                max_length=enc.max_length, return_tensors="pt")
        assert tokens.sides == len(items)
    elif isinstance(items[0], tuple):
        by_hand = enc.tokenizer(texts, [b for _, b in items], padding=True, truncation="longest_first",
                                max_length=enc.max_length, return_tensors="pt")
        assert tokens.sides == 0
    else:
        by_hand = enc.tokenizer(texts, padding=True, truncation=True, max_length=enc.max_length, return_tensors="pt")
    assert torch.equal(tokens.tensors["input_ids"], by_hand["input_ids"])
    assert torch.equal(enc.embed_tokens(tokens), enc.embed(items))


def test_an_encoder_of_text_as_it_is_has_no_tokens():
    from xlt.models.encoder import CachedEncoder, TextEncoder

    class Lengths(TextEncoder):
        dim, trainable = 1, False

        def embed_texts(self, texts):
            return torch.tensor([[float(len(t))] for t in texts])

    enc = CachedEncoder(Lengths())
    assert enc.tokens(["a"]) is None
    with pytest.raises(TypeError, match="reads text as it is"):
        enc.embed_tokens(load_encoder("tiny:bert").tokens(["a"]))
