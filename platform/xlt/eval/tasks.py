"""Evaluation protocols of frozen encoders: a frozen-linear probe on any task, Tatoeba retrieval, mining.

``run_evaluation(cfg)`` is what ``jobs/evaluate.py`` runs: for each configured model it embeds
the sentences once, scores every language, and returns one table row per model and language.
Nothing here is trained except the frozen-linear probe's logistic regression.

- ``frozen-linear``: logistic regression on the frozen embeddings of the task's (``xlt.tasks``)
  source-language train split, its inverse regularisation C chosen on the source dev split;
  accuracy and macro-F1 on every language's test split. Sentence pairs are embedded as the
  encoder embeds pairs (``xlt.models.encoder``: jointly, or ``[u; v; |u−v|; u*v]``).
- ``tatoeba``: top-1 retrieval both ways; ``mining``: BUCC-style mining on Tatoeba with distractors.
- ``bucc``: mining on the real BUCC 2018 zh-en corpus (``bucc_rows`` states the threshold protocol).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..config import check
from ..data import BuccCorpus, read_bucc, read_tatoeba, resolve_data_dir
from ..data.tatoeba import tatoeba_languages
from ..text.languages import normalize_lang
from ..models import EncoderConfig, TextEncoder, load_encoder
from ..models.encoder import Item
from ..tasks import Task, TaskConfig, evenly_spaced, load_task
from .classification import scores_by_language, summarize_transfer
from .retrieval import MiningResult, mine_bitext, tatoeba_accuracy

Protocol = Literal["frozen-linear", "tatoeba", "mining", "bucc"]


@dataclass(frozen=True)
class EvaluateConfig:
    """What ``jobs/evaluate.py`` evaluates. ``task``: the classification task of ``frozen-linear``
    (its languages); ``languages``: those of Tatoeba and mining (empty = every one on disk)."""

    protocol: Protocol = "frozen-linear"
    task: TaskConfig | None = None
    models: tuple[EncoderConfig, ...] = (
        EncoderConfig(source="bundled:multilingual-e5-small"),
        EncoderConfig(source="bundled:use-multilingual-v3"),
    )
    data_dir: str | None = None  # else $XLT_DATA_DIR
    languages: tuple[str, ...] = ()
    source_lang: str = "en"
    batch_size: int = 64
    max_examples: int = 0  # per language and split; 0 = all (smoke runs use a few)
    # Inverse L2 strength (scikit-learn's C) of the logistic-regression probe: the value with the
    # best source-language dev accuracy is used (ties -> the stronger regularisation, smaller C).
    probe_c: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0)
    probe_max_iter: int = 2000
    normalize: bool = True  # L2-normalise embeddings before the probe / retrieval
    progress: bool = True  # progress bars (stderr) while encoding
    mining_k: int = 4  # neighbourhood of the ratio margin (Artetxe & Schwenk 2019)
    seed: int = 0
    output_dir: str = "results/evaluate"

    def __post_init__(self) -> None:
        check(len(self.models) >= 1, "models", self.models, "at least one model")
        check(self.batch_size >= 1, "batch_size", self.batch_size, "an integer >= 1")
        check(self.max_examples >= 0, "max_examples", self.max_examples, "0 (all) or a positive integer")
        check(len(self.probe_c) >= 1 and all(c > 0 for c in self.probe_c), "probe_c", self.probe_c,
              "a list of positive numbers")
        for lang in (self.source_lang, *self.languages):
            normalize_lang(lang)  # raises naming the code and the accepted forms
        check(self.protocol != "frozen-linear" or self.task is not None, "task", self.task,
              "a task for the frozen-linear probe, e.g. task: {include: tasks/xnli.yaml} (configs/tasks/)")


def _embed(encoder: TextEncoder, texts: list[Item], cfg: EvaluateConfig) -> np.ndarray:
    return encoder.encode(texts, batch_size=cfg.batch_size, normalize=cfg.normalize, progress=cfg.progress)


def tatoeba_rows(encoder: TextEncoder, root: Path, langs: list[str], cfg: EvaluateConfig) -> list[dict[str, Any]]:
    """Top-1 retrieval accuracy xx→en, en→xx and their mean for each language."""
    rows = []
    for lang in langs:
        pairs = evenly_spaced(read_tatoeba(root, lang), cfg.max_examples)
        result = tatoeba_accuracy(_embed(encoder, [p.src for p in pairs], cfg), _embed(encoder, [p.tgt for p in pairs], cfg))
        rows.append({"lang": lang, "n": result.n, "xx->en": result.src_to_tgt, "en->xx": result.tgt_to_src,
                     "mean": result.mean})
    rows.append({"lang": "avg", "n": sum(r["n"] for r in rows),
                 **{k: float(np.mean([r[k] for r in rows])) for k in ("xx->en", "en->xx", "mean")}})
    return rows


def mining_rows(encoder: TextEncoder, root: Path, langs: list[str], cfg: EvaluateConfig) -> list[dict[str, Any]]:
    """BUCC-style mining on Tatoeba: each language's sentences against its English side plus distractors.

    BUCC's comparable corpora are not available offline; Tatoeba stands in. The English side of
    the *next* language pair (different sentences; exact copies of a gold sentence removed) is
    appended as unpaired English text, so that, as in BUCC, most candidates have no true partner.
    """
    all_pairs = {lang: evenly_spaced(read_tatoeba(root, lang), cfg.max_examples) for lang in langs}
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
                 "dev is split by source sentence: even rows calibrate (the margin threshold with the best F1 "
                 "there), odd rows are held out (F1 at that threshold). Each half's source sentences are mined "
                 "against all target sentences: forward candidates (each source's best target by ratio margin, "
                 "k={k}). Oracle rows choose the threshold on the rows they score.")


def _subset(corpus: BuccCorpus, rows: list[int]) -> list[tuple[int, int]]:
    """Gold pairs of the source ``rows``, re-indexed to positions in ``rows``."""
    position = {row: i for i, row in enumerate(rows)}
    return [(position[s], t) for s, t in corpus.gold if s in position]


def bucc_rows(encoder: TextEncoder, root: Path, cfg: EvaluateConfig) -> list[dict[str, Any]]:
    """Precision / recall / F1 of mined zh-en pairs (``BUCC_PROTOCOL``): held out at the threshold
    chosen on the calibration half, and the oracle of each part. ``max_examples`` (smoke) keeps the
    sentences of the first ``max_examples`` gold pairs and as many others per side."""
    corpus = read_bucc(root, "zh", "en", "dev")
    src_rows, tgt_rows = list(range(len(corpus.src))), list(range(len(corpus.tgt)))
    if cfg.max_examples:
        kept = corpus.gold[: cfg.max_examples]
        src_rows = sorted({s for s, _ in kept} | set(range(cfg.max_examples)))
        tgt_rows = sorted({t for _, t in kept} | set(range(cfg.max_examples)))
        tgt_pos = {t: i for i, t in enumerate(tgt_rows)}
        corpus = dataclasses.replace(corpus, src=tuple(corpus.src[i] for i in src_rows),
                                     tgt=tuple(corpus.tgt[i] for i in tgt_rows),
                                     gold=tuple((src_rows.index(s), tgt_pos[t]) for s, t in kept))
    src, tgt = _embed(encoder, list(corpus.src), cfg), _embed(encoder, list(corpus.tgt), cfg)
    halves = {"calibration": list(range(0, len(corpus.src), 2)), "held-out": list(range(1, len(corpus.src), 2))}

    def mine(rows: list[int], threshold: float | None = None) -> MiningResult:
        return mine_bitext(src[rows], tgt, _subset(corpus, rows), k=cfg.mining_k, mode="forward",
                           threshold=threshold)

    calibration = mine(halves["calibration"])
    results = {"held-out (threshold from the calibration half)": mine(halves["held-out"], calibration.threshold),
               "oracle: held-out half": mine(halves["held-out"]), "oracle: calibration half": calibration,
               "oracle: all of dev": mine(list(range(len(corpus.src))))}
    protocol = BUCC_PROTOCOL.format(k=cfg.mining_k)
    return [{"lang": "zh-en", "part": part, "n_src": int(r.n_candidates), "n_tgt": len(corpus.tgt), "n_gold": r.n_gold,
             "precision": r.precision, "recall": r.recall, "f1": r.f1, "threshold": r.threshold, "protocol": protocol}
            for part, r in results.items()]


def frozen_linear_rows(encoder: TextEncoder, task: Task, cfg: EvaluateConfig) -> list[dict[str, Any]]:
    """Logistic regression on frozen embeddings of the task's source train split (C chosen on the
    source dev split); accuracy and macro-F1 on every language's test split."""
    from sklearn.linear_model import LogisticRegression

    def features(role: str, lang: str) -> tuple[np.ndarray, np.ndarray]:
        examples = task.examples(role, lang, cfg.max_examples)
        items = [(ex.text, ex.text_pair) if task.paired else ex.text for ex in examples]
        return _embed(encoder, items, cfg), np.array([task.labels.index(ex.label) for ex in examples])

    x_train, y_train = features("train", task.source_lang)
    x_dev, y_dev = features("dev", task.source_lang)
    probes = [LogisticRegression(C=c, max_iter=cfg.probe_max_iter, random_state=cfg.seed).fit(x_train, y_train)
              for c in sorted(cfg.probe_c)]
    dev_acc = [float(np.mean(p.predict(x_dev) == y_dev)) for p in probes]
    probe = probes[int(np.argmax(dev_acc))]  # argmax takes the first (smallest C) of ties
    gold, pred, langs = [], [], []
    for lang in task.langs:
        x_test, y_test = features("test", lang)
        gold += y_test.tolist()
        pred += probe.predict(x_test).tolist()
        langs += [lang] * len(y_test)
    scores = scores_by_language(np.asarray(gold), np.asarray(pred), np.asarray(langs))
    summaries = {score: summarize_transfer(per_lang, task.source_lang) for score, per_lang in scores.items()}
    counts = {lang: langs.count(lang) for lang in task.langs}
    rows = [{"lang": lang, "n": counts[lang], **{score: scores[score][lang] for score in scores}, "probe_c": probe.C}
            for lang in task.langs]
    rows.append({"lang": "avg_target", "n": sum(counts[lang] for lang in task.target_langs),
                 **{score: s.avg_target for score, s in summaries.items()}})
    rows.append({"lang": "transfer_gap", "n": None, **{score: s.transfer_gap for score, s in summaries.items()}})
    return rows


