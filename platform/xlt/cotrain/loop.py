"""Alg. 1 of Yu & Joty 2021 on Ray: two learners on Ray Train, labelling actors kept for the job, seeded exchange.

One iteration i = 0 .. s (s = ``cfg.iterations``):

1. both learners fit on their labelled sets at the same time (each learner's Ray Train run, kept
   for the whole job, serves its fit; learners in process, ``scaling.num_workers: 0``, take turns
   in the driver): the original labelled data D plus every pseudo-label
   received so far (``xlt.cotrain.learner``);
2. both are evaluated on every language (``<split>/acc/<lang>``) and on the source language's dev,
   each row's probabilities recorded, from which the job's classifier (``xlt.cotrain.classifier``: a
   learner, or the product of both learners' probabilities) is scored as a third record; iteration 0
   is each learner alone, the zero-shot baseline, and their combination without any exchange;
3. if i < s: both learners pseudo-label the unlabelled pool U in one pass of the job's
   labellers (``xlt.inference.labellers``: actors kept for the job, each pass sending them the
   iteration's weights; Alg. 1 predicts every x_u in U; ``xlt.cotrain.pool``); from the
   rows still in its own pool U^k, each learner's selection policy picks confident ones as the
   predictions stream past (``xlt.cotrain.selection``: by its own prediction, or the job's
   classifier's; over the whole pool, or in equal shares per target language); co-training gives
   them to the *other* learner's labelled set (§3.1: "the items selected by f^lm [are] merged
   into the original labeled data D for f^emb", and vice versa), self-training to the learner
   itself; either way they leave the selecting learner's pool (Alg. 1: U^k = U^k \\ S^k), so no
   learner selects a row twice and no labelled set receives a row twice;
4. the loop state is saved (``xlt.cotrain.state``): a restarted job resumes at i + 1; a job
   killed within iteration i re-runs i, whose fits continue from their latest checkpoints and
   whose selection is a function of the saved state and seeds, so no pseudo-label is lost or
   given twice.

Alg. 1 as printed adds S^emb to D^emb (self-training); the prose of §3.1 and Fig. 1 exchange
them. We follow the prose: it is what makes the method co-training and what §4.2 contrasts
with self-training.

Each selection also records how many candidates passed the threshold and the accuracy of the
selected pseudo-labels against the pool's gold labels where the task has them (they are never
used for training). Rows are single texts or sentence pairs (``text_pair``), as the task says;
a pair is pseudo-labelled, selected and exchanged as one row.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import placement
from ..config import ConfigError, save_config
from ..engine import FitService, check_device, check_resumable, read_run_config
from ..engine.checkpoints import CONFIG_FILE
from ..inference.labellers import Labellers
from ..progress import progress
from ..record import FINISHED, RUNNING, update_record
from ..report import Phases
from ..storage import staged
from ..tracking import Tracker
from ..data import Example
from ..tasks import Task, load_task, row
from ..train.data import eval_rows
from .classifier import CLASSIFIER, classifier_predictions, classifier_record, members, rescore, write_predictions
from .config import LEARNERS, CotrainConfig, PoolData
from .learner import Fit, fit, learner_run, learner_service
from .probe import ProbeLearner
from .record import record_failure, write_cotrain_record
from .pool import Pass, StoredPool, count_pool, put_pool, stream_selections
from .selection import Selection, default_size
from .state import LoopState

logger = logging.getLogger(__name__)
# The precision each iteration's pseudo-labelling computed in, as the actors resolved inference.precision
# (auto: bf16 or fp32 by their machine's CPU); several, comma-separated, if actors on unlike nodes differed.
PRECISION_KEY = "pseudo-label/precision"


@dataclass(frozen=True)
class PreparedCotrain:
    """Labelled rows (``xlt.tasks.row``), the unlabelled pool's size per language (its rows stay
    out of the driver: ``xlt.cotrain.pool``; at most ``pool_limit`` per language, 0 = all) and
    evaluation rows (``text``, ``text_pair``, ``label``, ``lang``). ``block_rows``: rows per block of
    the stored pool (the inference batch)."""

    task: Task
    labeled: list[dict[str, Any]]
    pool_counts: dict[str, int]
    evaluation_rows: list[dict[str, Any]]
    pool_limit: int = 0
    block_rows: int = 256
    dev_rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # the source language's dev
    disjoint: bool = False  # the pool without translations of the source's train draw (PoolData.pool)

    @property
    def labels(self) -> tuple[str, ...]:
        return self.task.labels

    @property
    def pool_size(self) -> int:
        return sum(self.pool_counts.values())

    @functools.cached_property
    def stored_pool(self) -> StoredPool:
        """The pool in Ray's object store (``put_pool``), put there on first use (Ray must be running)
        and kept for the job: one read of the pool per job, not per pass."""
        return put_pool(self.task, self.pool_limit, self.block_rows, self.disjoint)

    @property
    def targets(self) -> tuple[str, ...]:
        return self.task.target_langs


def prepare(cfg: CotrainConfig) -> PreparedCotrain:
    """The task's rows (see ``PoolData``), read and checked on the driver before any work starts,
    and each learner's precision against its device."""
    for name in LEARNERS:
        learner = getattr(cfg, name)
        check_device(learner.optim, learner.scaling, f"{name}.")
    task = load_task(cfg.task, cfg.data.data_dir)
    n = cfg.data.max_examples
    return PreparedCotrain(task, [row(ex) for ex in labeled_examples(task, cfg.data)],
                           count_pool(task, n, cfg.data.disjoint), eval_rows(task, cfg.data.eval_split, n), n,
                           cfg.inference.batch_size, eval_rows(task, "dev", n, langs=[task.source_lang]),
                           cfg.data.disjoint)


