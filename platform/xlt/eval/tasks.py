"""Evaluation tasks over the offline benchmarks: Tatoeba retrieval and SIB-200 frozen-linear probing.

``run_evaluation(cfg)`` is what ``jobs/evaluate.py`` runs: for each configured model it embeds
the task's sentences once, scores every language, and returns one table row per model and
language. Nothing here is trained except the frozen-linear probe's logistic regression.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..config import check
from ..data import read_sib200, read_tatoeba, resolve_data_dir, sib200_labels, sib200_languages
from ..data.tatoeba import tatoeba_languages
from ..text.languages import normalize_lang
from ..models import EncoderConfig, TextEncoder, load_encoder
from .classification import summarize_transfer
from .retrieval import mine_bitext, tatoeba_accuracy

Task = Literal["tatoeba", "sib200", "mining"]


@dataclass(frozen=True)
class EvaluateConfig:
    """What ``jobs/evaluate.py`` evaluates. Empty ``languages`` means every language on disk."""

    task: Task = "sib200"
    mode: Literal["frozen-linear"] = "frozen-linear"  # the SIB-200 protocol; other tasks ignore it
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


def _limit(items: list, cfg: EvaluateConfig) -> list:
    """At most ``max_examples`` items, evenly spaced: published splits are often sorted by label."""
    if not cfg.max_examples or len(items) <= cfg.max_examples:
        return items
    return items[:: len(items) // cfg.max_examples][: cfg.max_examples]


def _embed(encoder: TextEncoder, texts: list[str], cfg: EvaluateConfig) -> np.ndarray:
    return encoder.encode(texts, batch_size=cfg.batch_size, normalize=cfg.normalize, progress=cfg.progress)


def tatoeba_rows(encoder: TextEncoder, root: Path, langs: list[str], cfg: EvaluateConfig) -> list[dict[str, Any]]:
    """Top-1 retrieval accuracy xx→en, en→xx and their mean for each language."""
    rows = []
    for lang in langs:
        pairs = _limit(read_tatoeba(root, lang), cfg)
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
    all_pairs = {lang: _limit(read_tatoeba(root, lang), cfg) for lang in langs}
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


def sib200_frozen_linear_rows(encoder: TextEncoder, root: Path, langs: list[str], cfg: EvaluateConfig) -> list[dict[str, Any]]:
    """Logistic regression on frozen embeddings of the source train split; accuracy on every test split."""
    from sklearn.linear_model import LogisticRegression

    labels = sib200_labels(root)

    def features(lang: str, split: str) -> tuple[np.ndarray, np.ndarray]:
        examples = _limit(read_sib200(root, lang, split), cfg)
        return _embed(encoder, [ex.text for ex in examples], cfg), np.array([labels.index(ex.label) for ex in examples])

    x_train, y_train = features(cfg.source_lang, "train")
    x_dev, y_dev = features(cfg.source_lang, "dev")
    probes = [LogisticRegression(C=c, max_iter=cfg.probe_max_iter, random_state=cfg.seed).fit(x_train, y_train)
              for c in sorted(cfg.probe_c)]
    dev_acc = [float(np.mean(p.predict(x_dev) == y_dev)) for p in probes]
    probe = probes[int(np.argmax(dev_acc))]  # argmax takes the first (smallest C) of ties
    per_lang, counts = {}, {}
    for lang in langs:
        x_test, y_test = features(lang, "test")
        per_lang[lang] = float(np.mean(probe.predict(x_test) == y_test))
        counts[lang] = len(y_test)
    summary = summarize_transfer(per_lang, source_lang=cfg.source_lang)
    rows = [{"lang": lang, "n": counts[lang], "acc": acc, "probe_c": probe.C} for lang, acc in per_lang.items()]
    rows.append({"lang": "avg_target", "n": sum(n for l, n in counts.items() if l != cfg.source_lang),
                 "acc": summary.avg_target})
    rows.append({"lang": "transfer_gap", "n": None, "acc": summary.transfer_gap})
    return rows


def task_languages(cfg: EvaluateConfig, root: Path) -> list[str]:
    """The configured languages, or all on disk; the source language first for SIB-200."""
    on_disk = sib200_languages(root) if cfg.task == "sib200" else tatoeba_languages(root)
    wanted = [normalize_lang(l) for l in cfg.languages] or on_disk
    missing = sorted(set(wanted) - set(on_disk))
    if missing:
        raise ValueError(f"languages {missing} have no {cfg.task} data under {root}; available: {', '.join(on_disk)}")
    source = normalize_lang(cfg.source_lang)
    if cfg.task == "sib200":
        return [source] + [l for l in wanted if l != source]
    return [l for l in wanted if l != source]


def run_evaluation(cfg: EvaluateConfig) -> dict[str, Any]:
    """Evaluate every model of ``cfg`` on its task; rows carry the model source."""
    root = resolve_data_dir(cfg.data_dir)
    langs = task_languages(cfg, root)
    score = {"tatoeba": tatoeba_rows, "mining": mining_rows, "sib200": sib200_frozen_linear_rows}[cfg.task]
    rows = []
    for model_cfg in cfg.models:
        encoder = load_encoder(model_cfg)
        rows += [{"model": model_cfg.source, **row} for row in score(encoder, root, langs, cfg)]
    return {"task": cfg.task, "mode": cfg.mode if cfg.task == "sib200" else None, "languages": langs, "rows": rows}
