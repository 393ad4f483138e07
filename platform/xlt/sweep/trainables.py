"""Tune trainables: one fine-tuning run or one co-training run per trial, reporting as they go.

Fine-tuning (``finetune_trial``) sweeps what Wang et al. (2022) tune per task — τ and λ of each alignment
objective (§3.3, §5.2–5.3), the view counts t_f / t_p / t_c and the code-switching ratio r_c
(§4.1), the learning rate. A trial launches the Ray Train run of ``jobs/finetune.py`` on its
config (``xlt.train.build_trainer``: the engine, the same views streamed through Ray Data, as
many workers as ``scaling`` says) and passes Tune's ``TuneReportCallback`` (the Ray 2.60 Train V2
+ Tune pattern), so every epoch's report — dev metrics of every language, ``train/epoch`` —
reaches Tune and ASHA can stop the trial at a rung. The run lives in the trial's directory: a
trial restarted by a resumed sweep continues from its latest epoch checkpoint. Trials never
evaluate test (their ``evals`` keep only those of other splits).

Co-training (``cotrain_trial``) sweeps the confidence threshold t and the selection policy of
Yu & Joty 2021, §3.1 / §4.2: ``run_cotraining`` with ``on_iteration`` reporting each iteration. Its loop
state lives in the trial's directory, so a trial restarted by a resumed sweep continues at its
next iteration. The score of an iteration is the better learner's dev average (the learner one
would keep; each learner's metrics are reported too, as ``lm/…`` and ``emb/…``).

Resources (``JobSpec.resources``): a trial only drives Ray Train runs (one for fine-tuning, two
per co-training iteration), whose controllers (0 CPUs) Tune's placement group captures and whose
workers reserve their own placement groups (``scaling``), and Ray Data's pseudo-labelling
actors, which schedule with Ray Data's own strategy: the trial's own bundle is a token (Tune
needs a non-empty one), and ``JobSpec.footprint`` counts the workers and actors, to bound how
many trials run at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import check, from_dict
from ..cotrain.config import LEARNERS, CotrainConfig
from ..train.config import FinetuneConfig
from ..metrics import ACC, AVG_TARGET, TRAIN_EPOCH, metric_name
from ..storage import join
from . import tune_session
from .overrides import trial_data
from .space import Job, Param, active_values

TRAIN_ITERATION = metric_name("train", "iteration")  # co-training iterations completed (fits per learner)


def trial_dirname(trial_id: str) -> str:
    return f"trial_{trial_id}"  # Tune's default spells out the config: too long for dotted keys


def trial_run(directory: str, trial_id: str, job: str) -> str:
    """The run a trial of ``job`` (``finetune`` or ``cotrain``) keeps in the sweep ``directory``: its
    ``output.dir``, beside Tune's own files of the trial, so that a resumed sweep (a new Ray session)
    finds it again."""
    return join(directory, trial_dirname(trial_id), job)


@dataclass(frozen=True)
class TrialSetup:
    """What every trial of a sweep shares (shipped once with ``tune.with_parameters``): the job's
    base config mapping, the space's entries, the overrides of every trial (the space's
    ``sweep_only`` plus the data root the driver resolved) and the sweep's directory."""

    base: dict[str, Any]
    params: tuple[Param, ...]
    trial_overrides: tuple[str, ...] = ()
    directory: str = ""  # the sweep's directory: trials keep their own runs in it

    def trial_run(self, job: str) -> str:
        """Where the running trial keeps its run (``trial_run``)."""
        return trial_run(self.directory, tune_session.trial_id(), job)

    def data(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The config mapping of the trial Tune sampled ``config`` for."""
        return trial_data(self.base, active_values(self.params, config), self.trial_overrides)


# --------------------------------------------------------------------------------------------
# Fine-tuning
# --------------------------------------------------------------------------------------------

def finetune_trial(config: dict[str, Any], setup: TrialSetup) -> None:
    """Tune function trainable: the Ray Train run of the trial's ``FinetuneConfig``, in the trial
    directory, each epoch's report forwarded to Tune (by ``TuneReportCallback`` from the run's
    controller; in process, ``scaling.num_workers: 0``, by ``InProcessReports`` from this trial's
    own thread)."""
    from ray.tune.integration.ray_train import TuneReportCallback

    from ..logs import quiet_libraries
    from ..train.trainer import build_trainer

    quiet_libraries()
    data = setup.data(config)
    data["output"] = {**data.get("output", {}), "dir": setup.trial_run("finetune")}
    cfg = from_dict(FinetuneConfig, data)
    cfg = dataclasses.replace(cfg, evals=tuple(spec for spec in cfg.evals if spec.split != "test"))
    build_trainer(cfg, callbacks=[TuneReportCallback() if cfg.scaling.num_workers else InProcessReports()]).fit()


class InProcessReports:
    """The ``UserCallback`` hook of an in-process run (``xlt.engine.context``) that hands each report
    to Tune as the trial's own result, at once: ``TuneReportCallback`` queues it for the trial's
    main thread instead, and a run that ends right after its last report leaves that one queued."""

    def after_report(self, run_context: Any, metrics: Sequence[Mapping[str, Any]], checkpoint: Any) -> None:
        tune_session.report(dict(metrics[0]))


# --------------------------------------------------------------------------------------------
# Co-training
# --------------------------------------------------------------------------------------------

def cotrain_metrics(iteration: int, records: Sequence[Mapping[str, Any]], split: str) -> dict[str, Any]:
    """One Tune result per iteration from ``run_cotraining``'s per-learner records: each learner's
    numbers as ``<learner>/<name>``, and the ``<split>/…`` metrics of the learner with the better
    average target accuracy unprefixed (the score), with ``best_learner`` naming it."""
    avg = metric_name(split, ACC, AVG_TARGET)
    # The better learner (a run's learners are what a trial's checkpoints hold); the job's classifier is reported
    # beside them as classifier/<name>.
    best = max((r for r in records if r["learner"] in LEARNERS), key=lambda r: r[avg])
    out: dict[str, Any] = {TRAIN_ITERATION: iteration + 1, "best_learner": best["learner"]}
    for record in records:
        out.update({f"{record['learner']}/{k}": v for k, v in record.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "iteration"})
    out.update({k: v for k, v in best.items() if k.startswith(f"{split}/")})
    return out


def cotrain_trial(config: dict[str, Any], setup: TrialSetup) -> None:
    """Tune function trainable: co-train with the trial's ``CotrainConfig`` in the trial directory,
    reporting every iteration (a resumed trial reports its last saved iteration if it had finished)."""
    from ..logs import quiet_libraries
    from ..cotrain import run_cotraining

    quiet_libraries()
    data = setup.data(config)
    data["output"] = {**data.get("output", {}), "dir": setup.trial_run("cotrain")}
    cfg = from_dict(CotrainConfig, data)
    reported: list[int] = []

    def on_iteration(iteration: int, records: list[dict[str, Any]]) -> None:
        tune_session.report(cotrain_metrics(iteration, records, cfg.data.metric_split))
        reported.append(iteration)

    state = run_cotraining(cfg, on_iteration=on_iteration)
    if not reported:  # finished before the sweep was interrupted: report its final iteration again
        last = state.history[-1]["iteration"]
        tune_session.report(cotrain_metrics(last, [h for h in state.history if h["iteration"] == last],
                                         cfg.data.metric_split))


# --------------------------------------------------------------------------------------------
# What the runner needs to know per job
# --------------------------------------------------------------------------------------------

# The bundle of a trial that only drives a Ray Train run: Tune refuses an empty one, and CPUs here
# would be taken from the workers' placement group (one byte of memory reserves nothing real).
DRIVER_ONLY = {"memory": 1}


def trial_bundle(driver_share: Mapping[str, float]) -> dict[str, float]:
    """A trial's own bundle: what its in-process training takes (``ScalingSettings.driver_share``),
    else ``DRIVER_ONLY``."""
    return dict(driver_share) or DRIVER_ONLY


def _check_finetune(cfg: FinetuneConfig) -> None:
    check(cfg.scores_dev_every_epoch, "evals", [f"{e.type} of {e.split}" for e in cfg.evals],
          "a classification of val scored every epoch ({type: classification, split: val, every_epoch: true}, as "
          "the presets have it): a sweep selects on dev after every epoch")


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


JOBS: dict[Job, JobSpec] = {
    "finetune": JobSpec(
        FinetuneConfig, finetune_trial, TRAIN_EPOCH, max_t=lambda cfg: cfg.optim.epochs,
        resources=lambda cfg: trial_bundle(cfg.scaling.driver_share()),
        footprint=lambda cfg: cfg.scaling.footprint(),
        check=_check_finetune, renames=lambda name: (f"output.dir=results/finetune/{name}-best",)),
    "cotrain": JobSpec(
        CotrainConfig, cotrain_trial, TRAIN_ITERATION, max_t=lambda cfg: cfg.iterations + 1,
        resources=lambda cfg: trial_bundle(cfg.driver_share()), footprint=CotrainConfig.footprint,
        check=_check_cotrain,
        renames=lambda name: (f"output.dir=results/cotrain/{name}-best",)),
}


def max_concurrent(footprint: Mapping[str, float], cluster: Mapping[str, float]) -> int:
    """Trials that fit side by side in ``cluster`` (``ray.cluster_resources()``), at least one."""
    fits = [int(cluster.get(k, 0.0) // v) for k, v in footprint.items() if v > 0]
    return max(1, min(fits, default=1))


def with_data_dir(overrides: Sequence[str], root: Path | None) -> tuple[str, ...]:
    """``overrides`` plus the data root resolved on the driver, if any (trials may run where
    ``$XLT_DATA_DIR`` is not set; the exported config keeps what the user wrote)."""
    return (*overrides, f"data.data_dir={root}") if root is not None else tuple(overrides)

