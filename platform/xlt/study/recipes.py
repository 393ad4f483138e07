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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import from_dict
from ..data import Example
from ..eval.adaptation import ProbeAdaptation
from ..extras import require
from ..metrics import AVG_TARGET
from ..models import EncoderConfig
from ..tasks import Task, load_task
from .spec import SetFitSettings

if TYPE_CHECKING:  # the evaluation's modules load with the recipe that runs them
    from ..eval.protocols import Embed, EvaluateConfig

Predictions = dict[str, list]  # id, lang, label, predicted: one entry per scored row


@dataclass(frozen=True, eq=False)
class JobRows:
    """What a job learns from and scores: its task, English labelled ``train`` rows, English ``dev``
    rows (the probe's C), the ``scored`` rows of every language, the encoder it fine-tunes, and
    ``limit``: the rows per language and split its config allows (0 = all)."""

    task: Task
    train: list[Example]
    dev: list[Example]
    scored: dict[str, list[Example]]
    model: EncoderConfig
    freeze_word_embeddings: bool
    limit: int = 0
    disjoint: bool = False  # the job's pool leaves out the translations of its train draw (xlt.tasks.Task.pool)

    def pools(self) -> dict[str, list[Example]]:
        """Each target language's unlabelled pool: the draw of its ``pool`` split co-training reads."""
        return {lang: self.task.pool(lang, self.limit, disjoint=self.disjoint) for lang in self.task.target_langs}

    def predictions(self, predicted: Mapping[str, list[int]]) -> Predictions:
        """The record form of label indices predicted per language of ``scored``."""
        out: Predictions = {"id": [], "lang": [], "label": [], "predicted": []}
        for lang, examples in self.scored.items():
            out["id"] += [ex.id for ex in examples]
            out["lang"] += [lang] * len(examples)
            out["label"] += [ex.label for ex in examples]
            out["predicted"] += [self.task.labels[int(i)] for i in predicted[lang]]
        return out


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

    return cotrain_rows(from_dict(CotrainConfig, dict(data)))


def finetune_rows(cfg: Any, split: str) -> JobRows:
    """A ``FinetuneConfig``'s rows: its seeded draw of English train rows, every language's ``split``."""
    task = load_task(cfg.task, cfg.data.data_dir)
    return _rows(task, task.examples("train", task.source_lang, cfg.data.max_examples), cfg.data.max_examples,
                 {"val": "dev"}.get(split, split), cfg.model, cfg.optim.freeze_word_embeddings)


def cotrain_rows(cfg: Any, task: Task | None = None) -> JobRows:
    """A ``CotrainConfig``'s rows: its labelled draw D and every language's ``data.eval_split``, with
    the LM learner's encoder (the one it fine-tunes). ``task``: the job's, if already read."""
    from ..cotrain.loop import labeled_examples

    task = task or load_task(cfg.task, cfg.data.data_dir)
    return _rows(task, labeled_examples(task, cfg.data), cfg.data.max_examples, cfg.data.eval_split,
                 cfg.lm.model, cfg.lm.optim.freeze_word_embeddings, cfg.data.disjoint)


def _rows(task: Task, train: list[Example], n: int, role: str, model: EncoderConfig, freeze: bool,
          disjoint: bool = False) -> JobRows:
    return JobRows(task, train, task.examples("dev", task.source_lang, n),
                   {lang: task.examples(role, lang, n) for lang in task.langs}, model, freeze, n, disjoint)


def probe_predictions(rows: JobRows, model: EncoderConfig,
                      adapt: ProbeAdaptation = ProbeAdaptation()) -> tuple[Predictions, dict[str, Any]]:
    """The frozen-linear probe of ``model`` on ``rows``, adapted to the target pools as ``adapt`` says:
    the scored rows' predictions, the C chosen on dev and the adaptation (where there is one)."""
    from ..eval.protocols import EvaluateConfig, example_embedder
    from ..models import load_encoder

    cfg = EvaluateConfig(task=rows.task.config, models=(model,), progress=False, adapt=adapt)
    predicted, c = _probe(rows, example_embedder(load_encoder(model), rows.task, cfg), cfg)
    return rows.predictions(predicted), {"probe_c": c, **({"adapt": dataclasses.asdict(adapt)} if adapt.active else {})}


def _probe(rows: JobRows, embed: Embed, cfg: EvaluateConfig) -> tuple[dict[str, list[int]], float]:
    """Label indices of every scored language from the probe (``xlt.eval.protocols.probe_rows``) on ``embed``'s
    embeddings, adapted to the target pools as ``cfg.adapt`` says; and the C it chose."""
    from ..eval.protocols import probe_rows

    p = probe_rows(embed, rows.task, rows.train, rows.dev, rows.scored, cfg, rows.pools() if cfg.adapt.active else None)
    return {lang: p.predicted[np.asarray(p.langs) == lang].tolist() for lang in rows.scored}, p.c


def probe_scores(rows: JobRows, model: EncoderConfig,
                 adapt: ProbeAdaptation = ProbeAdaptation()) -> dict[str, dict[str, float]]:
    """The frozen-linear probe of ``model`` on ``rows`` (adapted to the job's pools as ``adapt`` says):
    ``{score: {lang: value}}`` for accuracy and macro-F1 (``xlt.eval.classification``), with the average over
    the targets (``avg_target``)."""
    from ..eval.classification import scores_by_language, summarize_transfer

    p, _ = probe_predictions(rows, model, adapt)
    scores = scores_by_language(np.asarray(p["label"]), np.asarray(p["predicted"]), np.asarray(p["lang"]))
    return {score: {**per_lang, AVG_TARGET: summarize_transfer(per_lang, rows.task.source_lang).avg_target}
            for score, per_lang in scores.items()}


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
            predicted, _ = _probe(rows, lambda examples: setfit.model_body.encode(
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

