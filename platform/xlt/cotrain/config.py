"""``CotrainConfig``: one co-training (or self-training) run, as frozen, validated dataclasses.

Built from YAML + ``--set`` overrides by ``load_cotrain_config``, like ``FinetuneConfig``.
Offline presets (``configs/cotrain_<task>.yaml``): the LM learner is the bundled
multilingual-e5-small, fine-tuned (word embeddings frozen); the embedding learner is the bundled
USE-m3, frozen, with a trained head. Cluster preset (``configs/cotrain_cluster.yaml``):
``hf:xlm-roberta-base`` and ``hf:sentence-transformers/LaBSE``, as in Yu & Joty (2021).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal

from ..config import check, load_config
from ..losses import ObjectiveConfig
from ..eval.adaptation import ProbeAdaptation
from ..models import EncoderConfig
from ..tasks import TaskConfig
from ..train.config import FinetuneOptim
from ..engine import ScalingSettings, resolve_auto
from ..inference import InferenceSettings
from ..storage import OutputSettings
from .classifier import ClassifierSettings
from .selection import POLICIES
from ..resume import fixed, free, length, refitted

Mode = Literal["cotrain", "self-train"]
LEARNERS: tuple[str, str] = ("lm", "emb")  # Yu & Joty (2021)'s f^lm and f^emb


@dataclass(frozen=True)
class ProbeSettings:
    """A probe learner's regression (module docstring): each language centred on its mean or not, the C
    values dev chooses among, the solver's iterations."""

    center: bool = True
    c_values: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0)
    max_iter: int = 2000

    def __post_init__(self) -> None:
        check(len(self.c_values) >= 1 and all(c > 0 for c in self.c_values), "probe.c_values", self.c_values,
              "a list of positive numbers")
        check(self.max_iter >= 1, "probe.max_iter", self.max_iter, "an integer >= 1")


@dataclass(frozen=True)
class LearnerConfig:
    """One learner: an encoder + linear head fine-tuned with CE (+ objectives) on its labelled set.

    ``optim.epochs`` is K, the epochs of every (re-)fit. One Ray Train run of the engine serves
    every fit of the learner (``xlt.engine.fits``) with ``scaling`` (workers, CPUs and torch threads
    per worker, GPUs, restarts); ``scaling.num_workers: 0`` fits it in the job's own process.
    """

    model: EncoderConfig = fixed(factory=EncoderConfig)
    objectives: tuple[ObjectiveConfig, ...] = fixed(())
    optim: FinetuneOptim = field(default_factory=FinetuneOptim)
    scaling: ScalingSettings = field(default_factory=ScalingSettings)
    # fine-tune: the encoder and a head (above); probe: the frozen encoder, centred per language, under a
    # logistic regression fitted in the driver (xlt.cotrain.probe; optim, objectives and scaling unused).
    kind: Literal["finetune", "probe"] = fixed("finetune")
    probe: ProbeSettings = fixed(factory=ProbeSettings)

    def __post_init__(self) -> None:
        check(self.kind in ("finetune", "probe"), "kind", self.kind, "finetune or probe")
        check(self.optim.keep == "last", "optim.keep", self.optim.keep,
              "last: a learner's fit ends at its last epoch; the job's classifier keeps its best iteration on dev "
              "with classifier.keep: best-dev")
        object.__setattr__(self, "optim", resolve_auto(self.optim, self.scaling))

    def footprint(self) -> dict[str, float]:
        """What the learner holds for the job: its worker group (none for a probe, fitted in the driver)."""
        return {} if self.kind == "probe" else self.scaling.footprint()

    def driver_share(self) -> dict[str, float]:
        return {} if self.kind == "probe" else self.scaling.driver_share()


@dataclass(frozen=True)
class SelectionSettings:
    """Yu & Joty 2021, §4.2: confidence > ``threshold``, at most ``size`` rows per learner and iteration
    (0 = n/3 of the labelled data), drawn by ``policy`` (``xlt.cotrain.selection``)."""

    policy: str = "threshold-random"
    threshold: float = 0.9
    size: int = 0
    seed: int = 0
    # The size split equally over the target languages (largest remainder), each language's share drawn by
    # the policy among that language's candidates: the easiest language cannot fill the selection.
    per_language: bool = False
    # Whose prediction a learner selects by: its own (Yu & Joty 2021), or the job's classifier's (label and
    # confidence of the learners combined, xlt.cotrain.classifier).
    confidence: Literal["own", "classifier"] = "own"

    def __post_init__(self) -> None:
        check(self.policy in POLICIES, "selection.policy", self.policy, "one of " + ", ".join(POLICIES))
        check(self.confidence in ("own", "classifier"), "selection.confidence", self.confidence, "own or classifier")
        check(0.0 <= self.threshold < 1.0, "selection.threshold", self.threshold, "a probability in [0, 1)")
        check(self.size >= 0, "selection.size", self.size, "0 (n/3) or a positive integer")