def retrieval_languages(cfg: EvaluateConfig, root: Path) -> list[str]:
    """The configured Tatoeba languages, or all on disk, without the source language."""
    on_disk = tatoeba_languages(root)
    wanted = [normalize_lang(lang) for lang in cfg.languages] or on_disk
    missing = sorted(set(wanted) - set(on_disk))
    if missing:
        raise ValueError(f"languages {missing} have no Tatoeba data under {root}; available: {', '.join(on_disk)}")
    source = normalize_lang(cfg.source_lang)
    return [lang for lang in wanted if lang != source]


def run_evaluation(cfg: EvaluateConfig) -> dict[str, Any]:
    """Evaluate every model of ``cfg`` with its protocol; rows carry the model source. The data is
    read and checked before any model loads."""
    if cfg.protocol == "frozen-linear":
        assert cfg.task is not None
        task = load_task(cfg.task, cfg.data_dir)
        task.check({"train": [task.source_lang], "dev": [task.source_lang], "test": task.langs})
        langs, name = list(task.langs), task.config.name
        score = lambda encoder: frozen_linear_rows(encoder, task, cfg)  # noqa: E731
    else:
        root = resolve_data_dir(cfg.data_dir)
        langs, name = retrieval_languages(cfg, root), "tatoeba"
        if cfg.protocol == "bucc":
            langs, name = ["zh"], "bucc2018"
            read_bucc(root, "zh", "en", "dev")  # bad input fails before a model loads
            score = lambda encoder: bucc_rows(encoder, root, cfg)  # noqa: E731
        else:
            rows_of = {"tatoeba": tatoeba_rows, "mining": mining_rows}[cfg.protocol]
            score = lambda encoder: rows_of(encoder, root, langs, cfg)  # noqa: E731
    rows = []
    for model_cfg in cfg.models:
        encoder = load_encoder(model_cfg)
        rows += [{"model": model_cfg.source, **row} for row in score(encoder)]
    return {"protocol": cfg.protocol, "task": name, "languages": langs, "rows": rows}
