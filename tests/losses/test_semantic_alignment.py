from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import pytest
import torch

from xlt.data.records import Example
from xlt.losses.semantic_alignment import (
    SemanticAlignment,
    build_semantic_alignment_batches,
    semantic_alignment_layout,
)

from .naive_sentence import naive_semantic_alignment


def sa_batch(bs: Sequence[int], *, n_labels: int = 3, dim: int = 8, seed: int = 0) -> dict[str, torch.Tensor]:
    """Stacked SA batches, block m = anchor + bs[m] translations (its label) + bs[m] negatives
    (other labels), rows shuffled; ``group`` = the block's anchor row."""
    g = torch.Generator().manual_seed(seed)
    group: list[int] = []
    labels: list[int] = []
    is_anchor: list[bool] = []
    for b in bs:
        start = len(group)
        y = int(torch.randint(n_labels, (1,), generator=g))
        others = [(y + 1 + int(torch.randint(n_labels - 1, (1,), generator=g))) % n_labels for _ in range(b)]
        group += [start] * (1 + 2 * b)
        labels += [y] * (1 + b) + others
        is_anchor += [True] + [False] * 2 * b
    n = len(group)
    perm = torch.randperm(n, generator=g)
    new_row = torch.empty(n, dtype=torch.long)
    new_row[perm] = torch.arange(n)
    return {
        "features": torch.randn(n, dim, generator=g, dtype=torch.float64).requires_grad_(),
        "labels": torch.tensor(labels)[perm],
        "group": new_row[torch.tensor(group)[perm]],
        "is_anchor": torch.tensor(is_anchor)[perm],
    }


