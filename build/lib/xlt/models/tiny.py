"""``tiny:<arch>``: randomly initialised small transformers for tests and smoke runs.

The tokenizer is byte-level with no merges (every UTF-8 byte is a token), so it needs no
training data, covers every script, and is identical on every machine.
"""

from __future__ import annotations

from typing import Literal

TinyArch = Literal["bert", "xlm-roberta"]
TINY_ARCHS: tuple[str, ...] = ("bert", "xlm-roberta")
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")  # XLM-R order: <s>=0, <pad>=1, </s>=2
MAX_LENGTH = 128


def tiny_tokenizer():
    """A byte-level ``transformers`` fast tokenizer with XLM-R style special tokens."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {tok: i for i, tok in enumerate(list(SPECIALS) + alphabet)}
    tok = Tokenizer(BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>",
        pad_token="<pad>", unk_token="<unk>", mask_token="<mask>", model_max_length=MAX_LENGTH,
    )


def tiny_model(arch: str, vocab_size: int, seed: int = 0):
    """A 2-layer, 32-wide randomly initialised backbone; the same weights for the same seed."""
    import torch
    from transformers import BertConfig, BertModel, XLMRobertaConfig, XLMRobertaModel

    if arch not in TINY_ARCHS:
        raise ValueError(f"tiny:{arch} is not a tiny architecture; valid: {', '.join('tiny:' + a for a in TINY_ARCHS)}")
    common = dict(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, pad_token_id=1, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    torch.manual_seed(seed)
    if arch == "bert":
        return BertModel(BertConfig(max_position_embeddings=MAX_LENGTH, **common), add_pooling_layer=False)
    # RoBERTa-style positions start after the padding index, hence the +2.
    return XLMRobertaModel(XLMRobertaConfig(max_position_embeddings=MAX_LENGTH + 2, **common),
                           add_pooling_layer=False)
