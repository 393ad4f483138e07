"""Rows of examples (each with its views) -> one flat batch of N texts for one encoder pass.

A train dataset holds one row per original example: ``text`` (and ``text_pair`` for a
sentence-pair task), ``label``, ``lang`` and, when an augmentation ran (``xlt.augment``,
``DataSettings.augment``), the list columns ``views`` / ``view_pairs`` / ``view_kinds`` /
``view_langs``. Rows without those columns, or with empty lists, are plain CE fine-tuning. An
example and its views always travel in the same row, so a batch never separates them. The
items of a pair task are ``(text, text_pair)`` tuples, its views ``(view, view_pair)``: the
encoder encodes each pair as one input (``xlt.models.encoder``).

``flatten_batch`` lays out every example followed by its views::

    row:        0      1      2      3      4      5
    text:       x_0    v_0a   v_0b   x_1    x_2    v_2a
    group:      0      0      0      3      4      4      (row of the original)
    is_anchor:  T      F      F      T      T      F
    labels:     y_0    y_0    y_0    y_1    y_2    y_2    (views inherit the label)

which is the view-batch layout of ``xlt.losses.base`` (``group`` indexes rows, originals point
to themselves), so CL / SCL / MVA / LA / SA read it directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..augment import ALIGNED_VIEW_COLUMNS
from ..models.encoder import Item, Tokens

UNKNOWN_LABEL = -1  # the losses' marker for an unlabelled row


@dataclass(frozen=True)
class ViewBatch:
    """N = originals + views of one step; tensors on CPU (the step moves what it needs)."""

    texts: list[Item]  # (N,) texts, or (text, text_pair) tuples
    labels: torch.Tensor  # (N,) long, -1 where unknown
    group: torch.Tensor  # (N,) long: row of the original
    is_anchor: torch.Tensor  # (N,) bool: the originals
    num_examples: int  # B originals
    is_translation: torch.Tensor | None = None  # (N,) bool: full-translation views (None: no kinds given)
    tokens: Tokens | None = None  # ``texts`` tokenised ahead of the step (``TextEncoder.tokens``), where they were

    def __len__(self) -> int:
        return len(self.texts)

    def outputs(self, features: torch.Tensor, logits: torch.Tensor) -> dict[str, torch.Tensor]:
        """The ``xlt.losses`` outputs of this batch, given the step's (N, D) features and (N, C) logits."""
        device = features.device
        translation = self.is_translation if self.is_translation is not None else torch.zeros_like(self.is_anchor)
        return {"features": features, "logits": logits, "labels": self.labels.to(device),
                "group": self.group.to(device), "is_anchor": self.is_anchor.to(device),
                "is_translation": translation.to(device)}


def _cells(batch: Mapping[str, Any], column: str, n: int) -> list:
    values = batch[column]
    if len(values) != n:
        raise ValueError(f"column {column!r} has {len(values)} entries for a batch of {n} rows")
    return list(values)


def _as_list(value: Any, column: str, row: int) -> list[str]:
    """A list cell as Ray Data hands it over (object array, list, or None for no views)."""
    if value is None:
        return []
    if isinstance(value, str):
        raise ValueError(f"row {row}: column {column!r} holds a string {value!r}; expected a list of strings")
    items = list(value.tolist() if isinstance(value, np.ndarray) else value)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"row {row}: column {column!r} holds {item!r}; expected non-empty strings")
    return items


def _missing(value: Any) -> bool:
    """``None``, or the NaN that pandas puts in a missing cell."""
    return value is None or (isinstance(value, (float, np.floating)) and bool(np.isnan(value)))


def _label_id(value: Any, label_index: Mapping[str, int], row: int) -> int:
    if _missing(value):
        return UNKNOWN_LABEL
    label = str(value)
    if label not in label_index:
        raise ValueError(f"row {row}: unknown label {label!r}; the classifier's labels are "
                         f"{', '.join(label_index)}")
    return label_index[label]


def _pair_column(batch: Mapping[str, Any], n: int) -> list | None:
    """The ``text_pair`` cells, or ``None`` when the batch holds single texts (no column, or all missing)."""
    if "text_pair" not in batch:
        return None
    pairs = _cells(batch, "text_pair", n)
    missing = [_missing(p) for p in pairs]
    if all(missing):
        return None
    if any(missing):
        raise ValueError(f"row {missing.index(True)} has no text_pair but other rows do; a task is single "
                         "texts or sentence pairs, not both")
    return pairs


