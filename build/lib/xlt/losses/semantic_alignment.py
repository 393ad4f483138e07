"""Semantic alignment (SA): a source text against b of its translations and b other-class sources.

Yu & Joty 2021 (*Effective Fine-tuning Methods for Cross-lingual Adaptation*), §3.2,
Eq. 4–5. The loss reads 2b-batches, formed in one of two ways:

- from examples: :func:`build_semantic_alignment_batches` (pure, seeded) and
  :func:`semantic_alignment_layout` give the rows to encode and the ``labels`` / ``group`` /
  ``is_anchor`` tensors the loss reads;
- from a fine-tuning view batch (``SemanticAlignment(b=...)``): each labelled original with at
  least b full-translation views (``is_translation``) takes b of them as positives and the
  embeddings of b originals of the same batch with another label as negatives
  (:func:`two_b_batches`), so no row is encoded twice.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from ..data.records import Example
from .base import Objective
from .contrastive import check_labels, masked_info_nce
from .multiview import view_pairs
from .numerics import check_temperature, full_precision, upcast


@dataclass(frozen=True)
class SemanticAlignmentBatch:
    """One 2b-batch of Yu & Joty 2021, Eq. 4: the source ``anchor`` x_i, its ``translations``
    x_i^(1..b) (positives, b distinct languages) and ``negatives``, b source-language examples
    with a label other than the anchor's."""

    anchor: Example
    translations: tuple[Example, ...]
    negatives: tuple[Example, ...]

    @property
    def rows(self) -> tuple[Example, ...]:
        """The 2b + 1 examples to encode: anchor, translations, negatives."""
        return (self.anchor, *self.translations, *self.negatives)


def build_semantic_alignment_batches(
    examples: Sequence[Example], b: int, *, seed: int = 0, source_lang: str = "en"
) -> list[SemanticAlignmentBatch]:
    """Forms the SA batches of Yu & Joty 2021, §3.2 from D^bi: sources in ``source_lang`` and their
    translations (linked by a shared ``source_id``). Pure: same inputs and seed, same batches.

    Construction, one batch per eligible source, in input order:

    - anchor x_i: an example in ``source_lang`` with a ``label`` and a ``source_id``;
    - positives: b translations of x_i ("parallel texts of x_i from different languages"):
      examples with the same ``source_id`` in another language; b distinct languages are drawn
      without replacement, then one translation per language (several translations into one
      language are alternatives);
    - negatives: b examples in ``source_lang`` with a label y_j ≠ y_i, drawn without
      replacement from the given examples ("we only sample negative pairs from D^bi": pass
      D^bi, or D ∪ D^bi to sample from both).

    A source with fewer than b translation languages, or fewer than b different-label sources
    available, gets no batch. A translation's label, when set, must equal its source's (the
    paper: "they have the same label y_i").

    Raises ``ValueError`` for b < 1, for inconsistent translation labels, and when no source
    qualifies (the message says why).
    """
    if isinstance(b, bool) or not isinstance(b, int) or b < 1:
        raise ValueError(f"b={b!r} is invalid; the number of translations per batch must be an integer >= 1")
    sources = [e for e in examples if e.lang == source_lang]
    if not sources:
        langs = sorted({e.lang for e in examples})
        raise ValueError(
            f"no example in source_lang={source_lang!r} among {len(examples)} examples "
            f"(languages present: {', '.join(langs) or 'none'})"
        )
    label_of_source: dict[str, str] = {
        e.source_id: e.label for e in sources if e.source_id is not None and e.label is not None
    }
    translations: dict[str, dict[str, list[Example]]] = {}  # source_id -> lang -> translations
    for e in examples:
        if e.lang == source_lang or e.source_id is None:
            continue
        expected = label_of_source.get(e.source_id)
        if e.label is not None and expected is not None and e.label != expected:
            raise ValueError(
                f"translation {e.id!r} ({e.lang}) has label {e.label!r} but its source "
                f"(source_id {e.source_id!r}) has label {expected!r}; translations keep the source's label"
            )
        translations.setdefault(e.source_id, {}).setdefault(e.lang, []).append(e)
    by_label: dict[str, list[Example]] = {}
    for e in sources:
        if e.label is not None:
            by_label.setdefault(e.label, []).append(e)
    other_label_pool = {y: [e for z, es in by_label.items() if z != y for e in es] for y in by_label}

    rng = random.Random(seed)
    batches: list[SemanticAlignmentBatch] = []
    too_few_langs = too_few_negatives = 0
    for anchor in sources:
        if anchor.label is None or anchor.source_id is None:
            continue
        by_lang = translations.get(anchor.source_id, {})
        pool = other_label_pool[anchor.label]
        if len(by_lang) < b:
            too_few_langs += 1
            continue
        if len(pool) < b:
            too_few_negatives += 1
            continue
        langs = rng.sample(sorted(by_lang), b)
        chosen = tuple(rng.choice(by_lang[lang]) for lang in langs)
        negatives = tuple(rng.sample(pool, b))
        batches.append(SemanticAlignmentBatch(anchor, chosen, negatives))
    if not batches:
        labelled = sum(1 for e in sources if e.label is not None and e.source_id is not None)
        raise ValueError(
            f"no SA batch with b={b}: of {len(sources)} {source_lang!r} examples, {labelled} have a label and "
            f"a source_id; {too_few_langs} of those have translations in fewer than {b} languages, "
            f"{too_few_negatives} more have fewer than {b} {source_lang!r} examples of another label to contrast with"
        )
    return batches


