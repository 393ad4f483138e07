"""Tune trainables: one fine-tuning run or one co-training run per trial, reporting as they go.

Fine-tuning (``finetune_trial``) sweeps what Wang et al. (2022) tune per task — τ and λ of each alignment
objective (§3.3, §5.2–5.3), the view counts t_f / t_p / t_c and the code-switching ratio r_c
(§4.1), the learning rate. A trial fits in its own process with ``xlt.train.local.fit_in_process``
(the Ray Train loop's pieces without Ray Train: a trial owns a slice of the cluster, and sweeps
parallelise across trials), on the rows of ``xlt.train.trainer.resolve``. Views are made in the
trial by calling the augmentation UDF (``CrossLingualAugment``) on the source rows: it is a plain
batch callable, and its views depend on (seed, kind, row id) only, so they equal the views the
Ray Data pipeline of ``jobs/finetune.py`` streams in every epoch. After every epoch the trial
evaluates on every language's dev split and reports ``val/acc/avg_target`` etc., so ASHA can
stop it at a rung.

Co-training (``cotrain_trial``) sweeps the confidence threshold t and the selection policy of
Yu & Joty 2021, §3.1 / §4.2: ``run_cotraining`` with ``on_iteration`` reporting each iteration. Its loop
state lives in the trial's directory, so a trial restarted by a resumed sweep continues at its
next iteration. The score of an iteration is the better learner's dev average (the learner one
would keep; each learner's metrics are reported too, as ``lm/…`` and ``emb/…``).

Resources (``JobSpec.resources``): a fine-tuning trial reserves ``scaling.cpus_per_worker`` CPUs
(its torch threads) and a GPU if ``scaling.use_gpu``; a co-training trial reserves a placement
group with one bundle per learner actor (Tune's placement group captures the actors the trial
starts), while the pseudo-labelling actors of Ray Data run outside it (Ray Data schedules with
its own strategy) — ``JobSpec.footprint`` counts them, to bound how many trials run at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import check, from_dict
from ..cotrain.config import CotrainConfig
from ..eval.classification import ACC, AVG_TARGET, metric_name
from ..train.batches import VIEW_COLUMNS
from ..tasks import Task
from ..train.config import DataSettings, FinetuneConfig
from ..engine import TRAIN_EPOCH, TRAIN_GLOBAL_STEP, TRAIN_LOSS
from . import reporting
from .overrides import trial_data
from .space import Job, Param, active_values

TRAIN_ITERATION = metric_name("train", "iteration")  # co-training iterations completed (fits per learner)


@dataclass(frozen=True)
class TrialSetup:
    """What every trial of a sweep shares (shipped once with ``tune.with_parameters``): the job's
    base config mapping, the space's entries, and the overrides of every trial (the space's
    ``sweep_only`` plus the data root the driver resolved)."""

    base: dict[str, Any]
    params: tuple[Param, ...]
    trial_overrides: tuple[str, ...] = ()

    def data(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The config mapping of the trial Tune sampled ``config`` for."""
        return trial_data(self.base, active_values(self.params, config), self.trial_overrides)


# --------------------------------------------------------------------------------------------
# Fine-tuning
# --------------------------------------------------------------------------------------------

