"""Alg. 1 of Yu & Joty 2021 on Ray: two learners on Ray Train, a pseudo-labelling actor pool, seeded exchange.

One iteration i = 0 .. s (s = ``cfg.iterations``):

1. both learners fit on their labelled sets at the same time (each learner's Ray Train run, kept
   for the whole job, serves its fit): the original labelled data D plus every pseudo-label
   received so far (``xlt.cotrain.learner``);
2. both are evaluated on every language (``<split>/acc/<lang>``); iteration 0 is each learner
   alone, the zero-shot baseline;
3. if i < s: each learner pseudo-labels the unlabelled pool U with the ``xlt.inference``
   actor pool (Alg. 1 predicts every x_u in U); from the rows still in its own pool U^k, the
   selection policy picks the confident ones (``xlt.cotrain.selection``); co-training gives
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
import functools
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import ConfigError, save_config
from ..engine import FitService, changed_keys
from ..progress import progress
from ..report import Phases
from ..storage import fetched, join, staged
from ..tracking import Tracker
from ..tasks import Task, load_task
from ..train.data import eval_rows
from .config import LEARNERS, RESUMABLE_CHANGES, CotrainConfig, read_config
from .learner import Fit, fit, learner_service
from .selection import PoolPredictions, default_size, select
from .state import LoopState

logger = logging.getLogger(__name__)
CONFIG_FILE = "config.yaml"


@dataclass(frozen=True)
class CotrainData:
    """Labelled rows (``xlt.tasks.row``), the unlabelled pool (``id, text, text_pair, lang`` + ``gold``,
    for scoring only; ``None`` where the data has no label) and evaluation rows (``text``,
    ``text_pair``, ``label``, ``lang``)."""

    task: Task
    labeled: list[dict[str, Any]]
    pool: list[dict[str, Any]]
    evaluation_rows: list[dict[str, Any]]

    @property
    def labels(self) -> tuple[str, ...]:
        return self.task.labels

    @functools.cached_property
    def pool_ids(self) -> np.ndarray:
        """The pool's ids in pool order (object array of the rows' own strings), made once per job."""
        return np.asarray([row["id"] for row in self.pool], dtype=object)

    @property
    def targets(self) -> tuple[str, ...]:
        return self.task.target_langs


def load_data(cfg: CotrainConfig) -> CotrainData:
    """The task's rows (see ``PoolData``), read and checked on the driver before any work starts."""
    task = load_task(cfg.task, cfg.data.data_dir)
    n = cfg.data.max_examples
    labeled = task.rows("train", [task.source_lang], n)
    pool = [{"id": r["id"], "text": r["text"], "text_pair": r["text_pair"], "lang": r["lang"], "gold": r["label"]}
            for r in task.rows("pool", task.target_langs, n)]
    return CotrainData(task, labeled, pool, eval_rows(task, cfg.data.eval_split, n))


def receiver(mode: str, selector: str) -> str:
    """Who gets what ``selector`` selects: the other learner (co-training) or itself (self-training)."""
    if mode == "self-train":
        return selector
    return LEARNERS[1 - LEARNERS.index(selector)]


def exchange(state: LoopState, preds: dict[str, PoolPredictions], cfg: CotrainConfig, data: CotrainData,
             iteration: int) -> dict[str, dict[str, float]]:
    """Select from each learner's pool and hand the rows over (step 3 of the module docstring).

    All selections are made from the pools as they were at the start of the iteration, then
    applied. Returns per selecting learner: candidates, selected, pseudo-label accuracy."""
    size = cfg.selection.size or default_size(len(data.labeled))
    prior = dict(Counter(row["label"] for row in data.labeled))
    chosen: dict[str, PoolPredictions] = {}
    candidates: dict[str, int] = {}
    for k, name in enumerate(LEARNERS):
        own = preds[name].restrict(state.pool[name])
        partner = preds[LEARNERS[1 - k]] if cfg.mode == "cotrain" else None
        idx = select(cfg.selection.policy, own, threshold=cfg.selection.threshold, size=size,
                     seed=[cfg.selection.seed, iteration, k], class_prior=prior, partner=partner)
        chosen[name] = PoolPredictions(own.ids[idx], own.labels[idx], own.confidence[idx])
        candidates[name] = int((own.confidence > cfg.selection.threshold).sum())
    # The pool rows of the selected ids only: an index of the whole pool would cost the driver ~100
    # bytes a pool row.
    wanted = {row_id for picked in chosen.values() for row_id in picked.ids.tolist()}
    by_id = {row["id"]: row for row in data.pool if row["id"] in wanted}
    stats: dict[str, dict[str, float]] = {}
    for name, picked in chosen.items():
        gold = np.asarray([by_id[i]["gold"] for i in picked.ids], dtype=object)
        scored = gold != None  # noqa: E711 (element-wise): pool rows without a gold label are not scored
        stats[name] = {"pseudo/candidates": float(candidates[name]), "pseudo/selected": float(len(picked.ids)),
                       "pseudo/accuracy": float((gold[scored] == picked.labels[scored]).mean())
                       if scored.any() else float("nan")}
        taken = set(picked.ids.tolist())
        state.pool[name] = [i for i in state.pool[name] if i not in taken]
        to = receiver(cfg.mode, name)
        for row_id, label in zip(picked.ids.tolist(), picked.labels.tolist()):
            row = by_id[row_id]
            state.received[to].append({"id": row_id, "text": row["text"], "text_pair": row.get("text_pair"),
                                       "label": label, "lang": row["lang"], "iteration": iteration,
                                       "selected_by": name})
    return stats


