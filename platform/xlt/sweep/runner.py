"""``tune.run`` with OptunaSearch behind a ConcurrencyLimiter (or Tune's random search) and ASHA.

Ray 2.60 still supports ``tune.run`` (``ray.tune.tune.run``, not deprecated; ``Tuner`` wraps
it), and it keeps resuming simple: the same ``name`` and ``storage_path`` with ``resume=True``
reloads the experiment state, the searcher state (Optuna's study, pickled with its define-by-run
space) and the trials; finished trials are kept, interrupted ones run again (see
``tune_session`` for why trials hold no Tune checkpoints). A sweep lives in
``<storage_path>/<name>/`` next to ``sweep.json`` (the space, the base config and the settings),
which a resumed sweep must match: Tune would silently keep the old searcher, sample count and
scheduler.

Choices:

- TPE (``optuna.samplers.TPESampler``, seeded) starts from ``startup_trials`` random trials,
  a third of the budget, between 2 and 10: Optuna's default of 10 would make a 12-trial sweep
  nearly random search.
- ASHA (``AsyncHyperBandScheduler``) on the job's own clock (``train/epoch``,
  ``train/iteration``), grace period 1, reduction factor 2: fine-tuning runs 2–5 epochs, so
  a factor of 4 would leave a single rung.
- Trials run side by side as far as their footprint fits the cluster (``max_concurrent``), or as
  set; the limit also keeps TPE from proposing the whole budget before any result is back.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..logs import tune_verbosity
from ..progress import trials_progress
from ..config import ConfigError
from ..data import resolve_data_dir
from ..data.paths import ENV_VAR
from ..extras import require
from ..storage import join, names, read_text, staged
from ..tasks import load_task
from .best import TrialRecord, reported_status
from .overrides import check_space, trial_data
from .space import Param, SearchSpace, Searcher, active_values, to_tune
from .trainables import JOBS, JobSpec, TrialSetup, max_concurrent, trial_dirname, with_data_dir

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

SWEEP_FILE = "sweep.json"
Scheduler = Literal["asha", "none"]


@dataclass(frozen=True)
class SweepSettings:
    """How to run a space: where (``<storage_path>/<name>``), how many trials (0: the space's
    ``num_samples``), with which searcher and scheduler, how many at once (0: as many as fit), and
    how often a failed trial runs again (a lost node fails the trials it held: Tune starts them
    again, and each continues its own run from the trial directory; see ``trainables``). Three,
    not one: a trial started again at once can land on the lost node before Ray has declared it
    dead (missed health checks: 15 s by Ray's defaults) and fail a second time
    (tests/cluster/test_study_nodes.py kills a node under two trials)."""

    name: str
    storage_path: str = "results/sweeps"
    num_samples: int = 0
    searcher: Searcher = "optuna"
    scheduler: Scheduler = "asha"
    max_concurrent: int = 0
    resume: bool = False
    max_failures: int = 3

    @property
    def directory(self) -> str:
        """``<storage_path>/<name>``: an absolute local path, or a URI."""
        return join(self.storage_path, self.name)


def startup_trials(num_samples: int) -> int:
    """Random trials before TPE models the results (see the module docstring)."""
    return min(10, max(2, num_samples // 3))


def build_search_alg(params: Sequence[Param], searcher: Searcher, *, metric: str, mode: str, seed: int, limit: int,
                     num_samples: int, source: str = "<space>") -> tuple[Any, dict[str, Any]]:
    """``(search_alg, config)`` for ``tune.run``: OptunaSearch (TPE) with the define-by-run space
    behind a ConcurrencyLimiter and an empty ``config`` (a searcher built with its space takes
    ``metric`` and ``mode`` only in its constructor); or Tune's random search over ``config``."""
    space = to_tune(params, searcher, source)
    if searcher == "random":
        from ray.tune.search import BasicVariantGenerator

        return BasicVariantGenerator(max_concurrent=limit, random_state=seed), space
    optuna = require("optuna", "the optuna searcher", "--searcher random runs without it")
    from ray.tune.search import ConcurrencyLimiter
    from ray.tune.search.optuna import OptunaSearch

    if not tune_verbosity():  # its "A new study created" line, with Tune's own, only with --verbose
        optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup_trials(num_samples))
    return ConcurrencyLimiter(OptunaSearch(space=space, metric=metric, mode=mode, sampler=sampler),
                              max_concurrent=limit), {}


def build_scheduler(kind: Scheduler, time_attr: str, max_t: int) -> Any:
    """ASHA on ``time_attr`` up to ``max_t`` (grace 1, factor 2), or FIFO (every trial to the end)."""
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    if kind == "none":
        return FIFOScheduler()
    if kind != "asha":
        raise ValueError(f"scheduler={kind!r} is not valid: expected asha or none")
    return ASHAScheduler(time_attr=time_attr, max_t=max_t, grace_period=1, reduction_factor=2)


def _identity(space: SearchSpace, base: Mapping[str, Any], settings: SweepSettings, num_samples: int) -> dict:
    """What a resumed sweep must match, JSON-normalised."""
    return json.loads(json.dumps({"space": asdict(space), "base": base, "num_samples": num_samples,
                                  "searcher": settings.searcher, "scheduler": settings.scheduler}, default=str))


