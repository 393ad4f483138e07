"""A study file: recipes compared over seeds, and the differences to measure between them.

    title: "CE vs CE + SCL on NusaX"
    job: finetune                          # the job of every recipe variant (finetune or cotrain)
    preset: ../configs/finetune_nusax.yaml # relative to this file
    set: [data.max_examples=100]           # overrides of every unit
    seeds: [0, 1, 2]
    split: test                            # the split scored (co-training: its data.metric_split)
    arms: [classifier, lm, classifier@0]   # co-training only: what each unit scores (COTRAIN_ARMS; default: lm, emb)
    output: results/studies/nusax-scl      # default: results/studies/<file stem>; local or s3://
    notes: |                               # optional: what was run, for the report's reader (Markdown)
      - NusaX sentiment, 100 English training reviews ...
    reading: ../benchmarks/fidelity/scl-nusax.md   # optional: written by hand, appended to the report
    variants:
      ce: {label: CE}                                   # the preset as it is
      scl: {label: CE+SCL, set: ["objectives=[...]"]}   # a list of --set overrides
      probe: {recipe: probe}                            # a baseline: the frozen-linear probe of the preset's model
      probe-use: {recipe: probe, model: bundled:use-multilingual-v3}
      adapted: {recipe: probe, adapt: {center: true, rounds: 3}}   # adapted to the target pools (xlt.eval.adaptation)
      setfit: {recipe: setfit, setfit: {num_iterations: 20}}
    comparisons:
      - {a: scl, b: ce, paper: "+4.1 (79.6 vs 75.5 avg)", source: wang2022}
      - {a: scl, b: probe, picked_on: test}   # an arm chosen by its test score: the report says so
    choose: {by: dev, among: [ce, scl]}        # the arm the source language's dev chooses, simplest first

A **unit** is one variant at one seed (``Unit``): one run of the job with the study's and the
variant's overrides, seeded by ``SEED_KEYS``, or one run of a baseline recipe (``xlt.study.recipes``)
on the rows the job's config draws. A probe is deterministic, so it runs at the first seed only.
What a unit scores is an **arm**: the variant itself, or for a co-training variant what its run left
(``<variant>/lm``, ``<variant>/emb``, ``<variant>/classifier``, each also ``@0``: at iteration 0), which
comparisons name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..config import ConfigError, apply_overrides, from_dict, merge_presets, read_yaml
from ..eval.adaptation import ProbeAdaptation

Job = Literal["finetune", "cotrain"]
Recipe = Literal["job", "probe", "setfit"]
RECIPES: tuple[str, ...] = ("job", "probe", "setfit")
LEARNERS = ("lm", "emb")  # a co-training run's learners (xlt.cotrain.learner.LEARNERS)
CLASSIFIER_ARM = "classifier"  # the job's classifier (xlt.cotrain.classifier.CLASSIFIER)
# What a co-training unit may score (``arms:``; default: the learners): each learner and the job's classifier as
# the run left them (the classifier at the iteration it keeps), or at iteration 0 (``@0``: before any exchange).
COTRAIN_ARMS = tuple(f"{name}{at}" for at in ("", "@0") for name in (*LEARNERS, CLASSIFIER_ARM))

# How a unit's seed reaches each job: every source of randomness its runs draw from.
SEED_KEYS: dict[str, tuple[str, ...]] = {
    "finetune": ("optim.seed",),
    "cotrain": ("selection.seed", "lm.optim.seed", "emb.optim.seed"),
}
AUGMENT_SEED = "data.augment.seed"  # fine-tuning with views: the views drawn per seed too
TOP_LEVEL_KEYS = ("title", "job", "preset", "set", "seeds", "split", "output", "notes", "reading", "variants",
                  "comparisons", "arms", "choose")
VARIANT_KEYS = ("label", "set", "recipe", "model", "setfit", "adapt")
COMPARISON_KEYS = ("a", "b", "paper", "source", "picked_on")


@dataclass(frozen=True)
class SetFitSettings:
    """SetFit (Tunstall et al. 2022) as the ``setfit`` package runs it: contrastive fine-tuning of the
    body on ``num_iterations`` positive and negative pairs per training example for ``num_epochs``,
    then a logistic-regression head on the tuned embeddings. The package's defaults (20 pairs a
    row, one epoch, batch 16), at the body's own maximum length and prefix."""

    num_iterations: int = 20
    num_epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 2e-5
    # The body's word embeddings frozen as the job freezes them (None: the job's optim.freeze_word_embeddings),
    # or set here: false trains every weight, as the setfit package does.
    freeze_word_embeddings: bool | None = None