def check_resumable(cfg: CotrainConfig, directory: str) -> None:
    """Refuse to continue ``directory`` (local or URI) with a config that learns something else."""
    with fetched(join(directory, CONFIG_FILE)) as path:
        if path is None:
            return
        previous = read_config(path)
    changed = [k for k in changed_keys(previous, cfg) if not k.startswith(RESUMABLE_CHANGES)]
    if changed:
        raise ConfigError(f"{directory} holds a co-training run whose config differs in {', '.join(changed)}; "
                          "choose another output_dir, or resume it unchanged")


def run_cotraining(cfg: CotrainConfig, *, data: CotrainData | None = None, stop_after: int | None = None,
                   on_iteration: Callable[[int, list[dict[str, Any]]], None] | None = None,
                   phases: Phases | None = None, tracker: Tracker | None = None) -> LoopState:
    """Run (or resume) ``cfg`` to the end, or until iteration ``stop_after`` is saved; returns the state.

    Needs a running Ray (``ray.init``). State, config, metrics and the learners' runs go to
    ``cfg.output_dir``. ``on_iteration(iteration, records)`` is called after each iteration is
    saved, with one metrics record per learner (e.g. to report to Ray Tune). ``data``:
    ``load_data(cfg)``, when the caller already read it. ``phases``: where each fit,
    pseudo-labelling pass and exchange is timed (the job prints the table). ``tracker``: where
    each iteration's records (step = iteration, keys ``<learner>/...``) and each fit's epochs
    (``<learner>/epoch/...``, step = iteration × K + epoch) are logged.
    """
    phases = Phases() if phases is None else phases
    out = cfg.output_dir
    check_resumable(cfg, out)
    data = load_data(cfg) if data is None else data
    state = LoopState.load(out) or LoopState.fresh(LEARNERS, [row["id"] for row in data.pool])
    with staged(out) as local:
        save_config(cfg, local / CONFIG_FILE)
    if state.iteration > cfg.iterations:
        logger.info("co-training in %s is complete (%d iterations)", out, cfg.iterations)
        return state
    if state.iteration:
        logger.info("resuming %s at iteration %d", out, state.iteration)
    warn_if_short(cfg)
    with contextlib.ExitStack() as services:
        learners = {name: services.enter_context(start_learner(cfg, data, name, tracker)) for name in LEARNERS}
        for iteration in range(state.iteration, cfg.iterations + 1):
            fits = fit_learners(cfg, data, state, iteration, learners, phases)
            records = {name: {"iteration": iteration, "learner": name, "mode": cfg.mode, **fits[name].metrics,
                              "nodes": {"fit": fits[name].nodes}} for name in LEARNERS}
            if iteration < cfg.iterations:
                preds = {}
                for name in LEARNERS:
                    with phases(f"pseudo-label {name}", iteration=iteration):
                        preds[name], records[name]["nodes"]["pseudo-label"] = predict(cfg, name, fits[name].state,
                                                                                      data)
                with phases("select and exchange", iteration=iteration):
                    for name, stats in exchange(state, preds, cfg, data, iteration).items():
                        records[name].update(stats)
            state.history.extend(records[name] for name in LEARNERS)
            state.iteration = iteration + 1
            state.save(out)
            if tracker is not None:
                for name in LEARNERS:
                    tracker.metrics(records[name], iteration, prefix=f"{name}/")
            logger.info("iteration %d: %s", iteration, "; ".join(
                f"{name} {cfg.data.eval_split} avg_target {records[name].get(_avg_key(cfg), float('nan')):.3f}"
                for name in LEARNERS))
            if on_iteration is not None:
                on_iteration(iteration, [records[name] for name in LEARNERS])
            if stop_after is not None and iteration >= stop_after:
                break
    return state


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


