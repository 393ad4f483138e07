"""Parallel data for alignment pretraining: bitext sources, held-apart evaluation, the language mixture.

- the sources' pairs come from ``xlt.tasks.read_bitext`` (line-aligned files such as Tatoeba's, a
  task's train rows joined across languages such as SIB-200's, files of pairs, Hugging Face datasets).
- ``orient``: the pivot language (English) on the source side, so that one dictionary
  direction (MUSE ``en-xx``) serves every pair of a language.
- ``evaluation_pairs`` / ``evaluation_rows``: the held-apart pairs scored after every epoch.
- ``evaluation_sentences`` / ``exclude_sentences``: no training pair may contain a sentence the
  evaluations score (the held-apart pairs, the dev and test splits of ``data.eval_tasks``).
- ``distinct_pivot``: each pivot sentence in one training pair only, for multi-way corpora
  (NTREX-128, SIB-200), whose every English line has a translation in every language.
- ``sampling_probabilities`` / ``mixture_counts`` / ``mix``: language pairs mixed with
  q_i = p_i^α / Σ_j p_j^α, p_i = n_i / Σ_k n_k (Zhang et al. 2023, Eq. 9, after XLM).
- ``load_dictionaries``: the bilingual dictionaries of the mixture's language pairs.

Reading chosen for Eq. 9, which VECO 2.0 states for sampling monolingual languages and XLM for
drawing each batch's language: here it fixes the composition of the training set once. Of N
pairs (``pairs_per_epoch``, default Σ n_i), language pair i gets m_i = q_i·N, rounded by largest
remainder so that Σ m_i = N. A group is drawn without replacement while m_i ≤ n_i
(down-sampling a high-resource pair) and in repeated fresh permutations beyond (up-sampling a
low-resource one), then the whole set is shuffled, so every batch mixes language pairs in
proportion q. Draws depend only on the seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..data import BilingualDictionary, ParallelPair, read_muse
from ..data.sample import sample
from ..tasks import load_task, read_bitext
from .config import PretrainData


def orient(pair: ParallelPair, pivot: str) -> ParallelPair:
    """``pair`` with ``pivot`` as its source language if its target is the pivot; else as it is.
    Every objective here is symmetric in the two sides except where a direction is named
    (word-positioned samples iterate source words, Chen et al. 2022, Alg. 1)."""
    if pair.tgt_lang == pivot and pair.src_lang != pivot:
        return replace(pair, src=pair.tgt, tgt=pair.src, src_lang=pair.tgt_lang, tgt_lang=pair.src_lang)
    return pair


def language_pair(pair: ParallelPair) -> str:
    """``<src>-<tgt>``, the group a pair is mixed in."""
    return f"{pair.src_lang}-{pair.tgt_lang}"


def normalize_sentence(text: str) -> str:
    """What counts as the same sentence when excluding evaluation data: whitespace runs collapsed,
    case folded (a copy differing in spacing or capitalisation is still the evaluation sentence)."""
    return " ".join(text.split()).casefold()


def evaluation_pairs(data: PretrainData, root: str | Path, lang: str, max_pairs: int = 0) -> list[ParallelPair]:
    """The held-apart pairs of ``lang`` (``data.eval_source``), at most ``max_pairs`` (a seeded draw:
    ``xlt.data.sample``; 0 = all)."""
    assert data.eval_source is not None  # PretrainData checks it when there are eval_langs
    return sample(read_bitext(replace(data.eval_source, langs=(lang,)), root, data.pivot_lang), max_pairs,
                  key=lambda p: p.id)


def evaluation_rows(data: PretrainData, root: str | Path) -> list[dict[str, str]]:
    """Rows ``lang, src, tgt`` of the held-apart pairs scored after every epoch (``data.eval_max_pairs``
    of each of ``data.eval_langs``; ``src`` in ``lang``, ``tgt`` in the pivot language)."""
    return [{"lang": lang, "src": p.src, "tgt": p.tgt}
            for lang in data.eval_langs for p in evaluation_pairs(data, root, lang, data.eval_max_pairs)]


def evaluation_sentences(data: PretrainData, root: str | Path) -> set[str]:
    """Normalised sentences of every held-apart pair (both sides) and of the dev and test splits of
    ``data.eval_tasks`` in every language found."""
    out = {normalize_sentence(t) for lang in data.eval_langs for p in evaluation_pairs(data, root, lang)
           for t in (p.src, p.tgt)}
    for task_cfg in data.eval_tasks:
        task = load_task(task_cfg, root)
        out |= {normalize_sentence(ex.text) for role in ("dev", "test") for lang in task.langs
                for ex in task.examples(role, lang)}
    return out


def exclude_sentences(pairs: Sequence[ParallelPair], sentences: set[str]) -> list[ParallelPair]:
    """The pairs none of whose sides is one of ``sentences`` (normalised as ``normalize_sentence``)."""
    return [p for p in pairs if normalize_sentence(p.src) not in sentences and normalize_sentence(p.tgt) not in sentences]


def distinct_pivot(pairs: Sequence[ParallelPair]) -> list[ParallelPair]:
    """``pairs`` keeping each pivot (source-side, after ``orient``) sentence in one pair only.

    Why: a multi-way corpus pairs every English line with each language, so a mixture of its language
    pairs holds the same English sentence several times, and an in-batch contrastive loss (which does
    not deduplicate rows, as the papers write it) takes the copies as negatives of each other. The
    h-th distinct pivot sentence (in reading order) keeps its (h mod m)-th of m pairs, so the
    languages of a multi-way corpus take its lines in turn and keep equal shares."""
    by_sentence: dict[str, list[ParallelPair]] = {}
    for p in pairs:
        by_sentence.setdefault(normalize_sentence(p.src), []).append(p)
    return [group[h % len(group)] for h, group in enumerate(by_sentence.values())]


def sampling_probabilities(counts: Mapping[str, int], alpha: float) -> dict[str, float]:
    """q_i = p_i^α / Σ_j p_j^α with p_i = n_i / Σ_k n_k (Zhang et al. 2023, Eq. 9). α = 1 keeps the data's
    proportions; smaller α moves towards uniform, favouring low-resource pairs."""
    if not counts or any(n < 1 for n in counts.values()):
        raise ValueError(f"counts must be positive numbers of pairs per group, got {dict(counts)}")
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha={alpha} must be in (0, 1]")
    total = sum(counts.values())
    weights = {k: (n / total) ** alpha for k, n in counts.items()}
    norm = sum(weights.values())
    return {k: w / norm for k, w in weights.items()}


def mixture_counts(counts: Mapping[str, int], alpha: float, total: int) -> dict[str, int]:
    """m_i = q_i · ``total``, rounded by largest remainder (ties: the order of ``counts``) so that Σ m_i = total."""
    q = sampling_probabilities(counts, alpha)
    exact = {k: q[k] * total for k in counts}
    out = {k: int(v) for k, v in exact.items()}
    by_remainder = sorted(counts, key=lambda k: -(exact[k] - out[k]))
    for k in by_remainder[: total - sum(out.values())]:
        out[k] += 1
    return out


def draw(items: Sequence[Any], m: int, rng: random.Random) -> list[Any]:
    """``m`` items: without replacement up to ``len(items)``, then further fresh permutations."""
    out: list[Any] = []
    while len(out) < m:
        order = list(items)
        rng.shuffle(order)
        out.extend(order[: m - len(out)])
    return out


@dataclass(frozen=True)
class Mixture:
    """The training pairs and how they were drawn: per language pair n_i, q_i and m_i."""

    pairs: list[ParallelPair]
    available: dict[str, int]  # n_i
    probabilities: dict[str, float]  # q_i
    drawn: dict[str, int]  # m_i
    excluded: int  # pairs dropped for containing an evaluation sentence

    def rows(self) -> list[dict[str, Any]]:
        """One table row per language pair."""
        total = sum(self.available.values())
        return [{"pair": k, "n": n, "p": n / total, "q": self.probabilities[k], "drawn": self.drawn[k]}
                for k, n in self.available.items()]


def mix(groups: Mapping[str, Sequence[ParallelPair]], alpha: float, total: int = 0, seed: int = 0) -> tuple[
        list[ParallelPair], dict[str, float], dict[str, int]]:
    """``total`` pairs (0 = Σ n_i) drawn from the language-pair ``groups`` with Eq. 9's q_i, shuffled.
    Returns (pairs, q, m)."""
    counts = {k: len(v) for k, v in groups.items() if v}
    total = total or sum(counts.values())
    q = sampling_probabilities(counts, alpha)
    m = mixture_counts(counts, alpha, total)
    rng = random.Random(seed)
    pairs = [p for k in counts for p in draw(groups[k], m[k], rng)]
    rng.shuffle(pairs)
    return pairs, q, m


def build_mixture(data: PretrainData, root: str | Path, seed: int = 0) -> Mixture:
    """Read, orient, clean and mix the training pairs of ``data`` (see ``PretrainData``).

    Fails if a pair is in a held-apart evaluation language, or if nothing is left.
    """
    pairs = [orient(p, data.pivot_lang) for source in data.sources for p in read_bitext(source, root, data.pivot_lang)]
    held = sorted({lang for p in pairs for lang in (p.src_lang, p.tgt_lang)} & set(data.eval_langs))
    if held:
        raise ValueError(f"data.eval_langs {held} are held apart for evaluation, but data.sources have pairs in "
                         f"them; remove those languages from the sources or from eval_langs")
    excluded = 0
    if data.exclude_eval_sentences:
        kept = exclude_sentences(pairs, evaluation_sentences(data, root))
        excluded, pairs = len(pairs) - len(kept), kept
    if data.distinct_pivot:
        pairs = distinct_pivot(pairs)
    groups: dict[str, list[ParallelPair]] = {}
    for p in pairs:
        groups.setdefault(language_pair(p), []).append(p)
    groups = {k: sample(v, data.max_pairs, key=lambda p: p.id) for k, v in sorted(groups.items())}
    if not groups:
        raise ValueError(f"no training pairs left from {len(data.sources)} source(s) after excluding {excluded} "
                         "containing evaluation sentences")
    mixed, q, m = mix(groups, data.alpha, data.pairs_per_epoch, seed)
    return Mixture(mixed, {k: len(v) for k, v in groups.items()}, q, m, excluded)


def invert(dictionary: BilingualDictionary) -> BilingualDictionary:
    """The same word pairs read the other way."""
    return BilingualDictionary(((t, s) for s, t in dictionary.pairs()), dictionary.tgt_lang, dictionary.src_lang)


def load_dictionaries(directory: str | Path, directions: Iterable[tuple[str, str]]) -> list[BilingualDictionary]:
    """A dictionary per (src, tgt) direction from MUSE files ``<src>-<tgt>.txt`` in ``directory``
    (or ``<tgt>-<src>.txt`` read the other way), labelled with the directions' own codes.

    Reading for Chinese: MUSE's ``en-zh`` is in Traditional characters (``zh-Hant``); it serves
    Simplified ``zh`` pairs (SIB-200, Tatoeba's ``cmn``) as well, relabelled, and matches fewer
    of their words (characters shared by both scripts still match).
    """
    directory = Path(directory)
    out = []
    for src, tgt in sorted(set(directions)):
        names = [f"{src.split('-')[0]}-{tgt.split('-')[0]}.txt", f"{tgt.split('-')[0]}-{src.split('-')[0]}.txt"]
        if (directory / names[0]).is_file():
            out.append(read_muse(directory / names[0], src, tgt))
        elif (directory / names[1]).is_file():
            out.append(invert(read_muse(directory / names[1], tgt, src)))
        else:
            present = ", ".join(p.name for p in sorted(directory.glob("*.txt"))) or "none"
            raise FileNotFoundError(f"no dictionary for {src}-{tgt}: neither {names[0]} nor {names[1]} in {directory} "
                                    f"(present: {present}); the recipe aligns words with one")
    return out
