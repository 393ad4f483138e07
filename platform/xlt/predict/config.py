"""What ``jobs/predict.py`` applies to what: ``PredictConfig``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..config import check, load_config
from ..inference import InferenceSettings
from ..models.onnx_backbone import BACKENDS
from ..storage import OutputSettings
from .centring import CENTRE_ON_INPUT
from .inputs import InputConfig

Format = Literal["parquet", "csv", "jsonl"]
NEW_LANGUAGES = ("refuse", CENTRE_ON_INPUT)


@dataclass(frozen=True)
class ModelRef:
    """A trained classifier: ``path`` is a run's output directory, whose record names the classifier ``learner``
    names (default: the record's own; a co-training run's ``lm``, ``emb`` or ``classifier``), or an export:
    ``xlt.predict.models``; ``backend``: what runs its encoder."""

    path: str
    learner: str | None = None
    # torch, or onnx / onnx-int8: the encoder on onnxruntime, on CPU workers (xlt.predict.models.on_backend)
    backend: str = "torch"

    def __post_init__(self) -> None:
        check(self.backend in BACKENDS, "model.backend", self.backend, " or ".join(BACKENDS))


@dataclass(frozen=True)
class PredictInference(InferenceSettings):
    """The pseudo-labelling pool's settings with prediction's defaults (a subclass, so that a config
    setting any ``inference`` key keeps the others' defaults)."""

    # A shard (10,000 rows by default) whole to an actor, as the job's own process labels it: its texts
    # sorted by length together pad less than batch by batch, and several actors label several shards.
    batch_size: int = 10_000
    # fp32: the predictions are Classifier.predict's (bf16 or auto: faster, and labels agree on
    # nearly every row: benchmarks/inference_precision.md).
    precision: str = "fp32"
    # A language a centred (adapted) classifier has no mean for: refuse it before any row is read, or centre it
    # on the mean of its rows in the input, given at least new_language_rows of them (xlt.predict.centring).
    new_languages: str = "refuse"
    new_language_rows: int = 100

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.new_languages in NEW_LANGUAGES, "inference.new_languages", self.new_languages,
              " or ".join(NEW_LANGUAGES))
        check(self.new_language_rows >= 1, "inference.new_language_rows", self.new_language_rows, "an integer >= 1")


@dataclass(frozen=True)
class PredictData:
    data_dir: str | None = None  # a task input's data root (else $XLT_DATA_DIR; --data-dir)


@dataclass(frozen=True)
class PredictConfig:
    """``model`` applied to every row of ``input``, written under ``output.dir`` as ``format`` in
    shards of ``shard_rows`` rows (each complete or absent: a rerun skips the complete ones), by
    the pseudo-labelling actor pool of ``inference`` (``num_actors: 0``: in this process)."""

    model: ModelRef
    input: InputConfig
    output: OutputSettings = field(default_factory=lambda: OutputSettings(dir="results/predict"))
    format: Format = "parquet"
    shard_rows: int = 10_000
    inference: PredictInference = field(default_factory=PredictInference)
    data: PredictData = field(default_factory=PredictData)

    def __post_init__(self) -> None:
        check(self.format in ("parquet", "csv", "jsonl"), "format", self.format, "parquet, csv or jsonl")
        check(self.shard_rows >= 1, "shard_rows", self.shard_rows, "an integer >= 1")
        check(not self.output.export, "output.export", True, "false: predict trains nothing (export a model with "
              "jobs/export.py)")
        if self.model.backend != "torch":  # onnxruntime's CPU build, in the ONNX file's own precision
            check(self.inference.precision == "fp32", "inference.precision", self.inference.precision,
                  f"fp32 with model.backend={self.model.backend} (the ONNX file sets its precision: onnx or onnx-int8)")
            check(self.inference.num_gpus == 0, "inference.num_gpus", self.inference.num_gpus,
                  f"0 with model.backend={self.model.backend}: onnxruntime labels on CPU workers")


def load_predict_config(path: str | Path | None, overrides=(), smoke: str | Path | None = None) -> PredictConfig:
    return load_config(PredictConfig, path, overrides, smoke=smoke)
