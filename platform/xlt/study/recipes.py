"""The baselines a study names like any variant, run on the rows a fine-tuning config draws.

A user who tries the simple thing first compares xlt's recipes with these; so they read their data
exactly as fine-tuning does (``xlt.tasks.Task.examples`` with the config's ``data.max_examples``: the
same seeded draw of English train and dev rows, and of every language's test rows) and return the
scored split's predictions in the form a fine-tuning checkpoint records them (``id``, ``lang``,
``label``, ``predicted``):

- ``probe``: ``jobs/evaluate.py``'s frozen-linear protocol (``xlt.eval.protocols``): logistic
  regression on the frozen encoder's embeddings of the English train rows, C chosen on English dev.
- ``setfit``: SetFit (Tunstall et al. 2022) with the ``setfit`` package, offline: the body is the
  config's encoder as a ``SentenceTransformer`` (``xlt.models.classifier.sentence_transformer``), its
  prefix (e5's ``"query: "``) put before every text, as xlt's own encoder does, its word embeddings
  frozen where the config freezes them (``optim.freeze_word_embeddings``); contrastive pairs of the
  English train rows, then a logistic-regression head. SetFit has no sentence-pair input: pair
  tasks are refused (their baselines are the probes and CE).
"""

from __future__ import annotations

import tempfile
from typing import Any

import numpy as np

from ..models import EncoderConfig
from ..tasks import Task, load_task
from ..train.config import FinetuneConfig
from .spec import SetFitSettings

Predictions = dict[str, list]  # id, lang, label, predicted: one entry per scored row


def baseline_task(cfg: FinetuneConfig) -> Task:
    return load_task(cfg.task, cfg.data.data_dir)


def probe_predictions(cfg: FinetuneConfig, model: EncoderConfig, split: str) -> tuple[Predictions, dict[str, Any]]:
    """The frozen-linear probe of ``model`` on ``cfg``'s rows: ``split``'s predictions (test only: the
    protocol's) and its settings (the C chosen on dev)."""
    from ..eval.protocols import EvaluateConfig, EvaluateData, frozen_linear_predictions
    from ..models import load_encoder

    if split != "test":
        raise ValueError(f"the frozen-linear probe scores the test split; the study scores {split!r}")
    task = baseline_task(cfg)
    evaluate = EvaluateConfig(task=cfg.task, models=(model,), progress=False,
                              data=EvaluateData(cfg.data.data_dir, cfg.data.max_examples))
    p = frozen_linear_predictions(load_encoder(model), task, evaluate)
    labels = task.labels
    return ({"id": list(p.ids), "lang": list(p.langs), "label": [labels[i] for i in p.gold.tolist()],
             "predicted": [labels[i] for i in p.predicted.tolist()]}, {"probe_c": p.c})


def setfit_predictions(cfg: FinetuneConfig, settings: SetFitSettings, seed: int, split: str,
                       model: EncoderConfig | None = None) -> tuple[Predictions, dict[str, Any]]:
    """SetFit on ``cfg``'s English train rows with the body ``model`` (default: ``cfg.model``), seeded by
    ``seed``; ``split``'s predictions in every language, and the settings it ran with."""
    from datasets import Dataset
    from setfit import SetFitModel, Trainer, TrainingArguments
    from sklearn.linear_model import LogisticRegression

    from ..models import load_encoder
    from ..models.classifier import sentence_transformer

    task = baseline_task(cfg)
    if task.paired:
        raise ValueError(f"task {task.config.name!r} has sentence pairs, which SetFit has no input for: "
                         "its baselines are the frozen probes and CE fine-tuning")
    encoder = load_encoder(model or cfg.model)
    prefix = getattr(encoder, "prefix", "")
    train = task.examples("train", task.source_lang, cfg.data.max_examples)
    args = TrainingArguments(batch_size=settings.batch_size, num_epochs=settings.num_epochs,
                             num_iterations=settings.num_iterations, body_learning_rate=settings.learning_rate,
                             seed=seed, report_to="none", show_progress_bar=False, save_strategy="no")
    with tempfile.TemporaryDirectory(prefix="xlt-setfit-") as body_dir:
        # The prefix goes before the texts here, not as a prompt: SetFit's contrastive pairs would not get it.
        body = sentence_transformer(encoder, body_dir, prompts=False)
        if cfg.optim.freeze_word_embeddings:  # as the config fine-tunes the same body (AdamW skips frozen weights)
            body[0].auto_model.get_input_embeddings().requires_grad_(False)
        setfit = SetFitModel(model_body=body, model_head=LogisticRegression(random_state=seed))
        trainer = Trainer(model=setfit, args=args, train_dataset=Dataset.from_dict(
            {"text": [prefix + ex.text for ex in train], "label": [task.labels.index(ex.label) for ex in train]}))
        trainer.train()
        ids, langs, gold, predicted = [], [], [], []
        for lang in task.langs:
            rows = task.examples(split_role(split), lang, cfg.data.max_examples)
            found = np.asarray(setfit.predict([prefix + ex.text for ex in rows], as_numpy=True)).tolist()
            ids += [ex.id for ex in rows]
            langs += [lang] * len(rows)
            gold += [ex.label for ex in rows]
            predicted += [task.labels[int(i)] for i in found]
    return ({"id": ids, "lang": langs, "label": gold, "predicted": predicted},
            {"setfit": {**settings.__dict__, "train_rows": len(train), "pairs": 2 * settings.num_iterations * len(train),
                        "freeze_word_embeddings": cfg.optim.freeze_word_embeddings}})


def split_role(split: str) -> str:
    """The task role a scored split reads: fine-tuning's ``val`` is the task's ``dev``."""
    return {"val": "dev"}.get(split, split)