def augmented_rows(data: DataSettings, task: Task, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with view columns: source-language rows through ``CrossLingualAugment`` (translators
    of ``augmentation_sources``), the others (translate-train) with none."""
    import pyarrow as pa

    from ..augment import CrossLingualAugment
    from ..train.data import augmentation_sources

    assert data.augment is not None
    augment = CrossLingualAugment.from_config(data.augment, **augmentation_sources(data, task))
    source = [dict(r) for r in rows if r["lang"] == task.source_lang]
    views = augment(pa.Table.from_pylist(source)).select(list(VIEW_COLUMNS)).to_pylist()
    out = [{**row, **v} for row, v in zip(source, views)]
    return out + [{**row, **{c: [] for c in VIEW_COLUMNS}} for row in rows if row["lang"] != task.source_lang]


def finetune_trial(config: dict[str, Any], setup: TrialSetup) -> None:
    """Tune function trainable: fine-tune the trial's ``FinetuneConfig``, report dev metrics per epoch."""
    import torch

    from ..cli import quiet_libraries
    from ..train.local import fit_in_process
    from ..train.loop import evaluate
    from ..train.trainer import resolve

    quiet_libraries()
    resolved = resolve(from_dict(FinetuneConfig, setup.data(config)))
    cfg, rows = resolved.config, resolved.train
    torch.set_num_threads(cfg.scaling.cpus_per_worker)
    if cfg.data.augment is not None:
        rows = augmented_rows(cfg.data, resolved.task, rows)
    dev_columns = {key: [r[key] for r in resolved.val] for key in ("text", "text_pair", "label", "lang")}

    def on_epoch(training: Any, loss: float) -> None:
        metrics = evaluate(training.classifier, dev_columns, cfg.task.source_lang, "val", cfg.optim.eval_batch_size)
        reporting.report({TRAIN_EPOCH: training.epoch, TRAIN_GLOBAL_STEP: training.global_step, TRAIN_LOSS: loss,
                          **metrics})

    fit_in_process(cfg, rows, on_epoch=on_epoch)


# --------------------------------------------------------------------------------------------
# Co-training
# --------------------------------------------------------------------------------------------

def cotrain_metrics(iteration: int, records: Sequence[Mapping[str, Any]], split: str) -> dict[str, Any]:
    """One Tune result per iteration from ``run_cotraining``'s per-learner records: each learner's
    numbers as ``<learner>/<name>``, and the ``<split>/…`` metrics of the learner with the better
    average target accuracy unprefixed (the score), with ``best_learner`` naming it."""
    avg = metric_name(split, ACC, AVG_TARGET)
    best = max(records, key=lambda r: r[avg])
    out: dict[str, Any] = {TRAIN_ITERATION: iteration + 1, "best_learner": best["learner"]}
    for record in records:
        out.update({f"{record['learner']}/{k}": v for k, v in record.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "iteration"})
    out.update({k: v for k, v in best.items() if k.startswith(f"{split}/")})
    return out


def cotrain_trial(config: dict[str, Any], setup: TrialSetup) -> None:
    """Tune function trainable: co-train with the trial's ``CotrainConfig`` in the trial directory,
    reporting every iteration (a resumed trial reports its last saved iteration if it had finished)."""
    from ..cli import quiet_libraries
    from ..cotrain import run_cotraining

    quiet_libraries()
    data = setup.data(config)
    data["output_dir"] = str(Path(reporting.trial_dir(), "cotrain"))
    cfg = from_dict(CotrainConfig, data)
    reported: list[int] = []

    def on_iteration(iteration: int, records: list[dict[str, Any]]) -> None:
        reporting.report(cotrain_metrics(iteration, records, cfg.data.metric_split))
        reported.append(iteration)

    state = run_cotraining(cfg, on_iteration=on_iteration)
    if not reported:  # finished before the sweep was interrupted: report its final iteration again
        last = state.history[-1]["iteration"]
        reporting.report(cotrain_metrics(last, [h for h in state.history if h["iteration"] == last],
                                         cfg.data.metric_split))


# --------------------------------------------------------------------------------------------
# What the runner needs to know per job
# --------------------------------------------------------------------------------------------

def _bundle(cpus: float, gpus: float) -> dict[str, float]:
    return {k: v for k, v in (("CPU", cpus), ("GPU", gpus)) if v > 0}


def _check_finetune(cfg: FinetuneConfig) -> None:
    check(cfg.scaling.num_workers == 1, "scaling.num_workers", cfg.scaling.num_workers,
          "1 in a sweep: a trial fine-tunes in one process (xlt.train.local); sweeps scale by running trials "
          "side by side")


def _check_cotrain(cfg: CotrainConfig) -> None:
    check(cfg.data.eval_split == "dev", "data.eval_split", cfg.data.eval_split,
          "dev in a sweep, which selects on dev and never on test (search_spaces/cotrain.yaml sets it in "
          "sweep_only)")


@dataclass(frozen=True)
class JobSpec:
    """How the runner treats the trials of one job."""

    config_class: type
    trainable: Callable[..., None]
    time_attr: str  # ASHA's clock: what a trial reports once per rung step
    max_t: Callable[[Any], int]  # the clock's last value
    resources: Callable[[Any], Any]  # Tune's resources_per_trial
    footprint: Callable[[Any], dict[str, float]]  # what one running trial occupies, inside its reservation or not
    check: Callable[[Any], None]
    renames: Callable[[str], tuple[str, ...]]  # the exported best config's run name, from the sweep's

    def config(self, data: Mapping[str, Any]) -> Any:
        return from_dict(self.config_class, dict(data))


def _cotrain_resources(cfg: CotrainConfig) -> Any:
    from ray.tune import PlacementGroupFactory

    learners = [b for b in (_bundle(cfg.lm.num_cpus, cfg.lm.num_gpus), _bundle(cfg.emb.num_cpus, cfg.emb.num_gpus))
                if b]
    return PlacementGroupFactory([{}, *learners] if learners else [{"CPU": 1}])


def _cotrain_footprint(cfg: CotrainConfig) -> dict[str, float]:
    inf = cfg.inference
    return {"CPU": cfg.lm.num_cpus + cfg.emb.num_cpus + inf.num_actors * inf.num_cpus,
            "GPU": cfg.lm.num_gpus + cfg.emb.num_gpus + inf.num_actors * inf.num_gpus}


JOBS: dict[Job, JobSpec] = {
    "finetune": JobSpec(
        FinetuneConfig, finetune_trial, TRAIN_EPOCH, max_t=lambda cfg: cfg.optim.epochs,
        resources=lambda cfg: _bundle(cfg.scaling.cpus_per_worker, 1 if cfg.scaling.use_gpu else 0),
        footprint=lambda cfg: {"CPU": cfg.scaling.cpus_per_worker, "GPU": 1 if cfg.scaling.use_gpu else 0},
        check=_check_finetune, renames=lambda name: (f"output.name={name}-best",)),
    "cotrain": JobSpec(
        CotrainConfig, cotrain_trial, TRAIN_ITERATION, max_t=lambda cfg: cfg.iterations + 1,
        resources=_cotrain_resources, footprint=_cotrain_footprint, check=_check_cotrain,
        renames=lambda name: (f"output_dir=results/cotrain/{name}-best",)),
}


def max_concurrent(footprint: Mapping[str, float], cluster: Mapping[str, float]) -> int:
    """Trials that fit side by side in ``cluster`` (``ray.cluster_resources()``), at least one."""
    fits = [int(cluster.get(k, 0.0) // v) for k, v in footprint.items() if v > 0]
    return max(1, min(fits, default=1))


def with_data_dir(overrides: Sequence[str], root: Path | None) -> tuple[str, ...]:
    """``overrides`` plus the data root resolved on the driver, if any (trials may run where
    ``$XLT_DATA_DIR`` is not set; the exported config keeps what the user wrote)."""
    return (*overrides, f"data.data_dir={root}") if root is not None else tuple(overrides)