def labeled_examples(task: Task, data: PoolData) -> list[Example]:
    """D: ``labeled_fraction`` of the English train rows ``max_examples`` allows (at least one), drawn
    from the whole split as any n rows are."""
    allowed = len(task.examples("train", task.source_lang, data.max_examples))
    return task.examples("train", task.source_lang, max(1, round(data.labeled_fraction * allowed)))


def receiver(mode: str, selector: str) -> str:
    """Who gets what ``selector`` selects: the other learner (co-training) or itself (self-training)."""
    if mode == "self-train":
        return selector
    return LEARNERS[1 - LEARNERS.index(selector)]


def selections(state: LoopState, cfg: CotrainConfig, data: PreparedCotrain, iteration: int) -> dict[str, Selection]:
    """Each learner's selection of ``iteration``: its policy and seed (seed, iteration, learner), over
    the rows it has not selected before (its pool U^k)."""
    size = cfg.selection.size or default_size(len(data.labeled))
    prior = dict(Counter(row["label"] for row in data.labeled))
    return {name: Selection(cfg.selection.policy, threshold=cfg.selection.threshold, size=size,
                            seed=[cfg.selection.seed, iteration, k], class_prior=prior,
                            exclude=state.selected(name),
                            languages=data.targets if cfg.selection.per_language else ())
            for k, name in enumerate(LEARNERS)}


def exchange(state: LoopState, chosen: dict[str, Selection], cfg: CotrainConfig,
             iteration: int) -> dict[str, dict[str, float]]:
    """Hand each learner's selected rows over (step 3 of the module docstring). Every selection was
    made over the pools as they were at the start of the iteration. Returns per selecting learner:
    candidates, selected, pseudo-label accuracy against the pool's gold labels where it has them."""
    stats: dict[str, dict[str, float]] = {}
    for name, selection in chosen.items():
        picked = selection.result()
        gold = picked.get("gold", np.empty(0, dtype=object))
        scored = gold != None  # noqa: E711 (element-wise): pool rows without a gold label are not scored
        stats[name] = {"pseudo/candidates": float(selection.candidates), "pseudo/selected": float(len(picked["id"])),
                       "pseudo/accuracy": float((gold[scored] == picked["label"][scored]).mean())
                       if scored.any() else float("nan")}
        to = receiver(cfg.mode, name)
        for i in range(len(picked["id"])):
            state.received[to].append({"id": picked["id"][i], "text": picked["text"][i],
                                       "text_pair": picked["text_pair"][i], "label": picked["label"][i],
                                       "lang": picked["lang"][i], "iteration": iteration, "selected_by": name})
    return stats


