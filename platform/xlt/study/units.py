"""One unit of a study as a Ray Tune trial, and the record it leaves.

A unit runs in ``<output>/runs/<unit>/`` (the job's ``output.dir``: a unit interrupted by a stopped
study continues from its latest checkpoint when the study runs again) and, once it has ended,
writes its record to ``<output>/units/<unit>.json``, whole, after everything else: a record is what
makes a unit finished. The record keeps, per arm (``xlt.study.spec``):

- ``dev``: accuracy on the source language's dev rows, where the run scored them (fine-tuning, co-training):
  what a choice among arms may read;
- ``acc`` and ``f1``: accuracy and macro-F1 per language of the scored split, and ``avg_target`` over
  the targets, computed from the predictions the run recorded for that split (a fine-tuning run's
  final checkpoint, a co-training learner's last fit; a baseline's own) and equal to what the run
  reported; ``classes_predicted`` of the ``classes`` (gold or predicted) among the target items;
- ``items``: whether each target-language item was predicted right, in item-id order, as a 0/1
  string, and ``items_digest``, a digest of the ids: the bootstrap pairs two arms item by item and
  only when they were scored on the same items;

and for the unit: its config mapping (what the study checks a finished unit against), its minutes
(of the trial that finished it), the CPU or GPU and the time it ended.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import placement
from ..config import from_dict
from ..eval.classification import macro_f1_by_language
from ..hardware import cpu_model, device_name
from ..metrics import AVG_TARGET
from ..resume import free_keys, under
from ..record import located, read_record as read_run_record
from ..storage import join, names, read_text, staged
from .spec import Study, Unit

ROWS = "seeded draws"  # how the study's rows are chosen (xlt.data.sample); imported units may say otherwise
RUNS, UNITS = "runs", "units"
# Records of units run before the study existed (another runner's), kept for the report: they name their
# source and rows, and are never taken for a unit of the study (a unit runs again on the study's rows).
IMPORTED = "imported"
FINETUNE_EVALS = "evals=[{type: classification, split: val}, {type: classification, split: test}]"  # no dev eval each epoch


def run_dir(output: str, unit: Unit) -> str:
    return join(output, RUNS, unit.name)


def record_path(output: str, unit_name: str) -> str:
    return join(output, UNITS, f"{unit_name}.json")


def read_unit_record(output: str, unit_name: str) -> dict[str, Any] | None:
    text = read_text(record_path(output, unit_name))
    return None if text is None else json.loads(text)


def imported_records(output: str) -> list[dict[str, Any]]:
    found = [read_text(join(output, IMPORTED, name)) for name in sorted(names(join(output, IMPORTED)))
             if name.endswith(".json")]
    return [json.loads(text) for text in found if text is not None]


def write_unit_record(output: str, unit_name: str, record: Mapping[str, Any], folder: str = UNITS) -> None:
    with staged(join(output, folder)) as local:
        tmp = local / f"{unit_name}.json.tmp"
        tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False), encoding="utf-8")
        tmp.replace(local / f"{unit_name}.json")  # whole, or not at all


def scored_arm(predictions: Mapping[str, Sequence], source: str) -> dict[str, Any]:
    """An arm's ``acc`` and ``items`` (module docstring) from one split's recorded predictions."""
    by_lang: dict[str, list[bool]] = {}
    items = []
    for row_id, lang, gold, predicted in zip(predictions["id"], predictions["lang"], predictions["label"],
                                             predictions["predicted"]):
        by_lang.setdefault(lang, []).append(gold == predicted)
        if lang != source:
            items.append((f"{lang}/{row_id}", gold == predicted))
    acc = {lang: sum(hits) / len(hits) for lang, hits in by_lang.items()}
    targets = [acc[lang] for lang in by_lang if lang != source]
    acc[AVG_TARGET] = sum(targets) / len(targets) if targets else float("nan")
    f1 = macro_f1_by_language(list(predictions["label"]), list(predictions["predicted"]), list(predictions["lang"]))
    f1 = {lang: f1[lang] for lang in by_lang}
    f1[AVG_TARGET] = float(np.mean([f1[lang] for lang in by_lang if lang != source])) if targets else float("nan")
    items.sort()
    predicted = {p for p, lang in zip(predictions["predicted"], predictions["lang"]) if lang != source}
    return {"acc": acc, "f1": f1, "source": source, "items": "".join("1" if hit else "0" for _, hit in items),
            "items_digest": hashlib.sha256("\n".join(i for i, _ in items).encode()).hexdigest()[:16],
            "classes_predicted": len(predicted), "classes": len(set(predictions["label"]) | predicted)}


def source_dev(predictions: Mapping[str, Sequence] | None, source: str) -> dict[str, float]:
    """``{"dev": accuracy, "dev_items": each row right or not, in id order}`` on the source language's rows of a
    run's dev predictions: what a choice among arms may read (the zero-shot protocol); empty where it has none."""
    if not predictions:
        return {}
    hits = sorted((row_id, gold == predicted) for row_id, gold, predicted, lang in zip(
        predictions["id"], predictions["label"], predictions["predicted"], predictions["lang"]) if lang == source)
    if not hits:
        return {}
    return {"dev": sum(hit for _, hit in hits) / len(hits), "dev_items": "".join("1" if hit else "0" for _, hit in hits)}


