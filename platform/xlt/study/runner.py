"""Run a study's unfinished units as the trials of one Ray Tune run, as a sweep runs its trials.

Each invocation of a study runs the units that have no record yet (``xlt.study.units``): all of them
the first time; after a stopped study, those it had not finished (each continues its run from its
latest checkpoint); after a failed unit, that one again (its error is in the invocation's entry of
``<output>/study.json`` and in the report until it succeeds). Adding seeds or variants to the file
and running it again runs only what was added. A finished unit whose recorded config differs from
what the study file now asks for is refused: it belongs to another study (another ``output``).

The trials: a grid over the units' names (Tune's ``BasicVariantGenerator``), each with its own job's
resources (``xlt.sweep.trainables``: a token bundle for a run that trains on Ray Train workers, the
run's own CPUs when it trains in the trial's process, and a baseline's encoder in the trial's
process), as many at once as the largest footprint fits in the cluster (one after another on a
2-core machine, side by side on a cluster), each a child MLflow run of the study's run. Tune's own
files go to ``<output>/tune/run-<n>``: an invocation is a new Tune run, since a unit's state lives
in its run directory, not in Tune's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..logs import tune_verbosity
from ..progress import trials_progress
from ..config import ConfigError
from ..data import resolve_data_dir
from ..data.paths import ENV_VAR
from ..storage import join, read_text, staged
from ..sweep.runner import to_record
from ..sweep.trainables import JOBS, max_concurrent
from ..tasks import load_task
from .spec import Unit
from .recipes import ROWS_SETTINGS
from .units import UnitSetup, imported_records, read_unit_record, run_unit, same_unit, unit_config, unit_identity

STUDY_FILE = "study.json"  # the invocations of the study: when, which units, which failed


@dataclass(frozen=True)
class Planned:
    unit: Unit
    record: dict[str, Any] | None  # finished: its record
    failed: str | None = None  # the last invocation's error of an unfinished unit
    estimate: float | None = None  # minutes: its variant's finished units', else all finished units'
    selected: bool = True  # False: left out of this invocation by --only / --seeds
    stopped: bool = False  # the last invocation was stopped while this unit ran or waited


@dataclass
class Plan:
    units: list[Planned] = field(default_factory=list)

    def select(self, variants: Sequence[str] | None = None, seeds: Sequence[int] | None = None) -> Plan:
        """This plan with only these variants' and seeds' unfinished units to run this time."""
        return Plan([dataclasses.replace(p, selected=(not variants or p.unit.variant in variants)
                                         and (seeds is None or p.unit.seed in seeds)) for p in self.units])

    @property
    def pending(self) -> list[Unit]:
        return [p.unit for p in self.units if p.record is None and p.selected]

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for p in self.units:
            status = ("finished" if p.record else "not this time (--only / --seeds)" if not p.selected
                      else "failed last time: runs again" if p.failed
                      else "stopped last time: continues" if p.stopped else "to run")
            minutes = p.record["minutes"] if p.record else p.estimate
            rows.append({"unit": p.unit.name, "status": status,
                         "minutes": "unknown" if minutes is None else (f"{minutes:.1f}" if p.record else f"~{minutes:.1f}")})
        return rows

    def estimate_line(self) -> str:
        todo = [p for p in self.units if p.record is None and p.selected]
        if todo:
            return _estimate(todo, "to run")
        rest = [p for p in self.units if p.record is None]
        if rest:  # what --only / --seeds left out
            return f"nothing selected is left to run; the rest of the study: {_estimate(rest, 'unfinished')}"
        return "every unit has finished: the report is rebuilt from their records"


def _estimate(units: list[Planned], what: str) -> str:
    known = [p.estimate for p in units if p.estimate is not None]
    counted = f"{len(units)} unit{'s' if len(units) > 1 else ''} {what}"
    if not known:
        return f"{counted}; no finished unit yet to estimate their minutes from"
    unknown = len(units) - len(known)
    return (f"{counted}: about {sum(known):.1f} minutes of units, one after another"
            + (f" (and {unknown} with no estimate)" if unknown else "")
            + " (from the minutes of the finished units of each variant, else of all; imported ones where none"
            " ran here)")


def history(output: str) -> list[dict[str, Any]]:
    text = read_text(join(output, STUDY_FILE))
    return json.loads(text)["invocations"] if text else []


def save_history(output: str, invocations: list[dict[str, Any]]) -> None:
    with staged(output) as local:
        tmp = local / f"{STUDY_FILE}.tmp"
        tmp.write_text(json.dumps({"invocations": invocations}, indent=1), encoding="utf-8")
        tmp.replace(local / STUDY_FILE)


def plan(setup: UnitSetup) -> Plan:
    """Each unit of the study: finished (its record, checked against the study), or to run, with the
    last invocation's error if it failed there and an estimate of its minutes."""
    study, output = setup.study, setup.output
    runs = history(output)
    failed = runs[-1].get("failed", {}) if runs else {}
    stopped = set(runs[-1].get("stopped", [])) if runs else set()
    records = {u.name: read_unit_record(output, u.name) for u in study.units()}
    for unit in study.units():
        record = records[unit.name]
        reads = None if study.variant(unit.variant).recipe == "job" else ROWS_SETTINGS[study.job]
        if record is not None and not same_unit(record.get("config") or {}, unit_identity(setup, unit),
                                                JOBS[study.job].config_class, reads):
            raise ConfigError(f"{output}/units/{unit.name}.json was run with another config than {study.source} "
                              f"now gives variant {unit.variant!r}; give the study another output, or remove the "
                              "unit's record to run it again")
    minutes: dict[str, list[float]] = {}
    # A study's own units time its estimate; imported ones (run elsewhere) only where none finished here.
    for r in [r for r in records.values() if r is not None] or imported_records(output):
        if r.get("minutes") is not None:
            minutes.setdefault(r["variant"], []).append(r["minutes"])
    everything = [m for ms in minutes.values() for m in ms]

    def estimate(variant: str) -> float | None:
        found = minutes.get(variant) or everything
        return sum(found) / len(found) if found else None

    return Plan([Planned(u, records[u.name], failed.get(u.name), estimate(u.variant), stopped=u.name in stopped)
                 for u in study.units()])


