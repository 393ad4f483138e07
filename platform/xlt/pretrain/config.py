"""``PretrainConfig``: alignment pretraining on parallel text, as frozen, validated dataclasses.

The job builds it from YAML + ``--set`` overrides (``load_pretrain_config``), passes
``asdict(cfg)`` to Ray as ``train_loop_config``, and each worker rebuilds it with
``from_dict(PretrainConfig, config)``. Sections shared with fine-tuning are the same classes
(``EncoderConfig``, and the engine's ``OptimSettings`` (with gradient accumulation),
``ScalingSettings`` and ``xlt.storage.OutputSettings``).

A *recipe* names a published combination of objectives and the batch construction it needs:

- ``ml-ctl`` (Chen et al. 2022): cross-zero NCE (Eq. 5, τ = 0.07) over concatenated contextual
  embeddings of word-positioned samples (Alg. 1, §2.2) + α·MLM with α = 0.1 (Eq. 8), MLM on
  each sentence alone. InfoNCE instead of CZ-NCE (Eq. 1–3): the objective ``parallel_info_nce``.
- ``mgc`` (Li et al. 2021): word-level hard contrast (Eq. 1, 3, 4) + span contrast (Eq. 6) + sentence
  contrast with noisy positives (Eq. 7–8), all τ = 0.1 and weight 1 (§3.1), + MLM on the
  concatenated pair with weight 1 (§2.4: "the sum of ... contrastive losses as well as the
  cross-entropy of MLM"). Soft word contrast (Eq. 5) instead of hard: ``word_soft_contrast``.
- ``veco2`` (Zhang et al. 2023): sequence contrast (Eq. 1–3) + token contrast (Eq. 4–7) + TLM, each with
  weight 1 (Eq. 8, bilingual case).
- ``custom``: any weighted combination of the objectives in ``objectives``.

``objectives`` left empty take the recipe's; given, they replace them (the recipe still decides
``batch.features`` and ``batch.mlm_input`` unless those are set). The config is resolved in
``__post_init__``, so a saved ``config.yaml`` lists exactly what trained.

Two fields of ``data`` are resolved on the driver by ``xlt.pretrain.trainer.prepare``:
``data_dir`` (absolute) and ``train_rows`` (pairs in the training set after mixing and
annotation, which fixes the length of the linear schedule).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Literal

from ..config import check, load_config
from ..losses import ObjectiveConfig
from ..losses.mlm import MLM_WEIGHT
from ..models import EncoderConfig
from ..eval.evaluators import EvalSpec, check_evals
from ..engine import OptimSettings, ScalingSettings, resolve_auto, steps_per_epoch
from ..storage import OutputSettings
from ..tasks import BitextConfig, TaskConfig
from ..text.languages import normalized_langs
from ..resume import fixed, free

HELD_APART = "tatoeba"  # the evaluation dataset of the held-apart pairs (data.eval_source) a run is given

Recipe = Literal["ml-ctl", "mgc", "veco2", "custom"]
Features = Literal["pooled", "cce"]
MlmInput = Literal["monolingual", "concatenated"]
Subword = Literal["first", "all"]

# What the pretraining step computes (``xlt.losses.base`` vocabulary). ``features``, ``labels``
# and the like belong to fine-tuning (``xlt.train``).
PROVIDED_OUTPUTS: tuple[str, ...] = (
    "src_features", "tgt_features", "src_noisy_features", "tgt_noisy_features", "src_tokens", "tgt_tokens",
    "src_mask", "tgt_mask", "alignment", "src_spans", "tgt_spans", "mlm_logits", "mlm_labels",
)


@dataclass(frozen=True)
class RecipeDefaults:
    """What a recipe fills in: its objectives and how its batches are built."""

    objectives: tuple[ObjectiveConfig, ...]
    features: Features
    mlm_input: MlmInput


def _objective(name: str, weight: float = 1.0, **params: float) -> ObjectiveConfig:
    return ObjectiveConfig(name, weight, dict(params))


RECIPES: dict[str, RecipeDefaults] = {
    "ml-ctl": RecipeDefaults((_objective("cross_zero_nce", temperature=0.07), _objective("mlm", MLM_WEIGHT)),
                             features="cce", mlm_input="monolingual"),
    "mgc": RecipeDefaults((_objective("word_hard_contrast", temperature=0.1), _objective("span_contrast", temperature=0.1),
                           _objective("noisy_sentence_contrast", temperature=0.1), _objective("mlm")),
                          features="pooled", mlm_input="concatenated"),
    "veco2": RecipeDefaults((_objective("parallel_info_nce", temperature=0.07),
                             _objective("token_alignment", temperature=0.1), _objective("mlm")),
                            features="pooled", mlm_input="concatenated"),
}
RECIPE_NAMES: tuple[str, ...] = (*RECIPES, "custom")


def _langs(key: str, codes: Iterable[str]) -> tuple[str, ...]:
    out = normalized_langs(key, codes)
    check(len(set(out)) == len(out), key, list(codes), "each language once")
    return tuple(out)


@dataclass(frozen=True)
class PretrainData:
    """The parallel data of a run: sources, their mixture, held-apart evaluation.

    - ``sources`` (``xlt.tasks.BitextConfig``, presets in ``configs/bitext/``: ``{include:
      bitext/tatoeba.yaml, langs: [de]}``) are read, oriented so that ``pivot_lang`` is the source
      side whenever a pair has it (MUSE dictionaries are ``en-xx``), grouped by language pair, each
      group cut to ``max_pairs`` (a seeded draw, ``xlt.data.sample``; 0 = all) and mixed with q_i ∝ p_i^α (Zhang et al.
      2023, Eq. 9, α = 0.5 as in §4.1) into ``pairs_per_epoch`` pairs (0 = as many as there are).
    - ``eval_langs``: languages of ``eval_source`` (Tatoeba in the presets) scored by retrieval after
      every epoch (``val/tatoeba/<lang>``), at most ``eval_max_pairs`` pairs each; held apart: no
      training pair may be in one of them. ``exclude_eval_sentences`` drops every training pair with
      a side equal to a sentence of those evaluation pairs or of the dev and test splits of
      ``eval_tasks`` (every language found), so that no evaluation is trained on.
    - ``distinct_pivot``: keep each pivot-language sentence in one training pair only
      (``xlt.pretrain.parallel.distinct_pivot``): for multi-way sources (NTREX-128, SIB-200), whose
      English lines would otherwise recur once per language and be in-batch false negatives.
    - ``dictionary_dir``: bilingual dictionaries ``<src>-<tgt>.txt`` in MUSE format (default
      ``<data_dir>/muse``), for word-positioned samples, aligned tokens and spans, and the
      dictionary back-translations of noisy positives. ``english_stop_words``: leave English
      stop words (scikit-learn's list) out of them (Chen et al. 2022, §2.1).
    - ``annotate_actors``: the annotation's actor pool (0: in the process that builds the run, with
      no actor to start: the smoke preset's few dozen pairs); ``annotate_cpus``: CPUs each actor
      reserves (it runs before training starts).
    """

    data_dir: str | None = free(None)  # the data root; else $XLT_DATA_DIR
    sources: tuple[BitextConfig, ...] = fixed(())
    pivot_lang: str = fixed("en")
    alpha: float = fixed(0.5)
    pairs_per_epoch: int = fixed(0)
    max_pairs: int = fixed(0)
    eval_source: BitextConfig | None = fixed(None)
    eval_langs: tuple[str, ...] = fixed(())
    eval_max_pairs: int = free(0)
    eval_tasks: tuple[TaskConfig, ...] = fixed(())
    exclude_eval_sentences: bool = fixed(True)
    distinct_pivot: bool = fixed(False)
    dictionary_dir: str | None = free(None)
    english_stop_words: bool = fixed(True)
    annotate_actors: int = free(1)
    annotate_cpus: float = free(1.0)
    train_rows: int = fixed(0)  # resolved: pairs in the training set

    def __post_init__(self) -> None:
        check(len(self.sources) >= 1, "data.sources", self.sources, "at least one source of parallel pairs")
        object.__setattr__(self, "pivot_lang", _langs("data.pivot_lang", [self.pivot_lang])[0])
        object.__setattr__(self, "eval_langs", _langs("data.eval_langs", self.eval_langs))
        check(self.pivot_lang not in self.eval_langs, "data.eval_langs", self.eval_langs,
              f"languages other than the pivot {self.pivot_lang!r} (each held-apart language is paired with it)")
        check(self.eval_source is not None or not self.eval_langs, "data.eval_source", self.eval_source,
              "the pairs of data.eval_langs, e.g. {include: bitext/tatoeba.yaml}")
        check(0 < self.alpha <= 1, "data.alpha", self.alpha, "a smoothing exponent in (0, 1] (Zhang et al. 2023, Eq. 9)")
        for name in ("pairs_per_epoch", "max_pairs", "eval_max_pairs", "train_rows"):
            check(getattr(self, name) >= 0, f"data.{name}", getattr(self, name), "0 or a positive integer")
        check(self.annotate_actors >= 0, "data.annotate_actors", self.annotate_actors,
              "an integer >= 0 (0 = in the process that builds the run)")
        check(self.annotate_cpus >= 0, "data.annotate_cpus", self.annotate_cpus, "a number >= 0")


@dataclass(frozen=True)
class BatchSettings:
    """How batches are built (``xlt.pretrain.batches``); ``None`` takes the recipe's choice.

    - ``features``: what ``src_features`` / ``tgt_features`` are: the encoder's pooled sentence
      embedding, or the concatenated contextual embedding of a word-positioned sample (Chen et al. 2022,
      §2.2; pairs without an admissible word pair are left out, as Alg. 1 yields none).
    - ``mlm_input``: MLM over each sentence alone (Chen et al. 2022: an auxiliary task on the encoder's
      own inputs) or over the concatenated pair (TLM: Li et al. 2021, §2.4; Zhang et al. 2023, §3.3).
    - ``mask_probability``: the 15% of BERT (80/10/10 replacement, ``xlt.losses.mlm``).
    - ``subword``, ``max_span_words``: ``DictionaryAligner`` settings for aligned tokens and spans.
    """

    features: Features | None = None
    mlm_input: MlmInput | None = None
    mask_probability: float = 0.15
    subword: Subword = "first"
    max_span_words: int = 4

    def __post_init__(self) -> None:
        check(0 < self.mask_probability < 1, "batch.mask_probability", self.mask_probability, "a fraction in (0, 1)")
        check(self.max_span_words >= 2, "batch.max_span_words", self.max_span_words, "an integer >= 2")


@dataclass(frozen=True)
class PretrainConfig:
    """Alignment pretraining of an encoder on parallel text; the result is a ``local:`` encoder."""

    model: EncoderConfig = fixed(factory=EncoderConfig)
    recipe: Recipe = fixed("veco2")
    objectives: tuple[ObjectiveConfig, ...] = fixed(())
    batch: BatchSettings = fixed(factory=BatchSettings)
    data: PretrainData = field(kw_only=True)  # required: no dataset is a default
    optim: OptimSettings = field(default_factory=OptimSettings)
    scaling: ScalingSettings = field(default_factory=ScalingSettings)
    output: OutputSettings = field(default_factory=lambda: OutputSettings(dir="results/pretrain/pretrain"))
    # The run's evaluators (``xlt.eval.evaluators``): retrieval on the held-apart pairs after every epoch.
    evals: tuple[EvalSpec, ...] = free((EvalSpec("retrieval", "val", data=HELD_APART, every_epoch=True),))

    def __post_init__(self) -> None:
        object.__setattr__(self, "optim", resolve_auto(self.optim, self.scaling))
        check_evals("evals", self.evals, {HELD_APART: "retrieval"})
        check(self.optim.keep == "last", "optim.keep", self.optim.keep,
              "last: pretraining scores no labelled dev split to keep an epoch by")
        check(not self.output.export, "output.export", True, "false: pretraining exports its encoder with every "
              "checkpoint (<checkpoint>/encoder, a local: source); classifiers are exported by fine-tuning and "
              "co-training")
        check(self.recipe in RECIPE_NAMES, "recipe", self.recipe, "one of " + ", ".join(RECIPE_NAMES))
        defaults = RECIPES.get(self.recipe)
        check(defaults is not None or bool(self.objectives), "objectives", self.objectives,
              "at least one objective with recipe custom")
        if defaults is not None:
            if not self.objectives:
                object.__setattr__(self, "objectives", defaults.objectives)
            object.__setattr__(self, "batch", replace(self.batch, features=self.batch.features or defaults.features,
                                                      mlm_input=self.batch.mlm_input or defaults.mlm_input))
        elif self.batch.features is None:
            object.__setattr__(self, "batch", replace(self.batch, features="pooled"))
        names = self.objective_names
        repeated = sorted({n for n in names if names.count(n) > 1})
        check(not repeated, "objectives", list(names), f"each objective once (repeated: {', '.join(repeated)})")
        late = [o.name for o in self.objectives if o.start_epoch]
        check(not late, "objectives", late, "objectives that train from the first epoch (start_epoch is "
              "fine-tuning's: its objectives join CE later)")
        # Built with the model (xlt.pretrain.model), which fills sizes such as word_soft_contrast's
        # embed_dim from the encoder; names and parameters were checked by ObjectiveConfig.
        requires = self.requires
        missing = sorted(requires - set(PROVIDED_OUTPUTS))
        check(not missing, "objectives", list(self.objective_names),
              f"objectives over the outputs pretraining computes ({', '.join(PROVIDED_OUTPUTS)}); "
              f"{', '.join(missing)} belong to fine-tuning (xlt.train)")
        check("mlm_logits" not in requires or self.batch.mlm_input is not None, "batch.mlm_input", None,
              "'monolingual' or 'concatenated' for the mlm objective")
        check(self.batch.features != "cce" or "src_noisy_features" not in requires, "batch.features", "cce",
              "'pooled' with noisy_sentence_contrast (noisy positives have no word-positioned samples)")
        check(not self.model.frozen, "model.source", self.model.source,
              "a trainable transformer, not a frozen numpy encoder")
        check(self.optim.encoder_pass_rows == 0, "optim.encoder_pass_rows", self.optim.encoder_pass_rows,
              "0: pretraining reads each batch in one encoder pass (passes by length are fine-tuning's)")

    @property
    def objective_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.objectives)

    @property
    def requires(self) -> set[str]:
        """The outputs the configured objectives read (``Objective.requires``, without building them)."""
        from ..losses.registry import OBJECTIVES

        return {key for name in self.objective_names for key in OBJECTIVES[name].requires}

    def steps_per_epoch(self, num_workers: int) -> int:
        """Optimizer steps per epoch on every worker (``xlt.engine.steps_per_epoch``): ``batch_size``
        pairs per micro-batch, ``grad_accum_steps`` micro-batches per step."""
        return steps_per_epoch(self.data.train_rows, num_workers, self.optim)


def load_pretrain_config(path: str | Path | None = None, overrides: Iterable[str] = (),
                         smoke: str | Path | None = None) -> PretrainConfig:
    """YAML preset, then the ``smoke`` preset merged over it (if given), then ``--set`` overrides."""
    return load_config(PretrainConfig, path, overrides, smoke)