@dataclass(frozen=True)
class Variant:
    name: str
    label: str
    set: tuple[str, ...] = ()
    recipe: Recipe = "job"
    model: str | None = None  # probe / setfit: the encoder source (default: the preset's model)
    setfit: SetFitSettings = field(default_factory=SetFitSettings)
    # probe, setfit: the head adapted to the target pools (xlt.eval.adaptation)
    adapt: ProbeAdaptation = field(default_factory=ProbeAdaptation)

    @property
    def seeded(self) -> bool:
        """Whether the variant's result depends on the seed (the probe's does not: one run)."""
        return self.recipe != "probe"


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    paper: str = ""
    source: str = ""
    picked_on: str = ""  # "test": an arm was chosen by its test score, which the report says beside the difference


@dataclass(frozen=True)
class Choice:
    """``choose: {by: dev, among: [arms]}``: the arm the source language's dev chooses among ``among``, listed
    simplest first (``xlt.study.report.chosen``)."""

    among: tuple[str, ...]
    by: str = "dev"


@dataclass(frozen=True)
class Unit:
    variant: str
    seed: int

    @property
    def name(self) -> str:
        return f"{self.variant}-seed{self.seed}"


@dataclass(frozen=True)
class Study:
    source: str  # the study file
    title: str
    job: Job
    preset: str  # resolved path
    set: tuple[str, ...]
    seeds: tuple[int, ...]
    split: str
    output: str
    variants: tuple[Variant, ...]
    comparisons: tuple[Comparison, ...] = ()
    reading: str | None = None  # resolved path
    notes: str = ""
    cotrain_arms: tuple[str, ...] = LEARNERS  # a co-training unit's arms (COTRAIN_ARMS)
    choose: Choice | None = None

    @property
    def name(self) -> str:
        return Path(self.source).stem

    def variant(self, name: str) -> Variant:
        return next(v for v in self.variants if v.name == name)

    def units(self) -> list[Unit]:
        """Every (variant, seed) the study runs, variant by variant."""
        return [Unit(v.name, seed) for v in self.variants for seed in (self.seeds if v.seeded else self.seeds[:1])]

    def arms(self, variant: Variant) -> list[str]:
        """What a unit of ``variant`` scores: itself, or what a co-training run left (``cotrain_arms``)."""
        if variant.recipe == "job" and self.job == "cotrain":
            return [f"{variant.name}/{arm}" for arm in self.cotrain_arms]
        return [variant.name]

    def all_arms(self) -> list[str]:
        return [arm for v in self.variants for arm in self.arms(v)]

    def label(self, arm: str) -> str:
        variant, _, learner = arm.partition("/")
        label = self.variant(variant).label
        if not learner:
            return label
        name, _, iteration = learner.partition("@")
        what = "the job's classifier" if name == CLASSIFIER_ARM else f"{name.upper()} learner"
        return f"{label} ({what}{f', iteration {iteration}' if iteration else ''})"

    def job_data(self, variant: Variant, extra: Sequence[str] = ()) -> dict[str, Any]:
        """The job's config mapping of ``variant``: the preset, the study's overrides, the variant's,
        then ``extra`` (a unit's seed and directory)."""
        return apply_overrides(merge_presets(self.preset), [*self.set, *variant.set, *extra])

    def unit_data(self, unit: Unit, extra: Sequence[str] = ()) -> dict[str, Any]:
        """The job's config mapping of ``unit``: its variant's, seeded by ``SEED_KEYS``."""
        seeds = [f"{key}={unit.seed}" for key in SEED_KEYS[self.job]]
        data = self.job_data(self.variant(unit.variant), [*seeds, *extra])
        if self.job == "finetune" and (data.get("data") or {}).get("augment"):  # its draws are seeded too
            data = apply_overrides(data, [f"{AUGMENT_SEED}={unit.seed}"])
        return data


def _fail(source: str, where: str, message: str) -> ConfigError:
    return ConfigError(f"{source}: {where}: {message}")