def _guard(directory: str, identity: dict, resume: bool, claim: bool = True) -> None:
    found = names(directory)
    exists = any(fnmatch.fnmatch(name, "experiment_state-*.json") for name in found)
    if resume and not exists:
        raise FileNotFoundError(f"{directory} holds no sweep to resume (no Tune experiment state); "
                                "run without --resume to start it")
    if not resume and (exists or SWEEP_FILE in found):
        raise FileExistsError(f"{directory} already holds a sweep: pass --resume to continue it, or choose "
                              "another --name")
    saved_text = read_text(join(directory, SWEEP_FILE))
    if resume and saved_text is not None:
        saved = json.loads(saved_text)
        changed = sorted(k for k in identity if saved.get(k) != identity[k])
        if changed:
            raise ConfigError(f"{directory} was started with a different {', '.join(changed)}; a resumed sweep "
                              "continues the same one (Tune keeps its searcher, samples and scheduler)")
    if claim:
        with staged(directory) as local:
            (local / SWEEP_FILE).write_text(json.dumps(identity, indent=1), encoding="utf-8")


def _trial_dirname(trial: Trial) -> str:
    return trial_dirname(trial.trial_id)


def saved_statuses(directory: str) -> dict[str, str]:
    """Trial id -> status in the experiment state Tune saved last in ``directory`` (a path or URI):
    what a resumed sweep starts from."""
    from ray.tune import ExperimentAnalysis

    return {trial.trial_id: trial.status for trial in ExperimentAnalysis(directory).trials}


def to_record(index: int, trial: Trial, params: Sequence[Param], saved: str | None = None) -> TrialRecord:
    """Tune's ``index``-th trial (Tune lists trials in the order the searcher made them) as a
    ``TrialRecord``: its status (``reported_status`` of ``saved``, its status in the saved experiment
    state), active values, last result, the last line of its error if any."""
    error = None
    if trial.error_file and Path(trial.error_file).is_file():
        error = Path(trial.error_file).read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1]
    try:
        values = active_values(params, trial.config)
    except KeyError:  # a trial that failed before Tune gave it a full config
        values = {}
    return TrialRecord(index, trial.trial_id, reported_status(trial.status, saved), values,
                       dict(trial.last_result or {}), error)


@dataclass(frozen=True)
class Sweep:
    """A validated sweep whose directory is claimed (``prepare_sweep``); ``run`` needs a running Ray."""

    space: SearchSpace
    base: dict[str, Any]
    settings: SweepSettings
    config: Any  # the job's config of the preset with sweep_only: what resources and ASHA's max_t come from
    num_samples: int
    data_dir: Path | None

    @property
    def job(self) -> JobSpec:
        return JOBS[self.space.job]

    def run(self, callbacks: Sequence[Any] = ()) -> list[TrialRecord]:
        """Run (or resume) the sweep; returns one record per trial. ``callbacks``: Tune callbacks
        (experiment tracking: MLflow's logger; Tune adds its TensorBoard logger itself)."""
        import ray
        from ray import tune

        space, settings, job = self.space, self.settings, self.job
        limit = settings.max_concurrent or max_concurrent(job.footprint(self.config), ray.cluster_resources())
        search_alg, config = build_search_alg(space.params, settings.searcher, metric=space.metric, mode=space.mode,
                                              seed=space.seed, limit=limit, num_samples=self.num_samples,
                                              source=space.source)
        setup = TrialSetup(self.base, space.params, with_data_dir(space.sweep_only, self.data_dir),
                           settings.directory)
        analysis = tune.run(
            tune.with_parameters(job.trainable, setup=setup),
            name=settings.name,
            storage_path=settings.directory.rsplit("/", 1)[0],
            metric=space.metric,
            mode=space.mode,
            config=config,
            resources_per_trial=job.resources(self.config),
            num_samples=self.num_samples,
            search_alg=search_alg,
            scheduler=build_scheduler(settings.scheduler, job.time_attr, job.max_t(self.config)),
            resume=True if settings.resume else None,
            raise_on_failed_trial=False,
            max_failures=settings.max_failures,
            trial_dirname_creator=_trial_dirname,
            callbacks=[*callbacks, trials_progress(self.num_samples, "trial")],
            verbose=tune_verbosity(),
        )
        saved = saved_statuses(settings.directory)
        return [to_record(i, trial, space.params, saved.get(trial.trial_id)) for i, trial in enumerate(analysis.trials)]


def prepare_sweep(space: SearchSpace, base: Mapping[str, Any], settings: SweepSettings, claim: bool = True) -> Sweep:
    """Everything that can fail before Ray starts: the preset, every entry against it, the task's
    data, and the sweep directory (new, or the same sweep when resuming; see the module docstring), which it
    claims unless ``claim`` is false (a dry run writes nothing)."""
    job = JOBS[space.job]
    cfg = job.config(trial_data(base, {}, space.sweep_only))
    job.check(cfg)
    check_space(space, base, job.config)
    data_dir = resolve_data_dir(cfg.data.data_dir) if cfg.data.data_dir or os.environ.get(ENV_VAR) else None
    task = load_task(cfg.task, data_dir)
    task.check({"train": [task.source_lang], "dev": task.langs})  # a sweep selects on dev
    num_samples = settings.num_samples or space.num_samples
    _guard(settings.directory, _identity(space, base, settings, num_samples), settings.resume, claim)
    return Sweep(space, dict(base), settings, cfg, num_samples, data_dir)
