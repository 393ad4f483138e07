"""Evaluation protocols of frozen encoders: a frozen-linear probe on any task, Tatoeba retrieval, mining.

``run_evaluation(cfg)`` is what ``jobs/evaluate.py`` runs: for each configured model it embeds
the sentences once, scores every language, and returns one table row per model and language.
Nothing here is trained except the frozen-linear probe's logistic regression.

- ``frozen-linear``: logistic regression on the frozen embeddings of the task's (``xlt.tasks``)
  source-language train split, its inverse regularisation C chosen on the source dev split;
  accuracy and macro-F1 on every language's test split. Sentence pairs are embedded as the
  encoder embeds pairs (``xlt.models.encoder``: jointly, or ``[u; v; |u−v|; u*v]``).
- ``tatoeba``: top-1 retrieval both ways on the pairs of ``bitext`` (Tatoeba in the presets:
  ``bitext: {include: bitext/tatoeba.yaml}``); ``mining``: BUCC-style mining on them with distractors.
- ``bucc``: mining on the corpus of ``mining`` (BUCC 2018 zh-en: ``mining: {include:
  mining/bucc2018.yaml}``; ``bucc_rows`` states the threshold protocol).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Literal

import numpy as np

from ..config import check
from ..data import Example, MiningCorpus, ParallelPair, resolve_data_dir
from ..text.languages import normalize_lang
from ..hardware import inference_device
from ..models import EncoderConfig, TextEncoder, load_encoder
from ..resume import fixed, free
from ..models.encoder import Item
from ..data.sample import sample
from ..storage import OutputSettings
from ..tasks import (BitextConfig, MiningConfig, Task, TaskConfig, bitext_languages, load_mining, load_task,
                     read_bitext)
from ..models.classifier import Classifier, check_exportable
from .adaptation import Probe, ProbeAdaptation, adapted_probe
from .classification import scores_by_language, summarize_transfer
from .evaluators import retrieval_by_language
from .retrieval import MiningResult, mine_bitext

Protocol = Literal["frozen-linear", "tatoeba", "mining", "bucc"]


@dataclass(frozen=True)
class EvaluateData:
    """Where the data is and how much of it: ``data_dir`` (else ``$XLT_DATA_DIR``; ``--data-dir``),
    ``max_examples`` per language and split (0 = all; smoke runs use a few)."""

    data_dir: str | None = free(None)
    max_examples: int = fixed(0)

    def __post_init__(self) -> None:
        check(self.max_examples >= 0, "data.max_examples", self.max_examples, "0 (all) or a positive integer")


@dataclass(frozen=True)
class EvaluateConfig:
    """What ``jobs/evaluate.py`` evaluates. ``task``: the classification task of ``frozen-linear``
    (its languages); ``bitext``: the parallel sentences of ``tatoeba`` and ``mining``, ``languages``
    theirs (empty = every one on disk); ``mining``: the corpus of ``bucc``, which ignores ``task``,
    ``languages`` and ``source_lang`` (BUCC 2018 offline: zh→en, the one pair with gold)."""

    protocol: Protocol = fixed("frozen-linear")
    task: TaskConfig | None = fixed(None)
    bitext: BitextConfig | None = fixed(None)
    mining: MiningConfig | None = fixed(None)
    models: tuple[EncoderConfig, ...] = fixed((
        EncoderConfig(source="bundled:multilingual-e5-small"),
        EncoderConfig(source="bundled:use-multilingual-v3"),
    ))
    data: EvaluateData = field(default_factory=EvaluateData)
    languages: tuple[str, ...] = fixed(())
    source_lang: str = fixed("en")
    batch_size: int = free(64)
    # Inverse L2 strength (scikit-learn's C) of the logistic-regression probe: the value with the
    # best source-language dev accuracy is used (ties -> the stronger regularisation, smaller C).
    probe_c: tuple[float, ...] = fixed((0.1, 1.0, 10.0, 100.0))
    probe_max_iter: int = fixed(2000)
    # The probe adapted to each target language's unlabelled pool (xlt.eval.adaptation): centring, self-training.
    adapt: ProbeAdaptation = fixed(factory=ProbeAdaptation)
    normalize: bool = fixed(True)  # L2-normalise embeddings before the probe / retrieval
    progress: bool = free(True)  # progress bars (stderr) while encoding
    mining_k: int = fixed(4)  # neighbourhood of the ratio margin (Artetxe & Schwenk 2019)
    seed: int = fixed(0)
    output: OutputSettings = free(factory=lambda: OutputSettings(dir="results/evaluate"))

    def __post_init__(self) -> None:
        check(len(self.models) >= 1, "models", self.models, "at least one model")
        check(not self.output.export or self.protocol == "frozen-linear", "output.export", True,
              "false for retrieval, which trains no classifier; the frozen-linear probe exports as a classifier")
        sources = [model.source for model in self.models]
        check(not self.output.export or len(set(sources)) == len(sources), "models", sources,
              "distinct sources where output.export writes each model's probe under its name")
        check(self.batch_size >= 1, "batch_size", self.batch_size, "an integer >= 1")
        check(len(self.probe_c) >= 1 and all(c > 0 for c in self.probe_c), "probe_c", self.probe_c,
              "a list of positive numbers")
        for lang in (self.source_lang, *self.languages):
            normalize_lang(lang)  # raises naming the code and the accepted forms
        check(self.protocol != "frozen-linear" or self.task is not None, "task", self.task,
              "a task for the frozen-linear probe, e.g. task: {include: tasks/xnli.yaml} (configs/tasks/)")
        check(self.protocol not in ("tatoeba", "mining") or self.bitext is not None, "bitext", self.bitext,
              f"the parallel sentences of {self.protocol}, e.g. bitext: {{include: bitext/tatoeba.yaml}}")
        check(self.protocol != "bucc" or self.mining is not None, "mining", self.mining,
              "the corpus of bucc, e.g. mining: {include: mining/bucc2018.yaml} (configs/mining/)")


def _embed(encoder: TextEncoder, texts: list[Item], cfg: EvaluateConfig) -> np.ndarray:
    return encoder.encode(texts, batch_size=cfg.batch_size, normalize=cfg.normalize, progress=cfg.progress)


def bitext_pairs(cfg: EvaluateConfig, root: Path, lang: str) -> list[ParallelPair]:
    """The pairs of ``lang`` in ``cfg.bitext`` (at most ``data.max_examples``, a seeded draw: ``xlt.data.sample``)."""
    assert cfg.bitext is not None  # EvaluateConfig checks it for the protocols that read pairs
    return sample(read_bitext(replace(cfg.bitext, langs=(lang,)), root, normalize_lang(cfg.source_lang)),
                  cfg.data.max_examples, key=lambda p: p.id)


def tatoeba_rows(encoder: TextEncoder, root: Path, langs: list[str], cfg: EvaluateConfig) -> list[dict[str, Any]]:
    """Top-1 retrieval accuracy xx→en, en→xx and their mean for each language (the ``retrieval``
    evaluator's scores, ``xlt.eval.evaluators``)."""
    pairs = [(lang, p) for lang in langs for p in bitext_pairs(cfg, root, lang)]
    columns = {"lang": [lang for lang, _ in pairs], "src": [p.src for _, p in pairs], "tgt": [p.tgt for _, p in pairs]}
    results = retrieval_by_language(encoder, columns, cfg.batch_size, normalize=cfg.normalize, progress=cfg.progress)
    rows = [{"lang": lang, "n": r.n, "xx->en": r.src_to_tgt, "en->xx": r.tgt_to_src, "mean": r.mean}
            for lang, r in results.items()]
    rows.append({"lang": "avg", "n": sum(r["n"] for r in rows),
                 **{k: float(np.mean([r[k] for r in rows])) for k in ("xx->en", "en->xx", "mean")}})
    return rows


def mining_rows(encoder: TextEncoder, root: Path, langs: list[str], cfg: EvaluateConfig) -> list[dict[str, Any]]:
    """BUCC-style mining on Tatoeba: each language's sentences against its English side plus distractors.

    BUCC's comparable corpora are not available offline; Tatoeba stands in. The English side of
    the *next* language pair (different sentences; exact copies of a gold sentence removed) is
    appended as unpaired English text, so that, as in BUCC, most candidates have no true partner.
    """
    all_pairs = {lang: bitext_pairs(cfg, root, lang) for lang in langs}
    rows = []
    for i, lang in enumerate(langs):
        pairs = all_pairs[lang]
        gold_english = {p.tgt for p in pairs}
        other = all_pairs[langs[(i + 1) % len(langs)]] if len(langs) > 1 else []
        distractors = list(dict.fromkeys(p.tgt for p in other if p.tgt not in gold_english))
        src = _embed(encoder, [p.src for p in pairs], cfg)
        tgt = _embed(encoder, [p.tgt for p in pairs] + distractors, cfg)
        result = mine_bitext(src, tgt, [(j, j) for j in range(len(pairs))], k=cfg.mining_k, mode="forward")
        rows.append({"lang": lang, "n_src": len(pairs), "n_tgt": len(pairs) + len(distractors),
                     "precision": result.precision, "recall": result.recall, "f1": result.f1,
                     "threshold": result.threshold, "protocol": result.protocol})
    return rows


BUCC_PROTOCOL = ("BUCC 2018 tunes the threshold on training data and reports test; offline only dev has gold, so "
                 "dev is split by source sentence: zh sentences on even rows of the dev file (0-based) calibrate "
                 "(the margin threshold with the best F1 there), those on odd rows are held out (P/R/F1 at that "
                 "threshold). Each half's zh sentences are mined against all en sentences: forward candidates "
                 "(each zh sentence's best en by ratio margin among its k={k} nearest). Oracle rows choose the "
                 "threshold on the rows they score.")


@dataclass(frozen=True, eq=False)
class BuccSample:
    """The sentences to mine and, per part, the source rows mined and the gold pairs among them.

    ``parts[name] = (rows of src, gold pairs as (row in the part, row of tgt))`` for ``calibration``
    (zh on even rows of the file, 0-based), ``held-out`` (odd rows) and ``all``."""

    src: list[str]
    tgt: list[str]
    parts: dict[str, tuple[list[int], list[tuple[int, int]]]]


def bucc_sample(corpus: MiningCorpus, max_examples: int) -> BuccSample:
    """All of ``corpus``, or (``max_examples`` > 0) the sentences of ``max_examples`` of its gold
    pairs plus ``max_examples`` rows of each side (seeded draws, ``xlt.data.sample``), so a smoke run
    still has gold pairs among distractors. Halves follow the zh row in the file: a capped run's
    halves are subsets of the full run's. Raises if a part has no gold pair (F1 is undefined)."""
    src_rows, tgt_rows = list(range(len(corpus.src))), list(range(len(corpus.tgt)))
    if max_examples:
        kept = sample(corpus.gold, max_examples, key=lambda pair: f"{pair[0]}-{pair[1]}")
        src_rows = sorted({s for s, _ in kept} | set(sample(src_rows, max_examples, key=str)))
        tgt_rows = sorted({t for _, t in kept} | set(sample(tgt_rows, max_examples, key=str)))
    tgt_pos = {row: j for j, row in enumerate(tgt_rows)}
    members = {"calibration": [i for i, row in enumerate(src_rows) if row % 2 == 0],
               "held-out": [i for i, row in enumerate(src_rows) if row % 2 == 1], "all": list(range(len(src_rows)))}
    parts = {}
    for name, rows in members.items():
        position = {src_rows[i]: n for n, i in enumerate(rows)}  # file row -> row of this part
        gold = [(position[s], tgt_pos[t]) for s, t in corpus.gold if s in position and t in tgt_pos]
        if not gold:
            raise ValueError(f"the {name} part of BUCC {corpus.src_lang}-{corpus.tgt_lang} has no gold pair with "
                             f"max_examples={max_examples}; use a larger max_examples (0 = all)")
        parts[name] = (rows, gold)
    return BuccSample([corpus.src[i] for i in src_rows], [corpus.tgt[j] for j in tgt_rows], parts)


def bucc_rows(encoder: TextEncoder, sample: BuccSample, cfg: EvaluateConfig) -> list[dict[str, Any]]:
    """Precision / recall / F1 of mined zh-en pairs (``BUCC_PROTOCOL``): held out at the threshold
    chosen on the calibration half, and the oracle of each part. Each side is embedded once."""
    src, tgt = _embed(encoder, sample.src, cfg), _embed(encoder, sample.tgt, cfg)

    def mine(part: str, threshold: float | None = None) -> MiningResult:
        rows, gold = sample.parts[part]
        return mine_bitext(src[rows], tgt, gold, k=cfg.mining_k, mode="forward", threshold=threshold)

    calibration = mine("calibration")
    results = {"held-out (threshold from calibration half)": ("held-out", mine("held-out", calibration.threshold)),
               "oracle: held-out half": ("held-out", mine("held-out")),
               "oracle: calibration half": ("calibration", calibration), "oracle: all of dev": ("all", mine("all"))}
    protocol = BUCC_PROTOCOL.format(k=cfg.mining_k)
    # "part": which pairs of the dev split were mined (a half, or all of it), and where the threshold came from.
    return [{"part": label, "precision": r.precision, "recall": r.recall, "f1": r.f1, "threshold": r.threshold,
             "n_src": len(sample.parts[part][0]), "n_tgt": len(sample.tgt), "n_gold": r.n_gold, "protocol": protocol}
            for label, (part, r) in results.items()]


@dataclass(frozen=True)
class Scored:
    """What a protocol gives for one encoder: its table ``rows``, and the frozen-linear probe as a
    ``Classifier`` where the config exports it."""

    rows: list[dict[str, Any]]
    classifier: Classifier | None = None


@dataclass(frozen=True, eq=False)
class ProbePredictions:
    """The frozen-linear probe's prediction of every test item: ``ids``, ``langs``, ``gold`` and
    ``predicted`` (label indices) aligned, test split of each task language in turn; ``c`` the C chosen."""

    ids: list[str]
    langs: list[str]
    gold: np.ndarray
    predicted: np.ndarray
    probe: Probe

    @property
    def c(self) -> float:
        return self.probe.c


def frozen_linear_predictions(encoder: TextEncoder, task: Task, cfg: EvaluateConfig) -> ProbePredictions:
    """Logistic regression on frozen embeddings of the task's source train split (C chosen on the
    source dev split), applied to every language's test split (each a draw of ``data.max_examples``);
    adapted, as ``cfg.adapt`` says, to each target's ``pool`` split (its labels never read)."""
    n, source = cfg.data.max_examples, task.source_lang
    pools = {lang: task.examples("pool", lang, n) for lang in task.target_langs} if cfg.adapt.active else {}
    return probe_rows(example_embedder(encoder, task, cfg), task, task.examples("train", source, n),
                      task.examples("dev", source, n), {lang: task.examples("test", lang, n) for lang in task.langs},
                      cfg, pools)


Embed = Callable[[Sequence[Example]], np.ndarray]  # examples -> their embeddings (N, D), as the probe reads them


def example_embedder(encoder: TextEncoder, task: Task, cfg: EvaluateConfig) -> Embed:
    """``encoder``'s embeddings of a task's examples (their pairs, on a pair task), normalised if ``cfg.normalize``."""
    return lambda examples: _embed(encoder, [(ex.text, ex.text_pair) if task.paired else ex.text
                                             for ex in examples], cfg)


def probe_rows(embed: Embed, task: Task, train: Sequence[Example], dev: Sequence[Example],
               scored: Mapping[str, Sequence[Example]], cfg: EvaluateConfig,
               pools: Mapping[str, Sequence[Example]] | None = None) -> ProbePredictions:
    """The frozen-linear probe on rows a caller chose (a job's labelled draw and the split it scores):
    logistic regression on the embeddings ``embed`` gives of ``train``, C the best of ``cfg.probe_c`` on
    ``dev``, adapted to the unlabelled ``pools`` of the target languages as ``cfg.adapt`` says
    (``xlt.eval.adaptation``; every scored target needs its pool then), predictions of every
    language's ``scored`` rows."""
    def gold(examples: Sequence[Example]) -> np.ndarray:
        return np.array([task.labels.index(ex.label) for ex in examples])

    pools = pools or {}
    if cfg.adapt.active:
        missing = sorted(set(scored) - set(pools) - {task.source_lang})
        check(not missing, "adapt", cfg.adapt,
              f"an unlabelled pool of every scored target language; none for {missing}")
    probe = adapted_probe(embed(train), gold(train), embed(dev), gold(dev), task.source_lang,
                          {lang: embed(examples) for lang, examples in pools.items()} if cfg.adapt.active else {},
                          cfg.adapt, cfg.probe_c, cfg.probe_max_iter, cfg.seed)
    ids, golds, pred, langs = [], [], [], []
    for lang, examples in scored.items():
        ids += [ex.id for ex in examples]
        golds += gold(examples).tolist()
        pred += probe.predict(embed(examples), lang).tolist()
        langs += [lang] * len(examples)
    return ProbePredictions(ids, langs, np.asarray(golds), np.asarray(pred), probe)


def frozen_linear_rows(encoder: TextEncoder, task: Task, cfg: EvaluateConfig) -> Scored:
    """Accuracy and macro-F1 of the frozen-linear probe (``frozen_linear_predictions``) per language,
    averaged over targets, and the transfer gap; with ``output.export``, the probe as a classifier."""
    p = frozen_linear_predictions(encoder, task, cfg)
    scores = scores_by_language(p.gold, p.predicted, np.asarray(p.langs))
    summaries = {score: summarize_transfer(per_lang, task.source_lang) for score, per_lang in scores.items()}
    counts = {lang: p.langs.count(lang) for lang in task.langs}
    rows = [{"lang": lang, "n": counts[lang], **{score: scores[score][lang] for score in scores}, "probe_c": p.c}
            for lang in task.langs]
    rows.append({"lang": "avg_target", "n": sum(counts[lang] for lang in task.target_langs),
                 **{score: s.avg_target for score, s in summaries.items()}})
    rows.append({"lang": "transfer_gap", "n": None, **{score: s.transfer_gap for score, s in summaries.items()}})
    return Scored(rows, p.probe.classifier(encoder, task.labels, task.paired, cfg.normalize)
                  if cfg.output.export else None)


def retrieval_languages(cfg: EvaluateConfig, root: Path) -> list[str]:
    """The configured languages of ``cfg.bitext``, or all on disk, without the source language."""
    assert cfg.bitext is not None
    on_disk = sorted(bitext_languages(cfg.bitext, root))
    wanted = [normalize_lang(lang) for lang in cfg.languages] or on_disk
    missing = sorted(set(wanted) - set(on_disk))
    if missing:
        raise ValueError(f"languages {missing} have no {cfg.bitext.name or cfg.bitext.type} data under {root}; "
                         f"available: {', '.join(on_disk)}")
    source = normalize_lang(cfg.source_lang)
    return [lang for lang in wanted if lang != source]


@dataclass(frozen=True)
class Evaluator:
    """A protocol with its data read and checked: the data's name, its languages, how it scores one encoder, and the
    rows its task left out for a label outside the task's (``task.unknown_labels: drop``; ``Task.dropped``)."""

    task: str
    langs: list[str]
    score: Callable[[TextEncoder], Scored]
    dropped: dict[str, int] = field(default_factory=dict)


def _frozen_linear(cfg: EvaluateConfig) -> Evaluator:
    assert cfg.task is not None  # EvaluateConfig checks it for this protocol
    task = load_task(cfg.task, cfg.data.data_dir)
    task.check({"train": [task.source_lang], "dev": [task.source_lang], "test": task.langs,
                **({"pool": task.target_langs} if cfg.adapt.active else {})})
    return Evaluator(task.config.name, list(task.langs), lambda encoder: frozen_linear_rows(encoder, task, cfg),
                     task.dropped)


def _retrieval(rows_of: Callable[[TextEncoder, Path, list[str], EvaluateConfig], list[dict[str, Any]]],
               ) -> Callable[[EvaluateConfig], Evaluator]:
    def prepare(cfg: EvaluateConfig) -> Evaluator:
        root = resolve_data_dir(cfg.data.data_dir)
        langs = retrieval_languages(cfg, root)
        assert cfg.bitext is not None
        return Evaluator(cfg.bitext.name or cfg.bitext.type, langs,
                         lambda encoder: Scored(rows_of(encoder, root, langs, cfg)))
    return prepare


def _bucc(cfg: EvaluateConfig) -> Evaluator:
    assert cfg.mining is not None  # EvaluateConfig checks it for this protocol
    corpus = load_mining(cfg.mining, resolve_data_dir(cfg.data.data_dir))
    sample = bucc_sample(corpus, cfg.data.max_examples)
    return Evaluator(cfg.mining.name, [corpus.src_lang], lambda encoder: Scored(bucc_rows(encoder, sample, cfg)))


# Every protocol by its ``protocol:`` name: reads and checks its data, then scores encoders.
PROTOCOLS: dict[str, Callable[[EvaluateConfig], Evaluator]] = {
    "frozen-linear": _frozen_linear, "tatoeba": _retrieval(tatoeba_rows), "mining": _retrieval(mining_rows),
    "bucc": _bucc,
}


def run_evaluation(cfg: EvaluateConfig) -> dict[str, Any]:
    """Evaluate every model of ``cfg`` with its protocol (``PROTOCOLS``); rows carry the model
    source; with ``output.export``, ``classifiers``: each model's probe as a ``Classifier``. The data is
    read and checked before any model loads, and every model is checked exportable before any is scored."""
    evaluator = PROTOCOLS[cfg.protocol](cfg)
    rows, classifiers = [], {}
    if cfg.output.export:
        for model_cfg in cfg.models:
            try:
                check_exportable(load_encoder(model_cfg))
            except ValueError as e:
                raise ValueError(f"output.export: {model_cfg.source} cannot be exported ({e}); drop it from "
                                 "models") from e
    for model_cfg in cfg.models:
        encoder = load_encoder(model_cfg).to(inference_device())  # a GPU where this process sees one
        scored = evaluator.score(encoder)
        rows += [{"model": model_cfg.source, **row} for row in scored.rows]
        if scored.classifier is not None:
            classifiers[model_cfg.source] = scored.classifier.cpu()
    return {"protocol": cfg.protocol, "task": evaluator.task, "languages": evaluator.langs, "rows": rows,
            **({"dropped rows": dict(evaluator.dropped)} if evaluator.dropped else {}),
            **({"classifiers": classifiers} if cfg.output.export else {})}