def _inputs(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    return batch["features"], batch["labels"], batch["group"], batch["is_anchor"]


# --- the loss (Yu & Joty 2021, Eq. 4) --------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [1.0, 0.1])
@pytest.mark.parametrize("bs", [[1], [4], [2, 3, 1], [3, 3, 3, 3]])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_naive_loss_and_gradient(temperature: float, bs: list[int], seed: int) -> None:
    batch = sa_batch(bs, seed=seed)
    x = batch["features"]
    loss = SemanticAlignment(temperature)(batch)
    expected = naive_semantic_alignment(*_inputs(batch), temperature=temperature)
    (grad,) = torch.autograd.grad(loss, x)
    (expected_grad,) = torch.autograd.grad(expected, x)
    assert torch.allclose(loss, expected)
    assert torch.allclose(grad, expected_grad)


def test_interface_and_bad_temperature() -> None:
    sa = SemanticAlignment()
    assert sa.temperature == 1.0 and sa.requires == ("features", "labels", "group", "is_anchor")
    with pytest.raises(ValueError, match=r"temperature=-1 is invalid; τ must be a finite number > 0"):
        SemanticAlignment(-1)


def test_hand_computed_reading() -> None:
    """Anchor a, translations t1, t2, negatives n1, n2 (b = 2), τ = 1: the denominator runs over
    the 2b partners (positives included), Eq. 4 sums over the b positives."""
    a, t1, t2, n1, n2 = [1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [-1.0, 0.0]
    x = torch.tensor([a, t1, t2, n1, n2])
    labels = torch.tensor([0, 0, 0, 1, 2])
    group = torch.zeros(5, dtype=torch.long)
    is_anchor = torch.tensor([True, False, False, False, False])
    e = math.e
    denominator = e + 1 + 1 + 1 / e
    expected = -math.log(e / denominator) - math.log(1 / denominator)
    loss = SemanticAlignment(1.0).compute_loss_from_embeddings(x, labels, group, is_anchor)
    assert loss.item() == pytest.approx(expected)


@pytest.mark.parametrize(
    "labels, is_anchor",
    [
        ([0], [True]),  # a batch of one: an anchor without partners
        ([0, 0, 0], [True, False, False]),  # translations only: no negative
        ([0, 1, 2], [True, False, False]),  # negatives only: no positive
        ([-1, -1, 1], [True, False, False]),  # an unlabelled anchor
    ],
)
def test_nothing_to_contrast_gives_a_connected_zero(labels: list[int], is_anchor: list[bool]) -> None:
    x = torch.randn(len(labels), 4, requires_grad=True)
    loss = SemanticAlignment().compute_loss_from_embeddings(
        x, torch.tensor(labels), torch.zeros(len(labels), dtype=torch.long), torch.tensor(is_anchor)
    )
    assert loss.item() == 0 and loss.grad_fn is not None
    loss.backward()
    assert torch.equal(x.grad, torch.zeros_like(x))


def test_blocks_that_do_not_contribute_are_left_out_of_the_mean() -> None:
    batch = sa_batch([2, 2], seed=3)
    features, labels, group, is_anchor = _inputs(batch)
    second = group == group[is_anchor].max()
    labels_without_negatives = torch.where(second, labels[group], labels)  # block 2: all partners positive
    loss = SemanticAlignment().compute_loss_from_embeddings(features, labels_without_negatives, group, is_anchor)
    only_first = ~second
    remap = torch.cumsum(only_first.long(), 0) - 1
    alone = SemanticAlignment().compute_loss_from_embeddings(
        features[only_first], labels[only_first], remap[group[only_first]], is_anchor[only_first]
    )
    assert torch.allclose(loss, alone)


def test_identical_embeddings_give_b_log_2b() -> None:
    batch = sa_batch([3, 3])
    x = torch.ones(len(batch["group"]), 4, requires_grad=True)
    loss = SemanticAlignment(0.05).compute_loss_from_embeddings(x, batch["labels"], batch["group"], batch["is_anchor"])
    loss.backward()
    assert loss.item() == pytest.approx(3 * math.log(6)) and torch.isfinite(x.grad).all()


def test_bf16_is_finite() -> None:
    batch = sa_batch([2, 3, 4], seed=1)
    x = batch["features"].detach().bfloat16().requires_grad_()
    rest = _inputs(batch)[1:]
    loss = SemanticAlignment(0.05).compute_loss_from_embeddings(x, *rest)
    reference = SemanticAlignment(0.05).compute_loss_from_embeddings(x.detach().double(), *rest)
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss) and torch.isfinite(x.grad.float()).all()
    assert loss.item() == pytest.approx(reference.item(), rel=1e-4)


def test_translations_near_their_source_beat_shuffled_translations() -> None:
    g = torch.Generator().manual_seed(0)
    m, b, d = 4, 3, 16
    anchors = torch.randn(m, d, generator=g)
    translations = anchors.repeat_interleave(b, 0) + 0.1 * torch.randn(m * b, d, generator=g)  # (m·b, d)
    negatives = torch.randn(m * b, d, generator=g)
    labels = torch.cat([torch.zeros(m), torch.zeros(m * b), torch.ones(m * b)]).long()
    group = torch.cat([torch.arange(m), torch.arange(m).repeat_interleave(b), torch.arange(m).repeat_interleave(b)])
    is_anchor = torch.arange(m * (1 + 2 * b)) < m
    sa = SemanticAlignment(0.1)
    aligned = sa.compute_loss_from_embeddings(torch.cat([anchors, translations, negatives]), labels, group, is_anchor)
    shuffled = sa.compute_loss_from_embeddings(
        torch.cat([anchors, translations.roll(b, dims=0), negatives]), labels, group, is_anchor
    )
    assert aligned < shuffled


# --- the batch builder -------------------------------------------------------------------------------

LANGS = ["de", "fr", "es", "zh", "sw"]


def corpus() -> list[Example]:
    """12 English sources over 3 labels, each translated into all of LANGS except source 11
    (two languages only); source 5 has two German translations."""
    examples = []
    for i in range(12):
        label = ["science", "sports", "travel"][i % 3]
        sid = f"s{i}"
        examples.append(Example(id=f"en-{i}", text=f"text {i}", lang="en", label=label, source_id=sid))
        for lang in LANGS if i != 11 else LANGS[:2]:
            examples.append(Example(id=f"{lang}-{i}", text=f"{lang} {i}", lang=lang, label=label, source_id=sid))
    examples.append(Example(id="de-5b", text="de 5 bis", lang="de", label="travel", source_id="s5"))
    examples.append(Example(id="en-unlabelled", text="no label", lang="en", source_id="s99"))
    return examples


def test_builder_shapes_positives_and_negatives() -> None:
    b = 3
    batches = build_semantic_alignment_batches(corpus(), b, seed=0)
    assert [bt.anchor.id for bt in batches] == [f"en-{i}" for i in range(11)]  # 11: too few languages
    for bt in batches:
        assert len(bt.translations) == b and len(bt.negatives) == b and len(bt.rows) == 2 * b + 1
        assert all(t.source_id == bt.anchor.source_id and t.lang != "en" for t in bt.translations)
        assert len({t.lang for t in bt.translations}) == b  # b different languages
        assert all(n.lang == "en" and n.label != bt.anchor.label for n in bt.negatives)
        assert len({n.id for n in bt.negatives}) == b


def test_builder_is_deterministic_under_a_seed() -> None:
    first = build_semantic_alignment_batches(corpus(), 2, seed=7)
    assert build_semantic_alignment_batches(corpus(), 2, seed=7) == first
    assert build_semantic_alignment_batches(corpus(), 2, seed=8) != first


@pytest.mark.parametrize("b", [0, -1, 1.5, True])
def test_builder_rejects_bad_b(b: object) -> None:
    with pytest.raises(ValueError, match=r"b=.* is invalid"):
        build_semantic_alignment_batches(corpus(), b)  # type: ignore[arg-type]


def test_builder_errors_say_why() -> None:
    with pytest.raises(ValueError, match=r"no example in source_lang='xx'.*de, en, es"):
        build_semantic_alignment_batches(corpus(), 2, source_lang="xx")
    with pytest.raises(ValueError, match=r"12 have a label and a source_id; 12 of those have translations in fewer than 6"):
        build_semantic_alignment_batches(corpus(), 6)
    one_label = [dataclasses.replace(e, label="science") if e.label else e for e in corpus()]
    with pytest.raises(ValueError, match=r"0 of those .*, 12 more have fewer than 2 'en' examples of another label"):
        build_semantic_alignment_batches(one_label, 2)
    bad = [*corpus(), Example(id="fr-0x", text="x", lang="fr", label="travel", source_id="s0")]
    with pytest.raises(ValueError, match=r"translation 'fr-0x' \(fr\) has label 'travel'.*'science'"):
        build_semantic_alignment_batches(bad, 2)


def test_layout_feeds_the_loss() -> None:
    batches = build_semantic_alignment_batches(corpus(), 2, seed=1)[:3]
    label_ids = {"science": 0, "sports": 1, "travel": 2}
    rows, tensors = semantic_alignment_layout(batches, label_ids)
    n = 3 * 5
    assert len(rows) == n and rows[:5] == list(batches[0].rows)
    assert tensors["group"].tolist() == [0] * 5 + [5] * 5 + [10] * 5
    assert tensors["is_anchor"].tolist() == [True, False, False, False, False] * 3
    negative_ids = [label_ids[e.label] for e in batches[0].negatives]
    assert tensors["labels"].tolist()[:5] == [0, 0, 0, *negative_ids]
    features = torch.randn(n, 8, dtype=torch.float64)
    loss = SemanticAlignment()({"features": features, **tensors})
    expected = naive_semantic_alignment(features, tensors["labels"], tensors["group"], tensors["is_anchor"])
    assert torch.allclose(loss, expected)
    with pytest.raises(ValueError, match=r"label 'science' of example 'en-0' is not in label_ids \('sports'"):
        semantic_alignment_layout(batches, {"sports": 0})


def test_two_b_batches_take_translations_as_positives_and_other_class_originals_as_negatives():
    from xlt.losses.semantic_alignment import two_b_batches

    # rows: 0 orig(y=0) 1 full view of 0  2 code-switched view of 0 | 3 orig(y=1) 4 full view of 3 | 5 orig(y=0)
    labels = torch.tensor([0, 0, 0, 1, 1, 0])
    group = torch.tensor([0, 0, 0, 3, 3, 5])
    is_anchor = torch.tensor([True, False, False, True, False, True])
    is_translation = torch.tensor([False, True, False, False, True, False])
    index, y, g, a = two_b_batches(labels, group, is_anchor, is_translation, b=1)
    # original 0: positive 1 (not the code-switched 2), negative 3; original 3: positive 4, negative 5
    # (the next other-class original, cyclically); original 5 has no translation: no batch
    assert index.tolist() == [0, 1, 3, 3, 4, 5]
    assert y.tolist() == [0, 0, 1, 1, 1, 0] and g.tolist() == [0, 0, 0, 3, 3, 3]
    assert a.tolist() == [True, False, False, True, False, False]
    assert two_b_batches(labels, group, is_anchor, is_translation, b=2)[0].numel() == 0


def test_view_batch_form_has_a_non_zero_loss_and_gradient():
    torch.manual_seed(0)
    features = torch.randn(6, 8, requires_grad=True)
    outputs = {"features": features, "labels": torch.tensor([0, 0, 0, 1, 1, 0]),
               "group": torch.tensor([0, 0, 0, 3, 3, 5]),
               "is_anchor": torch.tensor([True, False, False, True, False, True]),
               "is_translation": torch.tensor([False, True, False, False, True, False])}
    loss = SemanticAlignment(b=1)(outputs)
    loss.backward()
    assert loss.item() > 0 and features.grad.abs().sum() > 0
    assert features.grad[2].abs().sum() == 0  # the code-switched view is no SA positive
    # the same batch read as 2b-batches as given (b=None) has no negatives: zero, as before
    assert SemanticAlignment()({k: v for k, v in outputs.items() if k != "is_translation"}).item() == 0
    with pytest.raises(ValueError, match="b=0 is invalid"):
        SemanticAlignment(b=0)