def semantic_alignment_layout(
    batches: Sequence[SemanticAlignmentBatch], label_ids: Mapping[str, int]
) -> tuple[list[Example], dict[str, torch.Tensor]]:
    """The rows to encode (each batch's ``rows``, concatenated) and the tensors
    :class:`SemanticAlignment` reads: ``labels`` (N,) long (translations get their anchor's
    label), ``group`` (N,) long (the row of the batch's anchor, for every row of the batch)
    and ``is_anchor`` (N,) bool. N = Σ (2b + 1)."""
    rows: list[Example] = []
    labels: list[int] = []
    group: list[int] = []
    is_anchor: list[bool] = []

    def label_id(e: Example) -> int:
        if e.label not in label_ids:
            valid = ", ".join(map(repr, label_ids))
            raise ValueError(f"label {e.label!r} of example {e.id!r} is not in label_ids ({valid})")
        return label_ids[e.label]

    for batch in batches:
        start = len(rows)
        y = label_id(batch.anchor)
        rows.extend(batch.rows)
        labels += [y] * (1 + len(batch.translations)) + [label_id(e) for e in batch.negatives]
        group += [start] * len(batch.rows)
        is_anchor += [True] + [False] * (len(batch.rows) - 1)
    return rows, {
        "labels": torch.tensor(labels, dtype=torch.long),
        "group": torch.tensor(group, dtype=torch.long),
        "is_anchor": torch.tensor(is_anchor, dtype=torch.bool),
    }