@dataclass(frozen=True)
class UnitSetup:
    """What every trial of a study run shares (shipped once with ``tune.with_parameters``)."""

    study: Study
    output: str
    extra: tuple[str, ...] = ()  # overrides of every unit the driver resolved (the data root)

    def unit(self, name: str) -> Unit:
        return next(u for u in self.study.units() if u.name == name)


def job_overrides(setup: UnitSetup, unit: Unit) -> list[str]:
    """What a unit of a job variant adds to its config: its directory, no step logging, and for
    fine-tuning the evaluation of dev and test once, after the last epoch."""
    extra = [*setup.extra, f"output.dir={run_dir(setup.output, unit)}"]
    if setup.study.job == "finetune":
        return [*extra, "optim.log_every_steps=0", FINETUNE_EVALS]
    return [*extra, "lm.optim.log_every_steps=0", "emb.optim.log_every_steps=0"]


def unit_config(setup: UnitSetup, unit: Unit) -> dict[str, Any]:
    """The config mapping a unit runs (a baseline's: the job's config, whose rows it reads)."""
    variant = setup.study.variant(unit.variant)
    if variant.recipe == "job":
        return setup.study.unit_data(unit, job_overrides(setup, unit))
    return setup.study.job_data(variant, setup.extra)


def run_unit(config: dict[str, Any], setup: UnitSetup) -> None:
    """Tune function trainable: run the unit ``config["unit"]`` and write its record; its last report
    is ``unit/avg_target`` (the first arm's)."""
    from ..logs import quiet_libraries
    from ..sweep import tune_session

    quiet_libraries()
    started = time.monotonic()
    unit = setup.unit(config["unit"])
    study, variant = setup.study, setup.study.variant(unit.variant)
    data = unit_config(setup, unit)
    if variant.recipe == "job":
        arms, settings = (finetune_arms if study.job == "finetune" else cotrain_arms)(data, unit, study)
    else:
        arms, settings = baseline_arm(data, unit, study)
    record = {"unit": unit.name, "variant": unit.variant, "seed": unit.seed, "arms": arms, **settings,
              "config": unit_identity(setup, unit), "rows": ROWS, "minutes": round((time.monotonic() - started) / 60, 2),
              "device": device_name("cuda" if _on_gpu(data) else "cpu"), "cpu": cpu_model(),
              "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
    write_unit_record(setup.output, unit.name, record)
    first = next(iter(arms.values()))
    tune_session.report({"unit/avg_target": first["acc"][AVG_TARGET], "unit/minutes": record["minutes"]})


def unit_identity(setup: UnitSetup, unit: Unit) -> dict[str, Any]:
    """What makes two runs the same unit: its recipe and its settings, and the job's config mapping without
    where it ran (its directory, the data root). A finished unit whose record says otherwise belongs to
    another study (``xlt.study.runner`` refuses it)."""
    variant = setup.study.variant(unit.variant)
    recipe = {"recipe": variant.recipe}
    if variant.recipe != "job":
        recipe["model"] = variant.model
    if variant.recipe == "setfit":
        # A setting at None (as the job) is left out: the identity of a unit recorded before the setting existed
        recipe["setfit"] = {k: v for k, v in dataclasses.asdict(variant.setfit).items() if v is not None}
    if variant.adapt.active:  # a plain probe's identity is what it was before adaptation existed
        recipe["adapt"] = dataclasses.asdict(variant.adapt)
    return {**recipe, "job": comparable(unit_config(setup, unit))}


def same_unit(recorded: Mapping[str, Any], now: Mapping[str, Any], config_class: type,
              reads: Sequence[str] | None = None) -> bool:
    """Whether a record's ``unit_identity`` is the unit's now. A job setting one side lacks counts as its
    default in ``config_class``: a setting added to xlt after the record was written, at its default,
    leaves the record the same unit (a preset that sets it to something else must set it back in the
    study's ``set``). A setting declared ``free`` (``xlt.resume``: what a run reports, where it runs) is not
    compared. ``reads``: the job settings the unit reads (a baseline's: ``recipes.ROWS_SETTINGS``),
    the only ones compared; ``None``: all."""
    a, b = _leaves(recorded), _leaves(now)
    free = free_keys(config_class)  # what a run reports or where it runs: the same unit either way
    for key in a.keys() | b.keys():
        setting = key.removeprefix("job.")
        if reads is not None and key.startswith("job.") and not any(
                setting == r or setting.startswith(r + ".") for r in reads):
            continue
        if key.startswith("job.") and under(setting, free):
            continue
        if a.get(key, _ABSENT) == b.get(key, _ABSENT):
            continue
        one_sided = (key in a) != (key in b)
        if not (one_sided and key.startswith("job.")
                and _json(default_setting(config_class, key.removeprefix("job."))) == a.get(key, b.get(key))):
            return False
    return True


_ABSENT = object()


def default_setting(config_class: type, dotted: str) -> Any:
    """The default of a setting (``optim.head_lr``) of ``config_class``; ``_ABSENT`` where it has none."""
    first, *rest = dotted.split(".")
    field = next((f for f in dataclasses.fields(config_class) if f.name == first), None)
    if field is None or (field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING):
        return _ABSENT
    value = field.default if field.default is not dataclasses.MISSING else field.default_factory()
    for name in rest:
        value = getattr(value, name, _ABSENT)
    return value


def _leaves(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            out |= _leaves(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def _json(value: Any) -> Any:
    return _ABSENT if value is _ABSENT else json.loads(json.dumps(value, default=str))


def comparable(data: Mapping[str, Any]) -> dict[str, Any]:
    """A unit's config mapping without where it ran (its directory, the data root): what makes two
    runs the same unit."""
    data = json.loads(json.dumps(data, default=str))
    for section in ("output", "data"):
        (data.get(section) or {}).pop("dir" if section == "output" else "data_dir", None)
    return data


def _on_gpu(data: Mapping[str, Any]) -> bool:
    scaling = [data.get("scaling") or {}, *((data.get(s) or {}).get("scaling") or {} for s in ("lm", "emb"))]
    return any(s.get("use_gpu") for s in scaling)


def finetune_arms(data: dict[str, Any], unit: Unit, study: Study) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fine-tune (Ray Train, or in the trial's process), each epoch's report forwarded to Tune; the
    final checkpoint's predictions of the scored split."""
    from ray.tune.integration.ray_train import TuneReportCallback

    from ..engine import run_dir
    from ..sweep.trainables import InProcessReports
    from ..train.config import FinetuneConfig
    from ..train.trainer import build_trainer

    cfg = from_dict(FinetuneConfig, data)
    trainer = build_trainer(cfg, callbacks=[TuneReportCallback() if cfg.scaling.num_workers else InProcessReports()])
    result = trainer.fit()
    recorded = recorded_predictions(run_dir(trainer.config), "predictions")  # also when a rerun found it complete
    resolved = trainer.config
    source = resolved.task.source_lang
    return ({unit.variant: {**scored_arm(recorded[study.split], source), **source_dev(recorded.get("val"), source)}},
            {"train_rows": resolved.data.train_rows, "epochs": resolved.optim.epochs,
             "trained_on": (result.metrics or {}).get(placement.key("train"))})


def cotrain_arms(data: dict[str, Any], unit: Unit, study: Study) -> tuple[dict[str, Any], dict[str, Any]]:
    """Co-train, each iteration reported to Tune; each arm's predictions of the scored split, as the run
    recorded them (``xlt.cotrain.classifier``: a learner's at its last iteration, the job's classifier's at
    the iteration it keeps, either at iteration 0 with ``@0``), with its target average after every iteration."""
    from ..cotrain import run_cotraining
    from ..cotrain.classifier import kept_iteration
    from ..cotrain.config import CotrainConfig
    from ..cotrain.record import predictions_key
    from ..metrics import ACC, metric_name
    from ..sweep.trainables import cotrain_metrics
    from ..sweep import tune_session

    cfg = from_dict(CotrainConfig, data)
    split = cfg.data.metric_split
    if split != study.split:
        raise ValueError(f"{study.source}: split {study.split!r}, but the co-training runs score {split!r} "
                         f"(data.eval_split: {cfg.data.eval_split})")

    def on_iteration(iteration: int, records: list[dict[str, Any]]) -> None:
        tune_session.report(cotrain_metrics(iteration, records, split))

    state = run_cotraining(cfg, on_iteration=on_iteration)
    arms = {}
    source = cfg.task.source_lang
    for arm in study.arms(study.variant(unit.variant)):
        learner, _, at = arm.split("/")[1].partition("@")
        history = [h for h in state.history if h["learner"] == learner]
        iteration = (int(at) if at else kept_iteration(state.history, cfg.classifier.keep, source)
                     if learner == "classifier" else history[-1]["iteration"])
        recorded = recorded_predictions(cfg.output.dir, predictions_key(iteration))[learner]
        arms[arm] = {**scored_arm(recorded[split], source), **source_dev(recorded.get("val"), source),
                     "labeled": history[iteration].get("train/rows"), "iteration": iteration}
        if not at:  # the learner's target average after every iteration, once (not again for its @0 arm)
            arms[arm]["iterations"] = [h[metric_name(split, ACC, AVG_TARGET)] for h in history]
    return arms, {}


def recorded_predictions(run: str, name: str) -> dict[str, Any]:
    """The rows' predictions a unit's run wrote where its record (``xlt.record``) says, under ``name``."""
    record = read_run_record(run)
    if name not in record["outputs"]:
        raise FileNotFoundError(f"{run}: its {record['job']} run's record names no {name!r} among its outputs "
                                f"({', '.join(record['outputs'])})")
    text = read_text(located(run, record["outputs"][name]))
    if text is None:
        raise FileNotFoundError(f"{located(run, record['outputs'][name])}, which {run}'s record names, does not exist")
    return json.loads(text)


def baseline_arm(data: dict[str, Any], unit: Unit, study: Study) -> tuple[dict[str, Any], dict[str, Any]]:
    """A baseline recipe (``xlt.study.recipes``) on the rows of the study's job config."""
    from ..models import EncoderConfig
    from ..eval.baselines import probe_predictions
    from .recipes import job_rows, setfit_predictions

    variant = study.variant(unit.variant)
    rows = job_rows(study.job, data, study.split)
    model = EncoderConfig(source=variant.model, max_length=rows.model.max_length) if variant.model else rows.model
    if variant.recipe == "probe":
        predictions, settings = probe_predictions(rows, model, variant.adapt)
    else:
        predictions, settings = setfit_predictions(rows, variant.setfit, unit.seed, model, variant.adapt)
    return {unit.variant: scored_arm(predictions, rows.task.source_lang)}, {**settings, "model": model.source}