def run_cotraining(cfg: CotrainConfig, *, data: PreparedCotrain | None = None, stop_after: int | None = None,
                   on_iteration: Callable[[int, list[dict[str, Any]]], None] | None = None,
                   phases: Phases | None = None, tracker: Tracker | None = None) -> LoopState:
    """Run (or resume) ``cfg`` to the end, or until iteration ``stop_after`` is saved; returns the state.

    Needs a running Ray (``ray.init``). State, config, metrics and the learners' runs go to
    ``cfg.output.dir``. ``on_iteration(iteration, records)`` is called after each iteration is
    saved, with one metrics record per learner (e.g. to report to Ray Tune). ``data``:
    ``prepare(cfg)``, when the caller already read it. ``phases``: where each fit,
    pseudo-labelling pass and exchange is timed (the job prints the table). ``tracker``: where
    each iteration's records (step = iteration, keys ``<learner>/...``) and each fit's epochs
    (``<learner>/epoch/...``, step = iteration × K + epoch) are logged.
    """
    phases = Phases() if phases is None else phases
    out = cfg.output.dir
    check_resumable(cfg, out, instead="choose another output.dir, or resume it unchanged")
    data = prepare(cfg) if data is None else data
    state = LoopState.load(out) or LoopState.fresh(LEARNERS)
    try:
        iterate(cfg, data, state, stop_after, on_iteration, phases, tracker)
    except BaseException as e:
        record_failure(cfg, e)
        raise
    complete = state.iteration > cfg.iterations  # the loop recorded its classifiers already: only the status
    update_record(cfg.output.dir, status=FINISHED if complete else RUNNING,
                  phase=None if complete else f"iteration {state.iteration - 1}")
    return state


def iterate(cfg: CotrainConfig, data: PreparedCotrain, state: LoopState, stop_after: int | None,
            on_iteration: Callable[[int, list[dict[str, Any]]], None] | None, phases: Phases,
            tracker: Tracker | None) -> None:
    """``run_cotraining``'s loop, from ``state`` on: each iteration saved, and the run's record with it."""
    out = cfg.output.dir
    previous = read_run_config(out, CotrainConfig)
    if state.history and previous is not None and previous.classifier != cfg.classifier:
        score_again(cfg, previous, state, data.task.source_lang)
    with staged(out) as local:
        save_config(cfg, local / CONFIG_FILE)
    write_cotrain_record(cfg, data.task, state.history, RUNNING)
    if state.iteration > cfg.iterations:
        logger.info("co-training in %s is complete (%d iterations)", out, cfg.iterations)
        return
    if state.iteration:
        logger.info("resuming %s at iteration %d", out, state.iteration)
    warn_if_short(cfg)
    with contextlib.ExitStack() as services:
        learners = {name: services.enter_context(start_learner(cfg, data, name, tracker)) for name in LEARNERS}
        # One pool of labellers for the job: each pass gives it the iteration's weights (xlt.inference.labellers).
        labellers = services.enter_context(Labellers(cfg.inference))
        for iteration in range(state.iteration, cfg.iterations + 1):
            fits = fit_learners(cfg, data, state, iteration, learners, phases)
            records = {name: {"iteration": iteration, "learner": name, "mode": cfg.mode, **fits[name].metrics}
                       for name in LEARNERS}
            records[CLASSIFIER] = job_classifier(cfg, data, fits, iteration)
            if iteration < cfg.iterations:
                chosen = selections(state, cfg, data, iteration)
                with phases("pseudo-label and select", iteration=iteration):
                    labelled = label_pool(cfg, fits, data, chosen, labellers, members(records[CLASSIFIER]))
                with phases("exchange", iteration=iteration):
                    for name, stats in exchange(state, chosen, cfg, iteration).items():
                        records[name].update(stats)
                        records[name][placement.key("pseudo-label")] = placement.as_text(labelled.placement())
                        records[name][PRECISION_KEY] = ",".join(labelled.precisions)
            state.history.extend(records.values())
            state.iteration = iteration + 1
            state.save(out)
            write_cotrain_record(cfg, data.task, state.history, RUNNING, phase=f"iteration {iteration}")
            if tracker is not None:
                for name, record in records.items():
                    tracker.metrics(record, iteration, prefix=f"{name}/")
            logger.info("iteration %d: %s", iteration, "; ".join(
                f"{name} {cfg.data.eval_split} avg_target {record.get(_avg_key(cfg), float('nan')):.3f}"
                for name, record in records.items()))
            if on_iteration is not None:
                on_iteration(iteration, list(records.values()))
            if stop_after is not None and iteration >= stop_after:
                break


