"""Masked and translation language modeling: BERT masking and the loss over the masked tokens.

- ``mask_tokens``: choose 15% of the maskable tokens; of those 80% become the mask token, 10% a
  random token, 10% stay (Devlin et al. 2019 §3.1; the same recipe in Li et al. 2021, §2.4, last
  paragraph). Seeded through a ``torch.Generator``, vectorised over the batch.
- ``tlm_inputs``: a parallel pair concatenated into one sequence, ``<s> src </s></s> tgt </s>``
  for XLM-R tokenizers, for TLM (Zhang et al. 2023, §3.3 and Eq. 8; Li et al. 2021, §2.4). TLM *is* ``mask_tokens``
  on these inputs followed by ``MaskedLanguageModeling``.
- ``MaskedLanguageModeling``: cross-entropy over the masked positions only. In ML-CTL it is the
  auxiliary term α·L_MLM with α = 0.1 (Chen et al. 2022, Eq. 3 and 8, §4.1): ``MLM_WEIGHT``, the weight
  to give it in ``WeightedObjectives``. In VECO 2.0 (Zhang et al. 2023, Eq. 8) L_TLM has weight 1 on
  bilingual batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from .base import Objective

IGNORE_INDEX = -100  # label of positions that are not predicted (``mlm_labels``)
MLM_WEIGHT = 0.1  # α of Chen et al. 2022, Eq. 3 / Eq. 8 (§4.1: "set α as 0.1")


@dataclass(frozen=True)
class MaskingVocabulary:
    """What masking needs to know about a vocabulary.

    ``special_ids`` (padding, ``<s>``, ``</s>``, ``<unk>``, the mask token, ...) are never
    selected for prediction and never drawn as random replacements. ``from_tokenizer`` takes
    them from a Hugging Face tokenizer (``all_special_ids``, ``mask_token_id``, ``len``).
    """

    mask_token_id: int
    vocab_size: int
    special_ids: frozenset[int]

    def __post_init__(self) -> None:
        if not 0 <= self.mask_token_id < self.vocab_size:
            raise ValueError(f"mask_token_id={self.mask_token_id} is outside the vocabulary [0, {self.vocab_size})")
        if self.mask_token_id not in self.special_ids:
            object.__setattr__(self, "special_ids", frozenset(self.special_ids) | {self.mask_token_id})
        if len(self.special_ids) >= self.vocab_size:
            raise ValueError(f"all {self.vocab_size} token ids are special; nothing can be drawn as a random token")

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> MaskingVocabulary:
        if tokenizer.mask_token_id is None:
            raise ValueError(f"{type(tokenizer).__name__} has no mask token; MLM needs one (e.g. <mask> or [MASK])")
        return cls(int(tokenizer.mask_token_id), len(tokenizer), frozenset(int(i) for i in tokenizer.all_special_ids))

    @classmethod
    def coerce(cls, vocab: Any) -> MaskingVocabulary:
        return vocab if isinstance(vocab, MaskingVocabulary) else cls.from_tokenizer(vocab)


def _random_non_special(shape: torch.Size, vocab: MaskingVocabulary, generator: torch.Generator | None,
                        device: torch.device) -> torch.Tensor:
    """Token ids uniform over the non-special ids: draw from [0, V − #specials), then step over
    each special id in increasing order (no V-sized table, exact uniformity)."""
    specials = sorted(vocab.special_ids)
    ids = torch.randint(0, vocab.vocab_size - len(specials), shape, generator=generator, device=device)
    for s in specials:
        ids += (ids >= s).long()
    return ids


def mask_tokens(
    input_ids: torch.Tensor,
    vocab: MaskingVocabulary | Any,
    probability: float = 0.15,
    generator: torch.Generator | None = None,
    *,
    attention_mask: torch.Tensor | None = None,
    mask_ratio: float = 0.8,
    random_ratio: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking of a batch: ``(B, L)`` ids -> ``(masked_ids (B, L), labels (B, L))``.

    Devlin et al. 2019 §3.1, as Li et al. (2021, §2.4) restate it for concatenated pairs: "randomly
    select 15% tokens as candidates ... 80% are replaced with [MASK], 10% are kept unchanged,
    and the remaining are replaced by randomly selected vocabulary tokens".

    Reading chosen for "15% of the tokens": per sequence, exactly ⌊p·n + u⌋ of its n maskable
    tokens (u ~ U[0, 1), stochastic rounding as in fairseq's masked LM), chosen uniformly
    without replacement. The expected fraction is exactly p (BERT's ``max(1, round(p·n))`` is
    biased for short sentences), and unlike an independent coin per token (Hugging Face's
    collator) every row gets its share: a long row never ends up with no prediction by chance.
    Maskable = not a special id and (if given) ``attention_mask`` 1.
    Each chosen token independently becomes the mask token with probability ``mask_ratio``,
    a random non-special token with ``random_ratio`` (which may equal the original, as in
    BERT), else stays.

    Args:
        input_ids: (B, L) long token ids, padded with the tokenizer's pad id.
        vocab: a ``MaskingVocabulary`` or a Hugging Face tokenizer to build one from.
        probability: the fraction p of maskable tokens chosen for prediction.
        generator: the source of randomness (on ``input_ids``'s device); the same generator
            state gives the same masking.
        attention_mask: (B, L), 0 on padding; optional, since padding is a special id anyway.

    Returns:
        ``masked_ids`` (B, L): the model input; ``labels`` (B, L): the original id at the chosen
        positions and ``-100`` everywhere else (the ``mlm_labels`` of ``xlt.losses.base``).
    """
    if not 0.0 <= probability <= 1.0:
        raise ValueError(f"probability={probability} must be in [0, 1]")
    if mask_ratio < 0 or random_ratio < 0 or mask_ratio + random_ratio > 1:
        raise ValueError(f"mask_ratio={mask_ratio} and random_ratio={random_ratio} must be >= 0 with a sum <= 1")
    if input_ids.dim() != 2 or input_ids.dtype.is_floating_point:
        raise ValueError(f"input_ids must be a (B, L) integer tensor, got {tuple(input_ids.shape)} {input_ids.dtype}")
    vocab = MaskingVocabulary.coerce(vocab)
    device = input_ids.device
    special = torch.tensor(sorted(vocab.special_ids), device=device)
    maskable = ~torch.isin(input_ids, special)  # (B, L)
    if attention_mask is not None:
        maskable &= attention_mask.bool()
    n = maskable.sum(1)  # (B,)
    k = (probability * n + torch.rand(n.shape, generator=generator, device=device)).floor().long()  # (B,)
    # A random key per position, +inf on the unmaskable ones; the k smallest keys of a row are its choice.
    keys = torch.rand(input_ids.shape, generator=generator, device=device).masked_fill(~maskable, float("inf"))
    rank = keys.argsort(1).argsort(1)  # (B, L) rank of each position in its row
    chosen = (rank < k.unsqueeze(1)) & maskable

    action = torch.rand(input_ids.shape, generator=generator, device=device)
    to_mask = chosen & (action < mask_ratio)
    to_random = chosen & (action >= mask_ratio) & (action < mask_ratio + random_ratio)
    random_ids = _random_non_special(input_ids.shape, vocab, generator, device)

    masked = input_ids.masked_fill(to_mask, vocab.mask_token_id)
    masked = torch.where(to_random, random_ids, masked)
    labels = input_ids.masked_fill(~chosen, IGNORE_INDEX)
    return masked, labels


def tlm_inputs(tokenizer: Any, src: Sequence[str], tgt: Sequence[str],
               max_length: int = 128) -> dict[str, torch.Tensor]:
    """Parallel pairs -> one concatenated sequence each, the TLM input (Zhang et al. 2023, §3.3; Li et al. 2021, §2.4).

    Row b is the tokenizer's pair template over ``src[b]`` and ``tgt[b]``: ``<s> src </s></s>
    tgt </s>`` for XLM-R (``[CLS] src [SEP] tgt [SEP]`` for BERT), right-padded to the longest
    row, truncated longest-first to ``max_length``. Mask it with ``mask_tokens``.

    Positions: Li et al. (2021) say only "we concatenate a parallel bilingual sentence pair into a
    single sentence" and Zhang et al. (2023) "concatenates parallel sentences"; neither resets the target
    side's positions or adds language embeddings as the original TLM of XLM (Lample & Conneau
    2019) does, and VECO 2.0 states it uses no language embeddings (§4.2). So positions run on
    through the pair: no ``position_ids`` are returned and the model numbers them 0..L−1 (from
    ``padding_idx + 1`` for XLM-R) as for any sequence.

    Returns the tokenizer's tensors: ``input_ids`` (B, L), ``attention_mask`` (B, L) (and
    ``token_type_ids`` if the tokenizer makes them; XLM-R's are all 0).
    """
    if len(src) != len(tgt):
        raise ValueError(f"src and tgt must be aligned lists of translations; got {len(src)} and {len(tgt)} texts")
    if not src:
        raise ValueError("tlm_inputs needs at least one pair")
    enc = tokenizer(list(src), list(tgt), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    return dict(enc)


class MaskedLanguageModeling(Objective):
    """Cross-entropy of the masked-token predictions: MLM, or TLM on concatenated pairs.

    ::

        L_MLM = −1/|M| Σ_{(b, t) ∈ M} log softmax(mlm_logits[b, t])[mlm_labels[b, t]]

    over the set M of predicted positions (``mlm_labels != -100``), averaged over all of them in
    the batch (token-level mean, as BERT and Hugging Face's MLM heads do, not a mean of
    per-sentence means). Chen et al. 2022, Eq. 3/8 (auxiliary α·L_MLM, α = ``MLM_WEIGHT`` = 0.1);
    Zhang et al. 2023, Eq. 8 (L_MLM on monolingual, L_TLM on bilingual batches); Li et al. 2021, §2.4.

    Inputs:
        - ``mlm_logits`` (B, L, V): the LM head's scores of every position
        - ``mlm_labels`` (B, L) long: target ids at predicted positions, ``-100`` elsewhere
          (``mask_tokens`` makes them)

    Computed in float32 (log-softmax of fp16/bf16 logits in full precision); only the masked
    rows are up-cast, so a 250k vocabulary does not double the memory of the whole logits.
    A batch with no masked position returns a zero connected to ``mlm_logits`` (zero gradients),
    never NaN.
    """

    name: ClassVar[str] = "mlm"
    requires: ClassVar[tuple[str, ...]] = ("mlm_logits", "mlm_labels")


    def compute_loss_from_embeddings(self, mlm_logits: torch.Tensor, mlm_labels: torch.Tensor) -> torch.Tensor:
        """``mlm_logits`` (B, L, V), ``mlm_labels`` (B, L) -> scalar."""
        if mlm_logits.dim() != 3 or mlm_labels.shape != mlm_logits.shape[:2]:
            raise ValueError(f"mlm_logits must be (B, L, V) and mlm_labels (B, L); got {tuple(mlm_logits.shape)} "
                             f"and {tuple(mlm_labels.shape)}")
        predicted = mlm_labels != IGNORE_INDEX  # (B, L)
        logits = mlm_logits[predicted]  # (|M|, V)
        logits = logits if logits.dtype == torch.float64 else logits.float()
        if logits.shape[0] == 0:
            # One element times 0: summing all B·L·V fp16 logits could overflow to inf, and inf·0 is NaN.
            return mlm_logits.reshape(-1)[:1].float().sum() * 0
        return F.cross_entropy(logits, mlm_labels[predicted])

