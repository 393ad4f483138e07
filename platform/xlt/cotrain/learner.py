"""A co-training learner's fits: one Ray Train run per learner for the whole job, serving a fit per iteration.

``learner_service`` starts the run of learner ``name`` (``xlt.engine.FitService``, run directory
``<output.dir>/learners/<name>``, the learner's own ``scaling``: workers, CPUs, GPUs, restarts);
its worker group stays up for the whole job, so the start-up of a Ray Train run is paid once,
not once per iteration. ``fit`` asks it for iteration i's fit: the fine-tuning workload
(``xlt.train``: encoder + head, AdamW, linear schedule, word embeddings frozen if configured,
CE + Σ λ·aux, K = ``optim.epochs`` epochs) on the learner's labelled rows, named
``<name>-iteration<i>``, then an evaluation of every language's evaluation rows after the last
epoch, on rank 0. The fitted weights go to pseudo-labelling through the object store
(``Fit.state``, read from the fit's last checkpoint, wherever its storage is). The run keeps its last
fit's checkpoints; a job whose classifier may keep an earlier iteration (``classifier.keep: best-dev``) also
keeps each fit's model (``keep_model``: the checkpoint without its optimizer state) in
``<output.dir>/learners/<name>/fits/iteration<i>``, what exporting that iteration reads (``fit_model``).

Reading of Yu & Joty 2021, Alg. 1 ("fine-tune f on D" once per iteration): each fit starts again
from the pretrained encoder and a fresh head (seeded), on the original labelled data plus every
pseudo-label received so far — the paper's "merged into the original labeled data D ... to
re-train the model with" (§3.1). So a learner's state between iterations is its labelled set
alone, which is what the loop checkpoints. A job killed during a fit re-runs the same
iteration: the learner's run continues that fit from its latest epoch checkpoint (or, if it had
finished, hands on that checkpoint), so a resumed job fits exactly what an uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import placement
from ..engine import FitService
from ..metrics import TRAIN_LOSS
from ..engine.checkpoints import CONFIG_FILE, keep_model, latest_checkpoint, read_model
from ..engine.rows import run_rows
from ..storage import OutputSettings, join, read_text
from ..tasks import Task
from ..eval.evaluators import EvalSpec
from ..train.config import EVAL_DATA, DataSettings, FinetuneConfig
from ..train.workload import FINETUNE, read_predictions
from .classifier import DEV
from .config import LearnerConfig

LEARNERS_DIR = "learners"


@dataclass(frozen=True)
class Fit:
    """What one fit hands on: its metrics (``train/loss`` of the last epoch, ``train/rows``,
    ``<split>/acc|f1/<lang>`` etc. on the evaluation rows, and where its workers trained,
    ``placement/train``) and its weights."""

    metrics: dict[str, Any]
    state: Any  # an ObjectRef to the classifier's state dict (xlt.inference.ClassifierSpec.state)
    from_source: tuple[str, ...] = ()  # the frozen weights ``state`` leaves out (ClassifierSpec.from_source)
    # Per evaluated split, every row's prediction and probabilities (xlt.eval.evaluators.classification)
    predictions: dict[str, dict[str, list]] = field(default_factory=dict)
    # A probe learner's classifier reads normalised features centred on these languages' means (ClassifierSpec)
    normalize: bool = False
    languages: tuple[str, ...] = ()


def learner_run(output_dir: str, name: str) -> str:
    """Where learner ``name`` of the co-training run in ``output_dir`` keeps its run (its fits' checkpoints)."""
    return join(output_dir, LEARNERS_DIR, name)


def learner_config(name: str, cfg: LearnerConfig, task: Task, output: OutputSettings, rows: int) -> FinetuneConfig:
    """The fine-tuning config named ``name`` (a learner's run, or one of its fits) on ``rows`` labelled rows,
    its run in ``<output.dir>/learners/<name>``, keeping ``output.num_to_keep`` checkpoints."""
    # Evaluated after a fit's last epoch, on the one split the run is given (``learner_service``).
    return FinetuneConfig(task=task.config, model=cfg.model, objectives=cfg.objectives, optim=cfg.optim,
                          scaling=cfg.scaling, data=DataSettings(train_rows=rows),
                          output=OutputSettings(learner_run(output.dir, name), output.num_to_keep),
                          evals=tuple(EvalSpec("classification", split) for split in EVAL_DATA))


def fit_name(name: str, iteration: int) -> str:
    return f"{name}-iteration{iteration}"


FITS_DIR = "fits"


def fit_model(output_dir: str, name: str, iteration: int, last: int) -> Any:
    """The ``ray.train.Checkpoint`` of learner ``name``'s fit of ``iteration`` in the co-training run in
    ``output_dir``, whose ``last`` fit its run keeps: that one's latest checkpoint, or the model kept of an earlier
    fit (``fit(keep=True)``); a ``FileNotFoundError`` in one line if the run kept none."""
    from ray.train import Checkpoint

    run = learner_run(output_dir, name)
    if iteration == last:
        return latest_checkpoint(run)
    kept = join(run, FITS_DIR, f"iteration{iteration}")
    if read_text(join(kept, CONFIG_FILE)) is None:
        raise FileNotFoundError(f"learner {name!r} kept no model of iteration {iteration} ({kept}): a run keeps "
                                "its fits' models when its classifier may keep an earlier iteration "
                                "(classifier.keep: best-dev from its start)")
    return Checkpoint(kept)


def learner_service(name: str, cfg: LearnerConfig, task: Task, labeled: int, evaluation: Sequence[Mapping[str, Any]],
                    split: str, output: OutputSettings, callbacks: Sequence[Any] = (),
                    dev: Sequence[Mapping[str, Any]] = ()) -> FitService:
    """Learner ``name``'s Ray Train run: ``evaluation`` rows (``text, text_pair, label, lang``) are
    evaluated after each fit's last epoch as ``split`` (``val``: dev, or ``test``), so that its metrics,
    predictions and tracked epochs carry the split's own name, and the source language's ``dev`` rows
    as ``val`` beside a ``test`` split (what the job's classifier keeps its iteration by); ``labeled``:
    the size of the original labelled set (the run's config, which a rerun job must match);
    ``callbacks``: Ray Train ``UserCallback``s (experiment tracking)."""
    config = learner_config(name, cfg, task, output, labeled)
    here = config.scaling.num_workers == 0
    datasets = {split: run_rows([dict(r) for r in evaluation], here)}
    if dev and split != DEV:
        datasets[DEV] = run_rows([dict(r) for r in dev], here)
    return FitService(FINETUNE, config, datasets, callbacks)


def fit(service: FitService, name: str, cfg: LearnerConfig, task: Task, rows: Sequence[Mapping[str, Any]],
        iteration: int, output: OutputSettings, split: str, keep: bool = False) -> Fit:
    """Learner ``name``'s fit of ``iteration`` on ``rows`` (``id, text, text_pair, label, lang``),
    evaluated on the service's ``split`` (``val`` or ``test``); ``keep``: its model kept (``fit_model``)."""
    import ray

    if not rows:
        raise ValueError(f"learner {name!r} has no labelled rows to fit on")
    config = learner_config(fit_name(name, iteration), cfg, task, output, len(rows))
    config.steps_per_epoch(cfg.scaling.num_workers)  # too few rows for the workers fails here, not on them
    outcome = service.fit(iteration, config, [dict(r) for r in rows])
    metrics = outcome.metrics
    with outcome.checkpoint.as_directory() as directory:
        state, from_source = read_model(directory)
        predictions = read_predictions(directory)
        if keep:
            keep_model(directory, join(learner_run(output.dir, name), FITS_DIR, f"iteration{iteration}"))
    where = placement.key("train")
    return Fit({"train/loss": metrics[TRAIN_LOSS], "train/rows": float(len(rows)), where: metrics[where],
                **{k: v for k, v in metrics.items() if k.startswith((f"{split}/", f"{DEV}/"))}},
               ray.put(state), from_source, predictions)
