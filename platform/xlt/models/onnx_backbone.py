"""An encoder's backbone as ONNX, run by onnxruntime on CPU workers (the extra ``xlt[onnx]``).

``export_onnx`` writes a transformer encoder's backbone in sentence-transformers' ONNX layout, beside its PyTorch
weights: ``onnx/model.onnx`` (fp32; inputs ``input_ids`` and ``attention_mask``, output ``last_hidden_state``, any
batch and length) and ``onnx/model_qint8.onnx`` (the same with its MatMul weights quantised to int8 per tensor,
activations quantised dynamically: ``onnxruntime.quantization.quantize_dynamic``).
``SentenceTransformer(dir, backend="onnx", model_kwargs={"file_name": "onnx/model_qint8.onnx"})`` loads them where
optimum is installed; xlt runs them itself (``use_onnx``): the backbone module is swapped for an onnxruntime session,
and the encoder's tokenisation, length-sorted batches and pooling, and the classifier's head, normalisation and
per-language means, stay as they are, so a classifier labels the same way on either backend.

The exporter is PyTorch's TorchScript-based ``torch.onnx.export`` (sentence-transformers' own export goes through
optimum, which the pinned transformers 5 rules out), over the backbone with eager attention: SDPA exports as
several ops where eager attention is one pattern onnxruntime fuses. Only what has a sentence-transformers form
exports (``check_exportable``: a transformer pooled by ``cls`` or ``mean`` of its last layer); the bundled USE does
not, and says so.
"""

from __future__ import annotations

import logging
import types
import warnings
from pathlib import Path

import torch
from torch import nn

from ..extras import require
from .classifier import check_exportable
from .encoder import TextEncoder

ONNX_DIR = "onnx"
# model.backend -> the file it runs (torch: none)
FILES = {"onnx": "model.onnx", "onnx-int8": "model_qint8.onnx"}
BACKENDS = ("torch", *FILES)
OPSET = 17


def onnxruntime(feature: str = "model.backend=onnx"):
    """onnxruntime imported, or one line naming the extra that installs it."""
    return require("onnxruntime", feature)


def export_onnx(encoder: TextEncoder, directory: str | Path) -> dict[str, Path]:
    """``encoder``'s backbone as ``directory/onnx/model.onnx`` and ``model_qint8.onnx`` (module docstring); returns
    each file by backend."""
    check_exportable(encoder)
    onnxruntime("an ONNX export")
    require("onnx", "an ONNX export")
    from onnxruntime.quantization import QuantType, quantize_dynamic
    import onnx

    out = Path(directory) / ONNX_DIR
    out.mkdir(parents=True, exist_ok=True)
    files = {backend: out / name for backend, name in FILES.items()}
    backbone = encoder.backbone
    attention = backbone.config._attn_implementation
    sample = encoder.tokenize(["an example sentence", "a second one"])
    was_training = backbone.training
    backbone.set_attn_implementation("eager")
    try:
        # torch.onnx.export puts the module back in the mode it found it in (recursively): eval for the export.
        # Its tracer's warnings on the mask's shape checks and advanced indexing: the graph labels batches of any
        # size and length as PyTorch does (tests/predict/test_onnx.py), so they say nothing to a user.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(_LastHiddenState(backbone).eval(), (sample["input_ids"], sample["attention_mask"]),
                              str(files["onnx"]), input_names=["input_ids", "attention_mask"],
                              output_names=["last_hidden_state"], opset_version=OPSET, dynamo=False,
                              dynamic_axes={name: {0: "batch", 1: "sequence"}
                                            for name in ("input_ids", "attention_mask", "last_hidden_state")})
    finally:
        backbone.set_attn_implementation(attention)
        backbone.train(was_training)
    quiet = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process first, printed on every call
    try:
        quantize_dynamic(str(files["onnx"]), str(files["onnx-int8"]), weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    finally:
        logging.getLogger().setLevel(quiet)
    return files


class _LastHiddenState(nn.Module):
    """The backbone as the ONNX graph: token ids and mask in, the last layer's states out."""

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class OnnxBackbone(nn.Module):
    """An onnxruntime session where a ``transformers`` backbone was: called as ``TransformerEncoder`` calls its
    backbone, it returns ``last_hidden_state``; ``threads``: onnxruntime's intra-op threads (torch's, by default)."""

    def __init__(self, path: str | Path, config, threads: int | None = None) -> None:
        super().__init__()
        ort = onnxruntime()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.config, self.path = config, str(path)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, output_hidden_states: bool = False):
        if output_hidden_states:
            raise ValueError(f"{self.path} gives the last layer's states only")
        states = self.session.run(["last_hidden_state"], {"input_ids": input_ids.cpu().numpy(),
                                                          "attention_mask": attention_mask.cpu().numpy()})[0]
        return types.SimpleNamespace(last_hidden_state=torch.from_numpy(states))


def use_onnx(encoder: TextEncoder, path: str | Path, threads: int | None = None) -> None:
    """Run ``encoder``'s backbone from the ONNX file ``path`` (written by ``export_onnx`` from this encoder's
    weights) instead of PyTorch; the PyTorch backbone is let go."""
    check_exportable(encoder)
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such ONNX file (jobs/export.py --onnx writes it)")
    encoder.backbone = OnnxBackbone(path, encoder.backbone.config, threads)
