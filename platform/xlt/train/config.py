"""``FinetuneConfig``: everything one fine-tuning run needs, as frozen, validated dataclasses.

The job builds it from YAML + ``--set`` overrides (``load_finetune_config``), passes
``asdict(cfg)`` to Ray as ``train_loop_config``, and each worker rebuilds it with
``from_dict(FinetuneConfig, config)``. Defaults are those of Yu & Joty 2021, §4.2: AdamW, lr 5e-5, weight decay
0.01, a linear schedule, batch 16, max sequence length 128 (``model.max_length``: the encoder
config owns the truncation length, so there is exactly one such setting).

``task`` (``xlt.tasks.TaskConfig``) says what is learnt: the rows, their label set, the source
and target languages. ``xlt.train.trainer.prepare`` fills, on the driver, what is not written by
hand: the task's target languages and labels (``xlt.tasks.load_task``) and ``data.train_rows``
(the size of the train dataset, which fixes the length of the linear schedule). Workers cannot
compute either without reading the data themselves, and the saved ``config.yaml`` then records
exactly what ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal

from ..config import ConfigError, check, load_config
from ..engine.settings import OptimSettings, ScalingSettings, resolve_auto, steps_per_epoch
from ..storage import OutputSettings
from ..augment import AugmentConfig
from ..eval.evaluators import EvalSpec, check_evals
from ..losses import ObjectiveConfig, build_objectives
from ..losses.projection import projected_key
from ..models import EncoderConfig
from ..tasks import TaskConfig
from ..resume import fixed, free

Setting = Literal["zero-shot", "translate-train"]
SETTINGS: tuple[str, ...] = ("zero-shot", "translate-train")

# What the fine-tuning step computes for every batch (``xlt.losses.base`` vocabulary). An
# objective that needs anything else (parallel pairs, token states, MLM logits) belongs to
# alignment pretraining, not here.
PROVIDED_OUTPUTS: tuple[str, ...] = ("features", "logits", "labels", "group", "is_anchor", "is_translation")
# The evaluation datasets fine-tuning prepares (every language's dev and test split) and what reads them.
EVAL_DATA: dict[str, str] = {"val": "classification", "test": "classification"}


@dataclass(frozen=True)
class DataSettings:
    """How the task's rows are used (the task itself is ``FinetuneConfig.task``).

    - ``setting``: ``zero-shot`` trains on the source language's labelled train split only;
      ``translate-train`` adds the translations of those same examples into every target
      language (the task's own, through its links) as more labelled rows (Wang et al. 2022, §4.2:
      "fine-tuned on the concatenation of English training data and its translation to all
      target languages").
    - ``augment``: cross-lingual views of each source-language train example for the alignment
      objectives (CL / SCL / MVA / LA), generated on the fly by the Ray Data augmentation UDF
      (``xlt.augment.AugmentConfig``: t_f / t_p / t_c views, r_c, languages, seed). Full
      translations come from ``translator`` (see ``xlt.train.data``); partial translation glosses a
      span and code-switching switches words with the MUSE dictionaries under ``<data_dir>/muse``.
      ``augment_actors`` is the size of the augmentation actor pool (0: the views are made in the
      process that builds the run, before it starts, which pays no actor start-up: the smoke
      preset's few rows); ``augment_cpus`` is what each actor reserves: it must fit beside the
      training workers (0 lets it share their CPUs; it is cheap next to a training step).
    - ``max_examples``: at most this many examples per language and split (0 = all), a seeded
      draw stratified by label (``task.sample_seed``, ``xlt.tasks.Task.draw``); smoke runs use a handful.
    """

    data_dir: str | None = free(None)  # the data root ({data_dir} in task paths; muse/); else $XLT_DATA_DIR
    setting: Setting = fixed("zero-shot")
    augment: AugmentConfig | None = fixed(None)
    augment_actors: int = fixed(1)
    augment_cpus: float = fixed(0.0)
    translator: Literal["provided", "dictionary", "seq2seq"] = fixed("provided")
    translator_model: str = fixed("")  # seq2seq: a multilingual (NLLB) name or path, or a "{lang}" template per target
    max_examples: int = fixed(0)
    train_rows: int = fixed(0)  # resolved: rows of the train dataset

    def __post_init__(self) -> None:
        check(self.augment_actors >= 0, "data.augment_actors", self.augment_actors,
              "an integer >= 0 (0 = in the process that builds the run)")
        check(self.augment_cpus >= 0, "data.augment_cpus", self.augment_cpus, "a number >= 0")
        check(self.max_examples >= 0, "data.max_examples", self.max_examples, "0 (all) or a positive integer")
        check(self.train_rows >= 0, "data.train_rows", self.train_rows, "0 (unresolved) or the train dataset size")
        # Translate-train rows are the task's own translations; machine-translated training rows
        # (dictionary or seq2seq) are not built: those translators make views only.
        check(self.setting != "translate-train" or self.translator == "provided", "data.translator", self.translator,
              "provided with translate-train (the task's own translations, task.link); dictionary and seq2seq "
              "translators make full-translation views (data.augment)")
        check(self.translator != "seq2seq" or bool(self.translator_model), "data.translator_model",
              self.translator_model, "a seq2seq model with translator: seq2seq (Helsinki-NLP/opus-mt-en-{lang}, "
              "or one multilingual model such as facebook/nllb-200-distilled-600M)")


HEAD_INITS = ("random", "probe")


@dataclass(frozen=True)
class FinetuneOptim(OptimSettings):
    """The engine's optimiser settings and fine-tuning's own recipes on them: the head's learning rate, linear
    probing before fine-tuning (in AdamW steps, or as a fitted probe the head starts from), and WiSE-FT. The
    fine-tuning workload declares its optimiser groups and initialisation from these (``xlt.train.workload``)."""

    # > 0: the module's ``head`` (a classifier's linear head) learns at this rate, the rest at ``lr``, both on
    # the one schedule. A head initialised at random needs far larger steps than pretrained weights: at the
    # encoder's 1e-4 for 57 steps its weights move by at most ~0.006, and the encoder ends up doing the
    # head's work (linear probing, then fine-tuning: Kumar et al. 2022). 0 = ``lr``.
    head_lr: float = fixed(0.0)
    # > 0: the first this many epochs step the head alone, the encoder's learning rate held at 0, then every weight
    # trains, the encoder on a linear schedule (and warm-up) of its own over the epochs left: linear probing, then
    # fine-tuning (LP-FT, Kumar et al. 2022, §4), the probe fitted by the same AdamW steps, not a separate solver.
    # Its epochs are part of ``epochs``. The encoder's gradients are still computed in them (DDP needs every weight
    # used), so they cost as much as the others.
    probe_epochs: int = fixed(0)
    # "probe": before the first step, the head is the L2-regularised multinomial logistic regression (C = ``probe_c``,
    # L-BFGS to convergence) fitted on the frozen encoder's features of the training rows: LP-FT's linear probe as
    # Kumar et al. 2022 (§4, App. B) fit it, then every weight fine-tunes from it (a workload's ``begin``).
    # "random": the head as initialised.
    head_init: str = fixed("random")
    probe_c: float = fixed(1.0)  # the inverse L2 strength of head_init's probe (scikit-learn's C)
    # < 1: WiSE-FT (Wortsman et al. 2022, Eq. 1), a weight-space ensemble of the probe and the fine-tuned model: the
    # trained weights as the probe's epochs end (the pretrained encoder and the fitted head, θ₀) are kept, and after
    # the last epoch every trained weight θ₁ becomes (1 − α)·θ₀ + α·θ₁. Needs a probe, ``probe_epochs`` or ``head_init:
    # probe`` (θ₀ then the pretrained encoder and the fitted probe; the paper's θ₀ is a zero-shot classifier, and a
    # head drawn at random is none). 1 = off: the fine-tuned weights.
    wise_alpha: float = fixed(1.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.head_lr >= 0, "optim.head_lr", self.head_lr, "a number >= 0 (0 = optim.lr)")
        check(0 <= self.probe_epochs < self.epochs, "optim.probe_epochs", self.probe_epochs,
              f"an integer >= 0 and below optim.epochs ({self.epochs}): some epochs must fine-tune")
        check(self.head_init in HEAD_INITS, "optim.head_init", self.head_init, " or ".join(HEAD_INITS))
        check(self.probe_c > 0, "optim.probe_c", self.probe_c, "a number > 0 (scikit-learn's C)")
        check(0 < self.wise_alpha <= 1, "optim.wise_alpha", self.wise_alpha, "a fraction in (0, 1] (1 = off)")
        check(self.wise_alpha == 1 or self.probe_epochs >= 1 or self.head_init == "probe", "optim.wise_alpha",
              self.wise_alpha, "1 without a probe (optim.probe_epochs or optim.head_init: probe): the weights mixed in "
              "are the probe's")
        check(self.keep == "last" or self.wise_alpha == 1, "optim.keep", self.keep,
              "last under WiSE-FT (optim.wise_alpha < 1), which mixes the last epoch's weights with the probe's")


@dataclass(frozen=True)
class FinetuneConfig:
    """Fine-tune encoder + linear head with CE + Σ λ_k·aux_k (``objectives``, ``xlt.losses``) on ``task``.

    ``evals``: the evaluators of the run (``xlt.eval.evaluators``), each a ``classification`` of
    one of the datasets fine-tuning prepares (``EVAL_DATA``: every language's dev split ``val``, its
    test split ``test``). By default dev after every epoch (``val/`` metrics) and test after the
    last one (``test/``); sweep trials drop test (they select on dev and never look at test).
    """

    task: TaskConfig = fixed()
    model: EncoderConfig = fixed(factory=EncoderConfig)
    objectives: tuple[ObjectiveConfig, ...] = fixed(())
    data: DataSettings = field(default_factory=DataSettings)
    optim: FinetuneOptim = field(default_factory=FinetuneOptim)
    scaling: ScalingSettings = field(default_factory=ScalingSettings)
    output: OutputSettings = field(default_factory=lambda: OutputSettings(dir="results/finetune/finetune"))
    evals: tuple[EvalSpec, ...] = free((EvalSpec("classification", "val", every_epoch=True), EvalSpec("classification", "test")))

    @property
    def scores_dev_every_epoch(self) -> bool:
        """Whether an eval scores dev after every epoch (a classification of val, ``every_epoch: true``): what
        choosing by dev needs (``optim.keep: best-dev``, a sweep)."""
        return any(e.type == "classification" and e.split == "val" and e.every_epoch for e in self.evals)

    def __post_init__(self) -> None:
        object.__setattr__(self, "optim", resolve_auto(self.optim, self.scaling))
        check_evals("evals", self.evals, EVAL_DATA)
        check(self.optim.keep == "last" or self.scores_dev_every_epoch, "optim.keep", self.optim.keep,
              "last, or evals scoring dev after every epoch (a classification of val, every_epoch: true): best-dev "
              f"keeps the epoch of the best {self.task.source_lang} dev accuracy")
        check(self.data.augment is None or self.data.augment.source_lang == self.task.source_lang,
              "data.augment.source_lang", self.data.augment and self.data.augment.source_lang,
              f"the source language {self.task.source_lang!r} of the task")
        try:
            objectives = build_objectives(self.objectives)
        except ValueError as e:
            raise ConfigError(f"objectives: {e}") from e
        for key, objective in objectives.objectives.items():
            # the step also computes projected/<key> for an objective with a projection head of its own
            provided = (*PROVIDED_OUTPUTS, *(projected_key(key) for key in objectives.projections))
            missing = [k for k in objective.requires if k not in provided]
            check(not missing, "objectives", key,
                  f"an objective over the outputs fine-tuning computes ({', '.join(PROVIDED_OUTPUTS)}); "
                  f"{key} also needs {', '.join(missing)} (a pretraining objective: see xlt.pretrain)")
        for sa in (o for o in self.objectives if o.name == "semantic_alignment"):
            self._check_semantic_alignment(sa.params.get("b"))
        frozen = self.model.frozen
        check(not (frozen and self.objectives), "objectives", [o.name for o in self.objectives],
              f"none with the frozen {self.model.source} (its embeddings get no gradient)")
        check(not (frozen and self.optim.freeze_word_embeddings), "optim.freeze_word_embeddings", True,
              f"false with {self.model.source} (it is frozen as a whole)")

    def _check_semantic_alignment(self, b: Any) -> None:
        """SA (Yu & Joty 2021, Eq. 4) reads 2b-batches: b translations of each example, which fine-tuning
        takes from its full-translation views, and b other-class examples of the same batch."""
        check(b is not None, "objectives.semantic_alignment.params.b", b,
              "the translations per 2b-batch (e.g. params: {b: 1}); fine-tuning forms the 2b-batches from each "
              "example's full-translation views and the batch's other-class examples")
        t_f = self.data.augment.t_f if self.data.augment is not None else 0
        check(t_f >= b, "data.augment.t_f", t_f,
              f"at least b={b} full-translation views per example for semantic_alignment (its positives)")
        check(self.data.translator != "provided" or self.task.link != "none", "task.link", self.task.link,
              "a link between translations (id, line or source_id) for semantic_alignment's provided "
              "translations; or data.translator: dictionary / seq2seq")
        check(self.optim.batch_size > b, "optim.batch_size", self.optim.batch_size,
              f"more than b={b} examples per batch (the negatives of each example come from its batch)")

    def steps_per_epoch(self, num_workers: int) -> int:
        """Optimizer steps per epoch on every worker (``xlt.engine.steps_per_epoch``)."""
        return steps_per_epoch(self.data.train_rows, num_workers, self.optim)


def load_finetune_config(path: str | Path | None = None, overrides: Iterable[str] = (),
                         smoke: str | Path | None = None) -> FinetuneConfig:
    """YAML preset, then the ``smoke`` preset merged over it (if given), then ``--set`` overrides."""
    return load_config(FinetuneConfig, path, overrides, smoke)