def score_again(cfg: CotrainConfig, previous: CotrainConfig, state: LoopState, source_lang: str) -> None:
    """The run's recorded iterations with the job's classifier as ``cfg.classifier`` now says, where ``previous``
    (the run's config) said otherwise: from the learners' recorded predictions, no training; the state saved
    before the new config is. Refused where the learners selected by the job's classifier."""
    if cfg.selection.confidence == "classifier":  # selection is fixed: the run's learners selected so too
        raise ConfigError(f"{cfg.output.dir} holds a run whose learners selected by the job's classifier "
                          "(selection.confidence: classifier), which classifier now changes; resume it with its "
                          "classifier unchanged, or choose another output.dir")
    logger.info("the job's classifier changed (%s to %s): its recorded iterations are scored again",
                previous.classifier, cfg.classifier)
    rescore(cfg.output.dir, state.history, cfg.classifier, source_lang)
    state.save(cfg.output.dir)


def job_classifier(cfg: CotrainConfig, data: PreparedCotrain, fits: dict[str, Fit], iteration: int) -> dict[str, Any]:
    """The job's classifier at ``iteration`` (``xlt.cotrain.classifier``): its metrics record, from the
    learners' recorded predictions, which are written with its own to ``predictions/iteration<i>.json``."""
    learners = {name: fit.predictions for name, fit in fits.items()}
    chosen, combined = classifier_predictions(learners, cfg.classifier, data.task.source_lang)
    write_predictions(cfg.output.dir, iteration, {**learners, CLASSIFIER: combined})
    return classifier_record({"iteration": iteration, "learner": CLASSIFIER, "mode": cfg.mode}, chosen, combined,
                             data.task.source_lang)


def warn_if_short(cfg: CotrainConfig) -> None:
    """Say so when the cluster, as it is now, cannot hold the job's footprint at once: the
    pseudo-labelling actors would wait for nodes that only an autoscaler can add."""
    import ray

    have = ray.cluster_resources()
    short = {k: v for k, v in cfg.footprint().items() if v > have.get(k, 0.0) + 1e-9}
    if short:
        logger.warning("co-training holds %s at once (both learners' worker groups for the whole job, and the "
                       "pseudo-labelling actors); this cluster has %s now: it will wait for an autoscaler to add "
                       "nodes. Lower lm/emb.scaling or inference resources to fit it",
                       ", ".join(f"{v:g} {k}" for k, v in cfg.footprint().items() if v),
                       ", ".join(f"{have.get(k, 0.0):g} {k}" for k in short))


