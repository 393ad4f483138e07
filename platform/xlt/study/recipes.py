"""The baselines a study names like any variant, run on exactly the rows of the study's job.

A user who tries the simple thing first compares xlt's recipes with these; so they learn from the
English rows the job learns from and are scored on the rows the job scores (``JobRows``: a
fine-tuning config's seeded draw of ``data.max_examples`` English train rows; a co-training config's
labelled draw D, ``data.labeled_fraction`` of them), and return the scored split's predictions in
the form a checkpoint records them (``id``, ``lang``, ``label``, ``predicted``):

- ``probe``: ``jobs/evaluate.py``'s frozen-linear protocol (``xlt.eval.protocols.probe_rows``):
  logistic regression on the frozen encoder's embeddings of the English rows, C chosen on English dev;
  with ``adapt`` (``xlt.eval.adaptation``), adapted to each target language's unlabelled pool, the
  rows the job's co-training would pseudo-label (``data.max_examples`` of the task's ``pool`` split).
- ``setfit``: SetFit (Tunstall et al. 2022) with the ``setfit`` package, offline: the body is the
  job's encoder as a ``SentenceTransformer`` (``xlt.models.classifier.sentence_transformer``), its
  prefix (e5's ``"query: "``) put before every text, as xlt's own encoder does, its word embeddings
  frozen where the job freezes them (``optim.freeze_word_embeddings``) unless the settings say otherwise
  (``SetFitSettings.freeze_word_embeddings``); contrastive pairs of the
  English rows, then a logistic-regression head (with ``adapt``: the probe's, adapted to the target
  pools). SetFit has no sentence-pair input: pair tasks are refused (their baselines are the probes
  and CE).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..config import from_dict
from ..eval.adaptation import ProbeAdaptation
from ..eval.baselines import JobRows, Predictions, finetune_rows, probe_labels
from ..extras import require
from ..models import EncoderConfig
from .spec import SetFitSettings

# What a baseline reads of its job's config (``job_rows``): the rows and the encoder the job trains. A change
# elsewhere in the preset (a learner's optimiser, the exchange, the job's classifier) leaves a baseline's unit the same.
ROWS_SETTINGS: dict[str, tuple[str, ...]] = {
    "finetune": ("task", "data", "model", "optim.freeze_word_embeddings"),
    "cotrain": ("task", "data", "lm.model", "lm.optim.freeze_word_embeddings")}


def job_rows(job: str, data: Mapping[str, Any], split: str) -> JobRows:
    """The rows of a ``finetune`` or ``cotrain`` config mapping, scored on ``split`` (a metric split:
    ``val`` or ``test``; a co-training config scores its own ``data.eval_split``)."""
    if job == "finetune":
        from ..train.config import FinetuneConfig

        return finetune_rows(from_dict(FinetuneConfig, dict(data)), split)
    from ..cotrain.config import CotrainConfig
    from ..cotrain.probes import cotrain_rows

    return cotrain_rows(from_dict(CotrainConfig, dict(data)))


def setfit_predictions(rows: JobRows, settings: SetFitSettings, seed: int, model: EncoderConfig | None = None,
                       adapt: ProbeAdaptation = ProbeAdaptation()) -> tuple[Predictions, dict[str, Any]]:
    """SetFit on ``rows``' English train rows with the body ``model`` (default: the job's), seeded by
    ``seed``; the scored rows' predictions, and the settings it ran with. With ``adapt``, the head on the
    tuned body is the probe's, adapted to the target pools (``xlt.eval.adaptation``), not SetFit's own."""
    from datasets import Dataset

    require("setfit", "the setfit recipe")
    from setfit import SetFitModel, Trainer, TrainingArguments
    from sklearn.linear_model import LogisticRegression

    from ..eval.protocols import EvaluateConfig
    from ..models import load_encoder
    from ..models.classifier import sentence_transformer

    task = rows.task
    if task.paired:
        raise ValueError(f"task {task.config.name!r} has sentence pairs, which SetFit has no input for: "
                         "its baselines are the frozen probes and CE fine-tuning")
    encoder = load_encoder(model or rows.model)
    prefix = getattr(encoder, "prefix", "")
    args = TrainingArguments(batch_size=settings.batch_size, num_epochs=settings.num_epochs,
                             num_iterations=settings.num_iterations, body_learning_rate=settings.learning_rate,
                             seed=seed, report_to="none", show_progress_bar=False, save_strategy="no")
    with tempfile.TemporaryDirectory(prefix="xlt-setfit-") as body_dir:
        # The prefix goes before the texts here, not as a prompt: SetFit's contrastive pairs would not get it.
        body = sentence_transformer(encoder, body_dir, prompts=False)
        freeze = rows.freeze_word_embeddings if settings.freeze_word_embeddings is None \
            else settings.freeze_word_embeddings
        if freeze:  # as the job fine-tunes the same body (AdamW skips frozen weights)
            body[0].auto_model.get_input_embeddings().requires_grad_(False)
        setfit = SetFitModel(model_body=body, model_head=LogisticRegression(random_state=seed))
        trainer = Trainer(model=setfit, args=args, train_dataset=Dataset.from_dict(
            {"text": [prefix + ex.text for ex in rows.train],
             "label": [task.labels.index(ex.label) for ex in rows.train]}))
        trainer.train()
        if adapt.active:  # the probe's head, on the tuned body's normalised embeddings
            predicted, _ = probe_labels(rows, lambda examples: setfit.model_body.encode(
                [prefix + ex.text for ex in examples], normalize_embeddings=True, convert_to_numpy=True),
                EvaluateConfig(task=task.config, progress=False, adapt=adapt))
        else:
            predicted = {lang: np.asarray(setfit.predict([prefix + ex.text for ex in examples], as_numpy=True)).tolist()
                         for lang, examples in rows.scored.items()}
    return (rows.predictions(predicted),
            {"setfit": {**settings.__dict__, "train_rows": len(rows.train),
                        "pairs": 2 * settings.num_iterations * len(rows.train),
                        "freeze_word_embeddings": freeze},
             **({"adapt": dataclasses.asdict(adapt)} if adapt.active else {})})