def check_units(setup: UnitSetup) -> None:
    """Build every unit's config and read its task's data now, on the driver, so that a typo or a
    missing file fails before Ray starts (naming the variant)."""
    study = setup.study
    checked_tasks = set()
    for unit in study.units():
        variant = study.variant(unit.variant)
        try:
            data, cfg = _config(setup, unit)
        except ConfigError as e:
            raise ConfigError(f"{study.source}: variants.{unit.variant}: {e}") from e
        if study.job == "cotrain" and variant.recipe == "job" and cfg.data.metric_split != study.split:
            raise ConfigError(f"{study.source}: split: {study.split!r}, but the co-training runs of variant "
                              f"{unit.variant!r} score {cfg.data.metric_split!r} (data.eval_split: {cfg.data.eval_split})")
        key = json.dumps(data.get("task"), sort_keys=True, default=str)
        if key not in checked_tasks:
            task = load_task(cfg.task, cfg.data.data_dir)
            task.check({"train": [task.source_lang], "test" if study.split == "test" else "dev": task.langs})
            checked_tasks.add(key)


def data_overrides() -> tuple[str, ...]:
    """The data root resolved on the driver, for trials that run where ``$XLT_DATA_DIR`` is not set."""
    return (f"data.data_dir={resolve_data_dir(None)}",) if os.environ.get(ENV_VAR) else ()


def footprint(setup: UnitSetup, unit: Unit) -> tuple[dict[str, float], dict[str, float]]:
    """(the trial's own bundle, what the running unit occupies) of ``unit``."""
    _, cfg = _config(setup, unit)
    job = JOBS[setup.study.job]
    if setup.study.variant(unit.variant).recipe != "job":  # a baseline encodes and fits in the trial's own process
        own = {"CPU": max(1.0, float(job.footprint(cfg).get("CPU", 1.0)))}
        return own, own
    return job.resources(cfg), job.footprint(cfg)


def _config(setup: UnitSetup, unit: Unit) -> tuple[dict[str, Any], Any]:
    """A unit's config mapping and the typed config built from it (a baseline's: the job's, whose rows it reads)."""
    data = unit_config(setup, unit)
    return data, JOBS[setup.study.job].config(data)


def run_units(setup: UnitSetup, units: Sequence[Unit], *, callbacks: Sequence[Any] = (), max_failures: int = 3,
              limit: int = 0) -> dict[str, str | None]:
    """Run ``units`` as the trials of one Tune run (module docstring); returns each unit's error, or
    ``None`` if it finished. ``limit``: units at once (0: as many as the largest footprint fits)."""
    import ray
    from ray import tune
    from ray.tune.search import BasicVariantGenerator

    names = [u.name for u in units]
    shapes = {u.name: footprint(setup, u) for u in units}
    cluster = ray.cluster_resources()
    limit = limit or min(max_concurrent(occupied, cluster) for _, occupied in shapes.values())
    invocations = history(setup.output)
    entry = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "units": names, "failed": {}}
    save_history(setup.output, [*invocations, entry])
    trainable = tune.with_resources(tune.with_parameters(run_unit, setup=setup),
                                    resources=lambda config: _bundle(shapes[config["unit"]][0]))
    analysis = tune.run(
        trainable, name=f"run-{len(invocations) + 1}", storage_path=join(setup.output, "tune"),
        config={"unit": tune.grid_search(names)}, search_alg=BasicVariantGenerator(max_concurrent=limit),
        num_samples=1, raise_on_failed_trial=False, max_failures=max_failures,
        trial_dirname_creator=lambda trial: f"trial_{trial.config['unit']}",
        callbacks=[*callbacks, trials_progress(len(names), "unit")], verbose=tune_verbosity())
    errors: dict[str, str | None] = {}
    stopped = []
    for i, trial in enumerate(analysis.trials):
        record = to_record(i, trial, ())
        name = trial.config["unit"]
        if read_unit_record(setup.output, name) is not None:
            errors[name] = None
        elif record.error or record.status == "ERROR":
            errors[name] = record.error or "failed (no error file)"
        else:  # the study was stopped before this unit ended: not a failure of the unit
            errors[name] = f"stopped before it finished ({record.status})"
            stopped.append(name)
    entry["failed"] = {name: error for name, error in errors.items() if error and name not in stopped}
    entry["stopped"] = stopped
    entry["ended"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    save_history(setup.output, [*invocations, entry])
    return errors


def _bundle(resources: dict[str, float]):
    from ray.tune import PlacementGroupFactory

    return PlacementGroupFactory([resources])


def local_output(output: str) -> str:
    """``output`` as the trials see it: an absolute path (trials run in their own directories), or a URI."""
    return output if "://" in output else str(Path(output).resolve())