def _strings(source: str, where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(source, where, f"expected a list of key=value strings, got {value!r}")
    return tuple(value)


def _variant(source: str, name: str, spec: Any) -> Variant:
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise _fail(source, f"variants.{name}", f"expected a mapping of {', '.join(VARIANT_KEYS)}, got {spec!r}")
    unknown = sorted(set(spec) - set(VARIANT_KEYS))
    if unknown:
        raise _fail(source, f"variants.{name}", f"unknown key(s) {unknown}; expected {', '.join(VARIANT_KEYS)}")
    recipe = spec.get("recipe", "job")
    if recipe not in RECIPES:
        raise _fail(source, f"variants.{name}.recipe", f"{recipe!r} is not a recipe; expected one of {', '.join(RECIPES)}")
    if "model" in spec and recipe == "job":
        raise _fail(source, f"variants.{name}.model", "only a baseline recipe (probe, setfit) takes a model; "
                                                      "a job variant sets model.source in its set")
    if "setfit" in spec and recipe != "setfit":
        raise _fail(source, f"variants.{name}.setfit", "settings of the setfit recipe only")
    if "adapt" in spec and recipe == "job":
        raise _fail(source, f"variants.{name}.adapt", "settings of a baseline recipe's head (probe, setfit) only")
    settings = {}
    for key, kind in (("setfit", SetFitSettings), ("adapt", ProbeAdaptation)):
        try:
            settings[key] = from_dict(kind, spec.get(key) or {}, f"variants.{name}.{key}.")
        except ConfigError as e:
            raise _fail(source, f"variants.{name}.{key}", str(e)) from e
    return Variant(name, str(spec.get("label", name)), _strings(source, f"variants.{name}.set", spec.get("set")),
                   recipe, spec.get("model"), **settings)


def load_study(path: str | Path) -> Study:
    """Read and check a study file (module docstring); paths in it are relative to the file."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise FileNotFoundError(f"{source}: no such study file (see studies/)")
    raw = read_yaml(path)
    unknown = sorted(set(raw) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise _fail(source, "top level", f"unknown key(s) {unknown}; expected {', '.join(TOP_LEVEL_KEYS)}")
    for key in ("job", "preset", "variants"):
        if key not in raw:
            raise _fail(source, key, "required")
    if raw["job"] not in SEED_KEYS:
        raise _fail(source, "job", f"{raw['job']!r}: expected one of {', '.join(SEED_KEYS)}")
    preset = (path.parent / raw["preset"]).resolve()
    if not preset.is_file():
        raise _fail(source, "preset", f"{raw['preset']!r} is not a file (resolved to {preset})")
    seeds = raw.get("seeds", [0, 1, 2])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds) \
            or len(set(seeds)) != len(seeds):
        raise _fail(source, "seeds", f"expected a list of distinct integers, got {seeds!r}")
    if not isinstance(raw["variants"], Mapping) or not raw["variants"]:
        raise _fail(source, "variants", "expected a mapping of variant names to their settings")
    variants = tuple(_variant(source, str(name), spec) for name, spec in raw["variants"].items())
    reading = (path.parent / raw["reading"]).resolve() if raw.get("reading") else None
    if reading is not None and not reading.is_file():
        raise _fail(source, "reading", f"{raw['reading']!r} is not a file (resolved to {reading})")
    cotrain_arms = tuple(raw.get("arms") or LEARNERS)
    if raw.get("arms") is not None and (raw["job"] != "cotrain" or not set(cotrain_arms) <= set(COTRAIN_ARMS)):
        raise _fail(source, "arms", f"{raw['arms']!r}: a co-training study's arms are some of {', '.join(COTRAIN_ARMS)}")
    study = Study(source, str(raw.get("title", path.stem)), raw["job"], str(preset),
                  _strings(source, "set", raw.get("set")), tuple(seeds), str(raw.get("split", "test")),
                  str(raw.get("output") or f"results/studies/{path.stem}"), variants, (), str(reading) if reading else None,
                  str(raw.get("notes") or "").strip(), cotrain_arms)
    arms = study.all_arms()
    comparisons = []
    for i, spec in enumerate(raw.get("comparisons") or []):
        if not isinstance(spec, Mapping) or not {"a", "b"} <= set(spec) or set(spec) - set(COMPARISON_KEYS):
            raise _fail(source, f"comparisons[{i}]", f"expected a mapping of {', '.join(COMPARISON_KEYS)} "
                                                     f"(a and b required), got {spec!r}")
        for side in ("a", "b"):
            if spec[side] not in arms:
                raise _fail(source, f"comparisons[{i}].{side}", f"{spec[side]!r} is not one of the study's arms "
                                                                f"({', '.join(arms)})")
        if spec.get("picked_on", "") not in ("", "dev", "test"):
            raise _fail(source, f"comparisons[{i}].picked_on", f"{spec['picked_on']!r}: dev or test")
        comparisons.append(Comparison(spec["a"], spec["b"], str(spec.get("paper", "")), str(spec.get("source", "")),
                                      str(spec.get("picked_on", ""))))
    choose = raw.get("choose")
    if choose is not None:
        # "by", not "on": YAML reads an unquoted on as true
        if not isinstance(choose, Mapping) or set(choose) - {"by", "among"} or choose.get("by", "dev") != "dev" \
                or not isinstance(choose.get("among"), list) or len(choose["among"]) < 2:
            raise _fail(source, "choose", f"expected {{by: dev, among: [two or more arms, simplest first]}}, got "
                                          f"{choose!r} (a choice reads the source language's dev, never test)")
        unknown = [arm for arm in choose["among"] if arm not in arms]
        if unknown:
            raise _fail(source, "choose.among", f"{unknown} are not arms of the study ({', '.join(arms)})")
        choose = Choice(tuple(choose["among"]))
    return Study(**{**study.__dict__, "comparisons": tuple(comparisons), "choose": choose})