def start_learner(cfg: CotrainConfig, data: PreparedCotrain, name: str,
                  tracker: Tracker | None) -> FitService | ProbeLearner:
    """Learner ``name``'s Ray Train run for the rest of the job, its epochs tracked as ``<name>/epoch/...`` at
    step iteration × K + epoch; or, for ``kind: probe``, its probe in the driver (``xlt.cotrain.probe``)."""
    learner = cfg.learner(name)
    if learner.kind == "probe":
        return ProbeLearner(name, learner.model, learner.probe, data.task, data.labeled, data.evaluation_rows,
                            data.dev_rows, cfg.data.metric_split, data.pool_limit, learner.optim.seed,
                            learner_run(cfg.output.dir, name), data.disjoint, cfg.inference.torch_threads)
    epochs = learner.optim.epochs
    callbacks = tracker.callbacks(f"{name}/epoch/", epochs) if tracker is not None else []
    return learner_service(name, cfg.learner(name), data.task, len(data.labeled), data.evaluation_rows,
                           cfg.data.metric_split, cfg.output, callbacks, data.dev_rows)


def fit_learners(cfg: CotrainConfig, data: PreparedCotrain, state: LoopState, iteration: int,
                 learners: dict[str, FitService], phases: Phases) -> dict[str, Fit]:
    """Both learners' fits of ``iteration``: a learner on Ray Train workers in a driver thread of its
    own (a fit blocks until its run has served it), side by side with the other; learners in
    process one after the other in ``LEARNERS`` order, in this thread. In-process fits take turns
    whatever their order (``xlt.engine.context.InProcessContext.exclusive``); a fixed order keeps the phase table
    and the logs the same from run to run, where two threads would take the turn as they came."""
    from concurrent.futures import ThreadPoolExecutor

    def fit_one(name: str) -> Fit:
        rows = data.labeled + [_train_row(r) for r in state.received[name]]
        with phases(f"fit {name}", iteration=iteration):
            if isinstance(learners[name], ProbeLearner):
                return learners[name].fit(rows, iteration)
            return fit(learners[name], name, cfg.learner(name), data.task, rows, iteration, cfg.output,
                       cfg.data.metric_split, keep=cfg.classifier.keep != "last")

    on_workers = [name for name in LEARNERS if cfg.learner(name).kind == "finetune" and cfg.learner(name).scaling.num_workers]
    with ThreadPoolExecutor(max_workers=len(LEARNERS), thread_name_prefix="learner") as pool:
        futures = {name: pool.submit(fit_one, name) for name in on_workers}
        here = {name: fit_one(name) for name in LEARNERS if name not in futures}
        return {name: here[name] if name in here else futures[name].result() for name in LEARNERS}


def _avg_key(cfg: CotrainConfig) -> str:
    return f"{cfg.data.metric_split}/acc/avg_target"


def _train_row(received: dict[str, Any]) -> dict[str, Any]:
    return {key: received.get(key) for key in ("id", "text", "text_pair", "label", "lang")}


def label_pool(cfg: CotrainConfig, fits: dict[str, Fit], data: PreparedCotrain,
               chosen: dict[str, Selection], labellers: Labellers, classifier: tuple[str, ...]) -> Pass:
    """Pseudo-label the whole pool with both learners' weights (``fits[name].state``: an ObjectRef to
    its fit's weights) in one pass of the job's ``labellers`` (actors that keep their models between
    passes and load each iteration's weights, or this process: ``inference.num_actors: 0``), feeding
    each learner's selection as the stored pool's blocks come back labelled (by the job's ``classifier``,
    its learners at this iteration, with ``selection.confidence: classifier``); returns what the pass saw:
    where it ran (``xlt.placement``) and in what precision."""
    from ..inference import ClassifierSpec

    specs = {name: ClassifierSpec(model=cfg.learner(name).model, labels=data.labels, state=fit.state,
                                  paired=data.task.paired, from_source=fit.from_source, normalize=fit.normalize,
                                  languages=fit.languages) for name, fit in fits.items()}
    labellers.load(specs)
    batches = labellers.stream(data.stored_pool.blocks)
    partners = {name: LEARNERS[1 - k] for k, name in enumerate(LEARNERS)} if cfg.mode == "cotrain" else None
    by = classifier if cfg.selection.confidence == "classifier" else ()
    bar = progress(data.pool_size, "pseudo-label", "row")
    seen = stream_selections(batches, chosen, partners=partners, by=by, labels=data.labels, done=bar.update)
    bar.close()
    seen.check(data.stored_pool)
    return seen