def items_of(batch: Mapping[str, Any]) -> list[Item]:
    """The encoder inputs of a batch of rows: ``text``, or ``(text, text_pair)`` for a pair task."""
    texts = list(batch["text"])
    pairs = _pair_column(batch, len(texts))
    return texts if pairs is None else [(str(t), str(p)) for t, p in zip(texts, pairs)]


def flatten_batch(batch: Mapping[str, Any], label_index: Mapping[str, int]) -> ViewBatch:
    """One batch of rows (a Ray Data numpy batch or any mapping of column -> sequence) -> ``ViewBatch``.

    Required columns: ``text``; ``label`` (class names, ``None`` = unlabelled) unless every row
    is unlabelled. Optional: ``text_pair`` (a pair task); ``views`` with ``view_pairs`` (pairs) /
    ``view_kinds`` / ``view_langs`` aligned to it.
    """
    if "text" not in batch:
        raise ValueError(f"a train batch needs a 'text' column; got columns {', '.join(batch) or 'none'}")
    texts = batch["text"]
    n = len(texts)
    if n == 0:
        raise ValueError("empty batch: no rows")
    labels = _cells(batch, "label", n) if "label" in batch else [None] * n
    pairs = _pair_column(batch, n)
    views = _cells(batch, "views", n) if "views" in batch else [None] * n
    view_pairs = _cells(batch, "view_pairs", n) if pairs is not None and "views" in batch else None
    aligned = {c: _cells(batch, c, n) for c in ALIGNED_VIEW_COLUMNS[2:] if c in batch}

    flat_texts: list[Item] = []
    flat_labels: list[int] = []
    group: list[int] = []
    is_anchor: list[bool] = []
    is_translation: list[bool] = []
    kinds = aligned.get("view_kinds")
    for i in range(n):
        text = texts[i]
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"row {i}: text {text!r} is not a non-empty string")
        row_views: list[Item] = list(_as_list(views[i], "views", i))
        if pairs is not None:
            pair = pairs[i]
            if not isinstance(pair, str) or not pair.strip():
                raise ValueError(f"row {i}: text_pair {pair!r} is not a non-empty string")
            text = (text, pair)
            sides = _as_list(view_pairs[i], "view_pairs", i) if view_pairs is not None else []
            if len(sides) != len(row_views):
                raise ValueError(f"row {i}: {len(sides)} view_pairs but {len(row_views)} views; a view of a pair "
                                 "has both sides")
            row_views = list(zip(row_views, sides))
        for column, cells in aligned.items():
            k = len(_as_list(cells[i], column, i))
            if k != len(row_views):
                raise ValueError(f"row {i}: {k} entries in {column!r} but {len(row_views)} views; "
                                 "the view columns must be aligned")
        label = _label_id(labels[i], label_index, i)
        anchor = len(flat_texts)
        row_kinds = _as_list(kinds[i], "view_kinds", i) if kinds is not None else [""] * len(row_views)
        for j, t in enumerate([text, *row_views]):
            flat_texts.append(t)
            flat_labels.append(label)
            group.append(anchor)
            is_anchor.append(j == 0)
            is_translation.append(j > 0 and row_kinds[j - 1] == "full")
    return ViewBatch(
        texts=flat_texts,
        labels=torch.tensor(flat_labels, dtype=torch.long),
        group=torch.tensor(group, dtype=torch.long),
        is_anchor=torch.tensor(is_anchor, dtype=torch.bool),
        num_examples=n,
        is_translation=torch.tensor(is_translation, dtype=torch.bool),
    )


def batches_of(rows: Sequence[Mapping[str, Any]], batch_size: int) -> list[dict[str, list]]:
    """Row dicts -> column batches of ``batch_size`` rows (the shape ``iter_batches`` yields), for
    loops without Ray Data (tests, the bare-PyTorch benchmark)."""
    out = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        out.append({k: [r.get(k) for r in chunk] for k in dict.fromkeys(k for r in chunk for k in r)})
    return out
