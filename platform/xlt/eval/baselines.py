"""The simplest classifiers a transfer result stands beside, on exactly the rows of a job: the frozen-linear probe
of an encoder (``jobs/evaluate.py``'s protocol, ``xlt.eval.protocols.probe_rows``), adapted to the target pools or
not (``xlt.eval.adaptation``), fitted on a job's English labelled rows (``JobRows``) and scored on the rows the job
scores. Co-training prints them beside its tables (``xlt.cotrain.probes``); a study runs them as baselines
(``xlt.study.recipes``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data import Example
from ..metrics import AVG_TARGET
from ..models import EncoderConfig
from ..tasks import Task, load_task
from .adaptation import ProbeAdaptation

if TYPE_CHECKING:  # the evaluation's modules load with the probe that runs them
    from .protocols import Embed, EvaluateConfig

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


def finetune_rows(cfg: Any, split: str) -> JobRows:
    """A ``FinetuneConfig``'s rows: its seeded draw of English train rows, every language's ``split``."""
    task = load_task(cfg.task, cfg.data.data_dir)
    return job_task_rows(task, task.examples("train", task.source_lang, cfg.data.max_examples), cfg.data.max_examples,
                 {"val": "dev"}.get(split, split), cfg.model, cfg.optim.freeze_word_embeddings)


def job_task_rows(task: Task, train: list[Example], n: int, role: str, model: EncoderConfig, freeze: bool,
          disjoint: bool = False) -> JobRows:
    return JobRows(task, train, task.examples("dev", task.source_lang, n),
                   {lang: task.examples(role, lang, n) for lang in task.langs}, model, freeze, n, disjoint)


def probe_predictions(rows: JobRows, model: EncoderConfig,
                      adapt: ProbeAdaptation = ProbeAdaptation()) -> tuple[Predictions, dict[str, Any]]:
    """The frozen-linear probe of ``model`` on ``rows``, adapted to the target pools as ``adapt`` says:
    the scored rows' predictions, the C chosen on dev and the adaptation (where there is one)."""
    from .protocols import EvaluateConfig, example_embedder
    from ..models import load_encoder

    cfg = EvaluateConfig(task=rows.task.config, models=(model,), progress=False, adapt=adapt)
    predicted, c = probe_labels(rows, example_embedder(load_encoder(model), rows.task, cfg), cfg)
    return rows.predictions(predicted), {"probe_c": c, **({"adapt": dataclasses.asdict(adapt)} if adapt.active else {})}


def probe_labels(rows: JobRows, embed: Embed, cfg: EvaluateConfig) -> tuple[dict[str, list[int]], float]:
    """Label indices of every scored language from the probe (``xlt.eval.protocols.probe_rows``) on ``embed``'s
    embeddings, adapted to the target pools as ``cfg.adapt`` says; and the C it chose."""
    from .protocols import probe_rows

    p = probe_rows(embed, rows.task, rows.train, rows.dev, rows.scored, cfg, rows.pools() if cfg.adapt.active else None)
    return {lang: p.predicted[np.asarray(p.langs) == lang].tolist() for lang in rows.scored}, p.c


def probe_scores(rows: JobRows, model: EncoderConfig,
                 adapt: ProbeAdaptation = ProbeAdaptation()) -> dict[str, dict[str, float]]:
    """The frozen-linear probe of ``model`` on ``rows`` (adapted to the job's pools as ``adapt`` says):
    ``{score: {lang: value}}`` for accuracy and macro-F1 (``xlt.eval.classification``), with the average over
    the targets (``avg_target``)."""
    from .classification import scores_by_language, summarize_transfer

    p, _ = probe_predictions(rows, model, adapt)
    scores = scores_by_language(np.asarray(p["label"]), np.asarray(p["predicted"]), np.asarray(p["lang"]))
    return {score: {**per_lang, AVG_TARGET: summarize_transfer(per_lang, rows.task.source_lang).avg_target}
            for score, per_lang in scores.items()}