@dataclass(frozen=True)
class PoolData:
    """How the task's rows are used: the source language's labelled train split is D; the
    unlabelled pool U is the ``pool`` split of every target language (labels dropped; a gold
    label, where the data has one, only scores the pseudo-labels); evaluation on every language's
    ``eval_split``. ``max_examples`` caps each language and split (0 = all). ``labeled_fraction``
    keeps that fraction of D (at least one row): the label-scarce setting of Yu & Joty 2021, §4.2
    (1.2% of the English labels) against the full one, on the same pool. Both are seeded random
    draws, stratified by label outside the pool (``task.sample_seed``, ``xlt.tasks.Task.draw``)."""

    data_dir: str | None = free(None)  # {data_dir} in the task's paths; else $XLT_DATA_DIR
    eval_split: Literal["dev", "test"] = fixed("test")
    max_examples: int = fixed(0)
    labeled_fraction: float = fixed(1.0)
    # task: the task's pool split as it is; disjoint: without the translations of the English train rows drawn
    # (D among them: xlt.tasks.Task.pool), as an unlabelled corpus of a parallel task's languages would be
    pool: Literal["task", "disjoint"] = fixed("task")

    def __post_init__(self) -> None:
        check(self.max_examples >= 0, "data.max_examples", self.max_examples, "0 (all) or a positive integer")
        check(0.0 < self.labeled_fraction <= 1.0, "data.labeled_fraction", self.labeled_fraction, "a number in (0, 1]")
        check(self.pool in ("task", "disjoint"), "data.pool", self.pool, "task or disjoint")

    @property
    def disjoint(self) -> bool:
        return self.pool == "disjoint"

    @property
    def metric_split(self) -> str:
        """The split as metric names spell it (``<split>/acc/<lang>``): the dev split is ``val``."""
        return "val" if self.eval_split == "dev" else "test"


@dataclass(frozen=True)
class CotrainConfig:
    """Yu & Joty 2021, Alg. 1. ``iterations`` = s exchange rounds: fit → evaluate → pseudo-label →
    select → exchange, s times, then a last fit and evaluation (s + 1 fits per learner; the
    first is each learner alone). ``mode: self-train`` gives each learner its own selection
    (the baseline of Yu & Joty 2021, §4.2, after Dong and de Melo 2019). ``task``: what is learnt
    (``xlt.tasks``), single texts or sentence pairs."""

    task: TaskConfig = fixed()
    mode: Mode = fixed("cotrain")
    iterations: int = length(3)
    lm: LearnerConfig = refitted(factory=LearnerConfig)
    emb: LearnerConfig = refitted(factory=lambda: LearnerConfig(
        model=EncoderConfig(source="bundled:use-multilingual-v3")))
    selection: SelectionSettings = fixed(factory=SelectionSettings)
    # The one classifier the job ends with (xlt.cotrain.classifier), scored from the learners' recorded
    # predictions: a finished run resumed with other settings is scored again without training, unless
    # selection.confidence: classifier selected by it (run_cotraining refuses that).
    classifier: ClassifierSettings = free(factory=ClassifierSettings)
    data: PoolData = field(default_factory=PoolData)
    inference: InferenceSettings = field(default_factory=InferenceSettings)
    # Encoders (sources) whose frozen-linear probe (xlt.study.recipes) the job fits on its own labelled
    # rows and scores on its own evaluation rows, printed beside its tables: what co-training adds.
    probes: tuple[str, ...] = free(())
    # Encoders whose probe, adapted to the job's own pools as probe_adapt says (xlt.eval.adaptation; the declared
    # single-text recipe's: centred, 3 class-balanced self-training rounds), the job prints beside the probes.
    adapted_probes: tuple[str, ...] = free(())
    probe_adapt: ProbeAdaptation = free(factory=lambda: ProbeAdaptation(center=True, rounds=3))
    # The loop state, metrics, table and plot; the learners' runs under learners/, each keeping
    # num_to_keep checkpoints.
    output: OutputSettings = field(default_factory=lambda: OutputSettings(dir="results/cotrain", num_to_keep=1))

    def __post_init__(self) -> None:
        check(self.iterations >= 0, "iterations", self.iterations, "an integer >= 0")
        check(not (self.mode == "self-train" and self.selection.policy == "agreement"), "selection.policy",
              self.selection.policy, "threshold-random or class-balanced with self-training (agreement needs "
              "a partner learner)")
        for source in (*self.probes, *self.adapted_probes):
            EncoderConfig(source=source)  # raises naming the valid forms of a source
        for name in LEARNERS:
            learner: LearnerConfig = getattr(self, name)
            check(not (learner.model.frozen and learner.optim.freeze_word_embeddings),
                  f"{name}.optim.freeze_word_embeddings", True,
                  f"false with {learner.model.source} (it is frozen as a whole)")

    def learner(self, name: str) -> LearnerConfig:
        return getattr(self, name)

    def footprint(self) -> dict[str, float]:
        """The CPUs and GPUs a running job holds at once: both learners' worker groups (kept for
        the whole job; an in-process learner's share of the driver) and the pseudo-labelling actors
        beside them."""
        inf = self.inference
        total = Counter({"CPU": inf.num_actors * inf.num_cpus, "GPU": inf.num_actors * inf.num_gpus})
        for name in LEARNERS:
            total.update(self.learner(name).footprint())
        return dict(total)

    def driver_share(self) -> dict[str, float]:
        """What the in-process learners (``scaling.num_workers: 0``) take of the driver's process."""
        total: Counter = Counter()
        for name in LEARNERS:
            total.update(self.learner(name).driver_share())
        return dict(total)


def load_cotrain_config(path: str | Path | None = None, overrides: Iterable[str] = (),
                        smoke: str | Path | None = None) -> CotrainConfig:
    """YAML preset, then the ``smoke`` preset merged over it (if given), then ``--set`` overrides."""
    return load_config(CotrainConfig, path, overrides, smoke)