def two_b_batches(labels: torch.Tensor, group: torch.Tensor, is_anchor: torch.Tensor, is_translation: torch.Tensor,
                  b: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """2b-batches of Yu & Joty 2021, Eq. 4 from a view batch: ``(index, labels, group, is_anchor)`` such that
    ``features[index]`` with the other three is the layout :class:`SemanticAlignment` reads.

    For each labelled original i (``is_anchor``, label ≥ 0), in batch order: positives = its first
    b views with ``is_translation`` (translations keep the original's label); negatives = the
    first b originals with another (known) label, scanning the batch cyclically from i. An
    original short of either gets no batch. Deterministic: the batch order is already shuffled.
    """
    anchors = is_anchor.nonzero().squeeze(1).tolist()
    labels_list, group_list, translation = labels.tolist(), group.tolist(), is_translation.tolist()
    index: list[int] = []
    out_labels: list[int] = []
    out_group: list[int] = []
    out_anchor: list[bool] = []
    for position, i in enumerate(anchors):
        y = labels_list[i]
        if y < 0:
            continue
        positives = [k for k, g in enumerate(group_list) if g == i and k != i and translation[k]][:b]
        ring = anchors[position + 1:] + anchors[:position]
        negatives = [j for j in ring if labels_list[j] >= 0 and labels_list[j] != y][:b]
        if len(positives) < b or len(negatives) < b:
            continue
        start = len(index)
        index += [i, *positives, *negatives]
        out_labels += [y] * (1 + b) + [labels_list[j] for j in negatives]
        out_group += [start] * (2 * b + 1)
        out_anchor += [True] + [False] * (2 * b)
    device = labels.device
    return (torch.tensor(index, dtype=torch.long, device=device), torch.tensor(out_labels, dtype=torch.long, device=device),
            torch.tensor(out_group, dtype=torch.long, device=device),
            torch.tensor(out_anchor, dtype=torch.bool, device=device))


class SemanticAlignment(Objective):
    """Semantic alignment: a source text is pulled toward its translations and pushed away from
    source texts of other classes, each source in its own 2b-batch.

    Yu & Joty 2021, §3.2, Eq. 4 (combined with CE in Eq. 5)::

        L_SA^i = −Σ_{t=1}^{b} log  exp(h_i·h_i^(t) / τ) / Σ_{k ∈ B_i} 𝕀_{i≠k} exp(h_i·h_k / τ)

        L_SA = 1/M Σ_i L_SA^i      (mean over the M batches that contribute)

    h = L2-normalised sentence embedding; B_i the 2b-batch of source x_i: its b translations
    x_i^(t) (positives, label y_i) and b source-language texts x_j with y_j ≠ y_i (negatives).

    Reading of the batch: |B| = 2b counts the *pairs* (x_i, x_k) of the paper ("the first half
    ... {(x_i, x_i^(t))}_{t=1}^b", "the second half {(x_i, x_j)}_{j=b+1}^{2b}"), so x_i itself is
    encoded once beside its 2b partners: a batch is 2b + 1 rows. The denominator runs over the
    2b partners (𝕀_{i≠k} excludes the anchor), positives included. Eq. 4 sums over the b
    positives (kept); several batches stacked in one step are averaged, so one step of M
    batches has the scale of the paper's one-batch step.

    How the rows say it (:func:`semantic_alignment_layout` produces this): ``is_anchor`` marks
    each x_i; ``group[k]`` is the row of the anchor whose batch row k belongs to (for a
    translation that is the original it is a view of, as everywhere in ``xlt.losses``; for a
    negative it is the anchor it was drawn for, the SA-specific use of the key); a partner is a
    positive iff its label is the anchor's (translations keep the source's label, negatives have
    another by construction). Batches can have different b.

    Edge cases: a batch without positives (e.g. an anchor labelled ``-1``) or without negatives
    contributes nothing; if none contributes (a batch of one) the loss is a zero connected to
    ``features``. Identical embeddings give b·log(2b), finite. Similarities in float32 (float64
    stays float64), logsumexp denominator: fp16/bf16-safe.

    Args:
        temperature: τ > 0. Yu & Joty (2021) give no value; the default 1.0 is Wang et al. (2022)'s (§5.3).
        b: ``None`` reads 2b-batches as they are (above). An integer reads a fine-tuning view batch
            (``xlt.train.batches``: originals with their views) and forms the 2b-batches itself
            (:func:`two_b_batches`); it then also requires ``is_translation``. Yu & Joty (2021) give no b;
            it is bounded by the full-translation views per example (``data.augment.t_f``).
        projection: ``{dims: [...]}`` contrasts g(Φ), a projection head of the objective's own, instead
            of Φ, which the classifier keeps reading (``xlt.losses.projection``). Default ``None``: Φ.

    Inputs (``requires``):
        - ``features`` (N, D): embeddings of the rows of one or more SA batches
        - ``labels`` (N,) long: class of each row
        - ``group`` (N,) long: row of the anchor of the batch each row belongs to
        - ``is_anchor`` (N,) bool: the anchors x_i

    References:
        - Yu & Joty 2021, Effective Fine-tuning Methods for Cross-lingual Adaptation, EMNLP 2021 (docs/references.md).
    """

    name: ClassVar[str] = "semantic_alignment"
    requires: ClassVar[tuple[str, ...]] = ("features", "labels", "group", "is_anchor")

    def __init__(self, temperature: float = 1.0, b: int | None = None,
                 projection: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.temperature = check_temperature(temperature)
        if b is not None and (isinstance(b, bool) or not isinstance(b, int) or b < 1):
            raise ValueError(f"b={b!r} is invalid; the translations (and negatives) per 2b-batch: an integer >= 1")
        self.b = b
        if b is not None:
            self.requires = (*type(self).requires, "is_translation")
        self.project(projection)

    def forward(self, outputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        if self.b is None:
            return super().forward(outputs)
        features, labels, group, is_anchor, is_translation = self.inputs(outputs)
        index, sa_labels, sa_group, sa_anchor = two_b_batches(labels, group, is_anchor, is_translation, self.b)
        if index.numel() == 0:  # no original has b translations and b other-class partners
            return features.sum() * 0
        return self.compute_loss_from_embeddings(features[index], sa_labels, sa_group, sa_anchor)

    def compute_loss_from_embeddings(
        self, features: torch.Tensor, labels: torch.Tensor, group: torch.Tensor, is_anchor: torch.Tensor
    ) -> torch.Tensor:
        with full_precision(features):
            view_pairs(features, group, is_anchor)  # validates the layout
            n = features.shape[0]
            check_labels(labels, n)
            z = F.normalize(upcast(features), dim=-1)  # (N, D)
            anchors = is_anchor.nonzero().squeeze(1)  # (M,)
            logits = z[anchors] @ z.T / self.temperature  # (M, N)
            rows = torch.arange(n, device=logits.device)
            partners = (group[None, :] == anchors[:, None]) & (rows[None, :] != anchors[:, None])  # (M, N): B_i
            y = labels[anchors]  # (M,)
            positives = partners & (labels[None, :] == y[:, None]) & (y >= 0)[:, None]  # (M, N)
            contributes = positives.any(dim=1) & (partners & ~positives).any(dim=1)  # (M,)
            if not bool(contributes.any()):
                return z.sum() * 0
            return masked_info_nce(logits[contributes], partners[contributes], positives[contributes]).mean()
