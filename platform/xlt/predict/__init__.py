"""Batch prediction with a trained classifier over any input (``jobs/predict.py``).

- ``config``: ``PredictConfig`` (model, input, output, format, shard size, the inference actor pool)
- ``models``: a model path (a run's output, through its record ``run.json``; or an export) resolved to the
  ``ClassifierSpec`` the actors rebuild it from
- ``corpus``: a corpus of files (a file, a directory, a glob; local or ``s3://``; compressed or not) read as a stream
- ``inputs``: a corpus or a task's split as a stream of checked rows, in shards
- ``centring``: a language a centred classifier has no mean for, centred on its rows in the input
  (``inference.new_languages: centre-on-input``)
- ``writer``: shards labelled by the job's one pool of labellers (``xlt.inference.labellers``) and written, each
  complete or absent (resumable)
- ``finish``: how ``jobs/predict.py`` ends (its table, results and record)

``prepare`` checks what can fail before a row is read (the model, the input's files and formats, pairs against
single texts, languages) and writes the model's encoder as ONNX where ``model.backend`` needs it and the model is
not an export that holds it; ``predict`` streams the rows, checking each as it passes, labels and writes them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from ..report.phases import Phases
from .centring import CENTRE_ON_INPUT, centre_on_input, new_languages
from .config import ModelRef, PredictConfig, PredictData, load_predict_config
from .inputs import Input, InputConfig, open_input
from .models import Combination, model_spec, on_backend
from .writer import Written, write_shards


@dataclass(frozen=True)
class PreparedPredict:
    config: PredictConfig
    checkpoint: str
    spec: Any  # xlt.inference.ClassifierSpec, or a Combination of them (xlt.predict.models)
    input: Input


def prepare(cfg: PredictConfig) -> PreparedPredict:
    """The model resolved and the input opened (its files found, their formats known), before Ray starts."""
    checkpoint, spec = model_spec(cfg.model.path, cfg.model.learner)
    source = open_input(cfg.input, cfg.data.data_dir)
    if source.paired != spec.paired:
        reads = "sentence pairs" if spec.paired else "single texts"
        given = "pairs" if source.paired else "single texts (set input.pair_field for a file's second text)"
        raise ValueError(f"model {checkpoint} reads {reads}; input {cfg.input.path or cfg.input.split} holds {given}")
    unknown = new_languages(spec, set(source.languages or ()))
    if unknown and cfg.inference.new_languages != CENTRE_ON_INPUT:
        raise ValueError(f"model {checkpoint} centres each language on its own mean and has none for {unknown}, "
                         f"which input {source.name} holds; it knows {', '.join(spec.languages)} "
                         f"(inference.new_languages: {CENTRE_ON_INPUT} centres a new one on its rows in the input)")
    spec = on_backend(spec, checkpoint, cfg.model.backend, cfg.output.dir)  # an ONNX export, if it needs one
    return PreparedPredict(cfg, checkpoint, spec, source)


def predict(prepared: PreparedPredict, done: Callable[[int], None] = lambda n: None, phases: Phases | None = None) -> Written:
    """Every row of the input labelled and written, shard by shard (``xlt.predict.writer``); ``done(n)`` after each
    shard of ``n`` rows; ``phases``: where the time goes (the labellers' start, then labelling and writing). Needs
    Ray (``ray.init``) only for ``inference.num_actors`` > 0."""
    from ..inference.labellers import Labellers

    cfg, phases, spec = prepared.config, phases or Phases(), prepared.spec
    with Labellers(cfg.inference) as labellers:
        members = tuple(spec.members) if isinstance(spec, Combination) else ()
        with phases("load the model"):
            labellers.load(spec.members if members else spec)
        centred = None
        known = prepared.input.languages  # None: each row names its own, so the first pass finds them
        if cfg.inference.new_languages == CENTRE_ON_INPUT and spec.languages and \
                (known is None or new_languages(spec, set(known))):
            with phases("centre new languages on the input"):
                centred = centre_on_input(spec, prepared.checkpoint, prepared.input, labellers, cfg.output.dir,
                                          cfg.shard_rows, cfg.inference.new_language_rows)
                if centred.rows:
                    spec = centred.spec
                    labellers.load(spec.members if members else spec)
        with phases("label and write"):
            written = write_shards(prepared.input.shards(cfg.shard_rows), labellers, spec.labels, spec.paired,
                                   cfg.output.dir, cfg.format, done, members)
    return dataclasses.replace(written, centred=centred.rows if centred else {},
                               centred_reused=bool(centred and centred.reused))


__all__ = ["Input", "InputConfig", "ModelRef", "PredictConfig", "PredictData", "PreparedPredict", "Written",
           "load_predict_config", "model_spec", "open_input", "predict", "prepare", "write_shards"]