def start_learner(cfg: CotrainConfig, data: CotrainData, name: str, tracker: Tracker | None) -> FitService:
    """Learner ``name``'s Ray Train run for the rest of the job; its epochs are tracked as
    ``<name>/epoch/...`` at step iteration × K + epoch."""
    epochs = cfg.learner(name).optim.epochs
    callbacks = tracker.callbacks(f"{name}/epoch/", epochs) if tracker is not None else []
    return learner_service(name, cfg.learner(name), data.task, len(data.labeled), data.evaluation_rows,
                           cfg.output_dir, callbacks)


def fit_learners(cfg: CotrainConfig, data: CotrainData, state: LoopState, iteration: int,
                 learners: dict[str, FitService], phases: Phases) -> dict[str, Fit]:
    """Both learners' fits of ``iteration``, side by side (one driver thread each: a fit blocks
    until its run has served it)."""
    from concurrent.futures import ThreadPoolExecutor

    def fit_one(name: str) -> Fit:
        rows = data.labeled + [_train_row(r) for r in state.received[name]]
        with phases(f"fit {name}", iteration=iteration):
            return fit(learners[name], name, cfg.learner(name), data.task, rows, iteration, cfg.output_dir,
                       cfg.data.metric_split)

    with ThreadPoolExecutor(max_workers=len(LEARNERS), thread_name_prefix="learner") as pool:
        futures = {name: pool.submit(fit_one, name) for name in LEARNERS}
        return {name: future.result() for name, future in futures.items()}


def _avg_key(cfg: CotrainConfig) -> str:
    return f"{cfg.data.metric_split}/acc/avg_target"


def _train_row(received: dict[str, Any]) -> dict[str, Any]:
    return {key: received.get(key) for key in ("id", "text", "text_pair", "label", "lang")}


def predict(cfg: CotrainConfig, name: str, state: Any, data: CotrainData) -> tuple[PoolPredictions, dict[str, int]]:
    """Pseudo-label the whole pool with learner ``name``'s weights (``state``: an ObjectRef to its
    fit's ``state_dict``) through the ``xlt.inference`` actor pool; keeps id, label, confidence,
    and counts the rows each Ray node predicted."""
    import ray.data

    from ..inference import ClassifierSpec, pseudo_label

    ray.data.DataContext.get_current().enable_progress_bars = False

    spec = ClassifierSpec(model=cfg.learner(name).model, labels=data.labels, state=state,
                          paired=data.task.paired)
    inf = cfg.inference
    columns = ("text", "text_pair") if data.task.paired else ("text",)
    pool = ray.data.from_items([{POSITION: i, **{k: r[k] for k in columns}} for i, r in enumerate(data.pool)])
    ds = pseudo_label(pool, spec, batch_size=inf.batch_size, encode_batch_size=inf.encode_batch_size,
                      num_actors=inf.num_actors, num_cpus=inf.num_cpus, num_gpus=inf.num_gpus,
                      threads=inf.torch_threads)
    bar = progress(len(data.pool), f"pseudo-label {name}", "row")
    # Columns are picked by collect, not by select_columns: that adds a Ray Data task needing a CPU
    # slot, which a preset reserving the whole machine for learners and actors never frees.
    out = collect(ds.iter_batches(batch_format="numpy"), data.pool_ids, data.labels, bar.update)
    bar.close()
    return out


POSITION = "position"  # a pool row's index in ``CotrainData.pool``: what pseudo-labelling rows carry as their id


def collect(batches: Iterable[Mapping[str, np.ndarray]], ids: np.ndarray, labels: Sequence[str],
            done: Callable[[int], Any] = lambda n: None) -> tuple[PoolPredictions, dict[str, int]]:
    """Consume a pseudo-labelled stream (``position``, ``pseudo_label``, ``confidence``, ``node``
    columns) into ``PoolPredictions`` over the pool rows ``ids[position]``, and count the rows each
    Ray node predicted; ``done(n)`` after each batch of n rows.

    The driver keeps three numbers a row while the stream runs (position, label code, confidence),
    and the result refers to the objects of ``ids`` and ``labels`` instead of making a Python
    string per row: about 24 bytes a pool row in all (``benchmarks/pool_scale.md``)."""
    code = {label: i for i, label in enumerate(labels)}
    positions, codes, confidence, nodes = [], [], [], Counter()
    for batch in batches:
        positions.append(np.asarray(batch[POSITION], dtype=np.int64))
        codes.append(np.fromiter((code[y] for y in batch["pseudo_label"]), dtype=np.int32,
                                 count=len(batch["pseudo_label"])))
        confidence.append(np.asarray(batch["confidence"], dtype=np.float64))
        nodes.update(batch["node"].tolist())
        done(len(positions[-1]))
    position = np.concatenate(positions) if positions else np.empty(0, dtype=np.int64)
    label = np.concatenate(codes) if codes else np.empty(0, dtype=np.int32)
    return PoolPredictions(ids[position], np.asarray(labels, dtype=object)[label],
                           np.concatenate(confidence) if confidence else np.empty(0)), dict(nodes)
