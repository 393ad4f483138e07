"""Cross-lingual sentence retrieval with faiss: Tatoeba accuracy and BUCC-style bitext mining.

Everything goes through one exact nearest-neighbour helper, :func:`knn` (faiss ``IndexFlatIP``
over L2-normalised float32 vectors, i.e. cosine similarity), searched on a GPU where faiss was built
with GPU support (the ``gpu`` extra, ``faiss-gpu-cu12``) and sees one, on the CPU otherwise
(:func:`flat_index`): the same exact search, so the same neighbours either way (up to float rounding
of tied scores).

- Tatoeba (Artetxe & Schwenk 2019b; XTREME, Hu et al. 2020): row ``i`` of the source set is
  the translation of row ``i`` of the target set; report top-1 accuracy of retrieving it, in
  both directions, and their mean.
- BUCC mining (Artetxe & Schwenk 2019a, "Margin-based Parallel Corpus Mining with Multilingual
  Sentence Embeddings", ACL; the protocol XTREME uses, via LASER's ``mine_bitexts.py`` and
  ``bucc.py``): score pairs with the ratio margin

      margin(x, y) = cos(x, y) / ( Σ_{z∈NN_k(x)} cos(x, z) / 2k + Σ_{z∈NN_k(y)} cos(y, z) / 2k )

  where NN_k(x) are the k nearest neighbours of x among the *other* language's sentences
  (k = 4), mine one candidate per sentence (forward, backward, their intersection, or "max":
  their union made one-to-one), and report precision / recall / F1 at the margin threshold
  that maximises F1 against the gold pairs (an oracle), or at a threshold chosen on other data
  (:func:`f1_at_threshold`). The margin discounts "hub" sentences that are close
  to everything, which raw cosine cannot.

When a set has fewer than k sentences, k is clipped to its size and the neighbourhood mean is
taken over the neighbours that exist (as LASER does); :func:`mine_bitext` says so in its
``protocol`` string.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, get_args

import numpy as np

from ..extras import require

Metric = Literal["cosine", "dot"]
METRICS: tuple[str, ...] = get_args(Metric)
MiningMode = Literal["forward", "backward", "intersection", "max"]
MINING_MODES: tuple[str, ...] = get_args(MiningMode)

# Rows gathered per step when scoring arbitrary pairs: bounds the float64 copy to ~8192 x dim.
_PAIR_CHUNK = 8192


# ---------------------------------------------------------------------------------------------
# Input checks and the one nearest-neighbour helper
# ---------------------------------------------------------------------------------------------


def _as_embeddings(a: object, name: str, cosine: bool) -> np.ndarray:
    """``a`` as a C-contiguous float32 ``(n, dim)`` array, or an error naming ``name``."""
    try:
        with np.errstate(over="ignore"):  # overflow to inf is reported below, with the row
            arr = np.ascontiguousarray(np.asarray(a, dtype=np.float32))
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError(
            f"{name} must be a numeric array of shape (n, dim); cannot convert {type(a).__name__}: {e}"
        ) from e
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n, dim); got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}): need at least one row and one dimension")
    # Checked after the float32 cast: a float64 value beyond ~3.4e38 becomes inf here.
    bad_rows = np.flatnonzero(~np.isfinite(arr).all(axis=1))
    if bad_rows.size:
        raise ValueError(
            f"{name} has NaN or inf (after casting to float32) in {bad_rows.size} of {arr.shape[0]} rows, "
            f"first at row {bad_rows[0]}; fix the encoder output (e.g. fp16 overflow) before retrieval"
        )
    if cosine:
        zero_rows = np.flatnonzero(~np.any(arr != 0, axis=1))
        if zero_rows.size:
            raise ValueError(
                f"{name} has {zero_rows.size} all-zero rows (first at row {zero_rows[0]}): cosine "
                "similarity is undefined for them"
            )
    return arr


def _check_same_dim(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"{name_a} and {name_b} must have the same embedding dimension; got {name_a} {a.shape} "
            f"and {name_b} {b.shape}"
        )


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k={k!r} is not valid: expected an integer >= 1")
    return int(k)


def _unit(a: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (a new array; faiss.normalize_L2 would modify the caller's)."""
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def faiss_gpus(faiss) -> int:
    """The GPUs ``faiss`` can search on: none for a CPU-only build (``faiss-cpu`` has no
    ``StandardGpuResources``) or a machine without a visible GPU."""
    return faiss.get_num_gpus() if hasattr(faiss, "StandardGpuResources") else 0


def flat_index(dim: int):
    """An exact inner-product index of ``dim``: ``GpuIndexFlatIP`` on the first GPU when faiss has
    GPU support and a GPU (module docstring), else ``IndexFlatIP``."""
    # Imported here: heavy, and only retrieval needs it.
    faiss = require("faiss", "retrieval", "on a GPU node, the gpu extra's faiss-gpu-cu12")
    if faiss_gpus(faiss):
        return faiss.GpuIndexFlatIP(faiss.StandardGpuResources(), dim)
    return faiss.IndexFlatIP(dim)


def knn(
    queries: np.ndarray, keys: np.ndarray, k: int, metric: Metric = "cosine"
) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest ``keys`` of every query, by cosine (default) or raw inner product.

    Uses faiss ``IndexFlatIP`` (brute force, no approximation; on a GPU: ``flat_index``) on float32 copies; for
    ``"cosine"`` the copies are L2-normalised first, so inner product equals cosine.

    Args:
        queries: ``(n_q, dim)`` embeddings.
        keys: ``(n_k, dim)`` embeddings.
        k: neighbours per query; clipped to ``n_k`` when larger (faiss would pad with -1).
        metric: ``"cosine"`` or ``"dot"`` (for models trained with an unnormalised dot product).

    Returns:
        ``(scores, indices)``, both ``(n_q, min(k, n_k))``: similarities (float32) in
        decreasing order and the matching rows of ``keys`` (int64).
    """
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r} is not valid: expected one of {', '.join(METRICS)}")
    k = _check_k(k)
    cosine = metric == "cosine"
    q = _as_embeddings(queries, "queries", cosine)
    keys_ = _as_embeddings(keys, "keys", cosine)
    _check_same_dim(q, keys_, "queries", "keys")
    if cosine:
        q, keys_ = _unit(q), _unit(keys_)
    index = flat_index(keys_.shape[1])
    index.add(keys_)
    scores, indices = index.search(q, min(k, keys_.shape[0]))
    return scores, indices.astype(np.int64, copy=False)


# ---------------------------------------------------------------------------------------------
# Tatoeba
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalResult:
    """Top-1 retrieval accuracy over aligned sets (row i of one is the translation of row i
    of the other).

    Attributes:
        src_to_tgt: fraction of source rows whose nearest target is their own translation.
        tgt_to_src: the same from the target side.
        mean: ``(src_to_tgt + tgt_to_src) / 2``.
        n: number of aligned pairs.
    """

    src_to_tgt: float
    tgt_to_src: float
    mean: float
    n: int


def tatoeba_hits(src_emb: np.ndarray, tgt_emb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per query, whether its nearest neighbour by cosine is its own translation: ``(src_hits,
    tgt_hits)``, boolean arrays of length n, for src→tgt and tgt→src (``tatoeba_accuracy`` averages
    them; a paired test over queries needs them one by one)."""
    src = _as_embeddings(src_emb, "src_emb", cosine=True)
    tgt = _as_embeddings(tgt_emb, "tgt_emb", cosine=True)
    _check_same_dim(src, tgt, "src_emb", "tgt_emb")
    if src.shape[0] != tgt.shape[0]:
        raise ValueError(
            f"src_emb has {src.shape[0]} rows but tgt_emb has {tgt.shape[0]}: Tatoeba needs aligned "
            "sets where row i of each is a translation of the other"
        )
    gold = np.arange(src.shape[0])
    _, src_nn = knn(src, tgt, 1)  # (n, 1)
    _, tgt_nn = knn(tgt, src, 1)
    return src_nn[:, 0] == gold, tgt_nn[:, 0] == gold


def tatoeba_accuracy(src_emb: np.ndarray, tgt_emb: np.ndarray) -> RetrievalResult:
    """Tatoeba-style top-1 cosine retrieval accuracy in both directions (XTREME, Hu et al. 2020).

    ``src_emb[i]`` and ``tgt_emb[i]`` must embed a sentence and its translation. XTREME reports
    the xx→en direction; both are returned. Exact duplicates among the candidates tie, and faiss
    then returns one of them, as any nearest-neighbour evaluation would.
    """
    src_hits, tgt_hits = tatoeba_hits(src_emb, tgt_emb)
    s2t, t2s = float(np.mean(src_hits)), float(np.mean(tgt_hits))
    return RetrievalResult(src_to_tgt=s2t, tgt_to_src=t2s, mean=(s2t + t2s) / 2, n=len(src_hits))


# ---------------------------------------------------------------------------------------------
# Ratio margin (Artetxe & Schwenk 2019)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Neighbourhoods:
    """Both kNN directions between x and y, and each sentence's mean neighbour cosine."""

    x2y_sim: np.ndarray  # (n_x, k_xy) cos of x_i to its nearest y's, decreasing
    x2y_idx: np.ndarray  # (n_x, k_xy)
    y2x_sim: np.ndarray  # (n_y, k_yx)
    y2x_idx: np.ndarray  # (n_y, k_yx)
    x_mean: np.ndarray  # (n_x,) Σ_{z∈NN_k(x_i)} cos(x_i, z) / k_xy, float64
    y_mean: np.ndarray  # (n_y,)

    @property
    def k_xy(self) -> int:
        return self.x2y_idx.shape[1]

    @property
    def k_yx(self) -> int:
        return self.y2x_idx.shape[1]


def _neighbourhoods(x: np.ndarray, y: np.ndarray, k: int) -> _Neighbourhoods:
    x2y_sim, x2y_idx = knn(x, y, k)
    y2x_sim, y2x_idx = knn(y, x, k)
    return _Neighbourhoods(
        x2y_sim=x2y_sim,
        x2y_idx=x2y_idx,
        y2x_sim=y2x_sim,
        y2x_idx=y2x_idx,
        x_mean=x2y_sim.astype(np.float64).mean(axis=1),
        y_mean=y2x_sim.astype(np.float64).mean(axis=1),
    )


def _ratio_margin(cos: np.ndarray, own_mean: np.ndarray, other_mean: np.ndarray) -> np.ndarray:
    """cos / ((own_mean + other_mean) / 2): the formula's two Σ/2k terms, with means over the
    (possibly clipped) neighbourhoods."""
    denom = (own_mean + other_mean) / 2
    if np.any(denom <= 0):
        # A ratio with a non-positive denominator flips or explodes the ranking; it only happens
        # when a sentence's nearest neighbours are orthogonal or opposite to it.
        raise ValueError(
            f"ratio margin undefined for {int(np.count_nonzero(denom <= 0))} pair(s): the mean cosine "
            f"of their sentences to their k nearest neighbours is <= 0 (lowest {float(denom.min()):.3g}); "
            "the ratio margin assumes embeddings whose nearest neighbours are positively similar, "
            "as sentence encoders give (not mean-centred or random vectors)"
        )
    return cos.astype(np.float64) / denom


@dataclass(frozen=True, eq=False)
class MarginCandidates:
    """Each x row's candidate y rows with their ratio margins.

    Attributes:
        indices: ``(n_x, k_xy)`` int64: the ``k_xy`` nearest y rows of each x row by cosine,
            reordered by decreasing margin, so column 0 is the best candidate.
        scores: ``(n_x, k_xy)`` float64 ratio margins of those pairs.
        k_xy: neighbourhood size used for x rows, ``min(k, n_y)``.
        k_yx: neighbourhood size used for y rows, ``min(k, n_x)``.
    """

    indices: np.ndarray = field(repr=False)
    scores: np.ndarray = field(repr=False)
    k_xy: int
    k_yx: int


def _candidates(
    sim: np.ndarray, idx: np.ndarray, own_mean: np.ndarray, other_mean: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Margins of each query's kNN candidates, rows sorted by decreasing margin."""
    margins = _ratio_margin(sim, own_mean[:, None], other_mean[idx])  # (n, k)
    # The best by margin need not be the best by cosine: the margin demotes hub candidates.
    order = np.argsort(-margins, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(margins, order, axis=1)


def margin_scores(x: np.ndarray, y: np.ndarray, k: int = 4) -> MarginCandidates:
    """Ratio-margin scores (Artetxe & Schwenk 2019; k = 4 there) of each x row's k nearest y rows.

    Args:
        x: ``(n_x, dim)`` embeddings of one language.
        y: ``(n_y, dim)`` embeddings of the other.
        k: neighbourhood size, both for the candidates and for the margin's neighbour means;
            clipped per direction to the size of the searched set.
    """
    k = _check_k(k)
    xa = _as_embeddings(x, "x", cosine=True)
    ya = _as_embeddings(y, "y", cosine=True)
    _check_same_dim(xa, ya, "x", "y")
    nb = _neighbourhoods(xa, ya, k)
    indices, scores = _candidates(nb.x2y_sim, nb.x2y_idx, nb.x_mean, nb.y_mean)
    return MarginCandidates(indices=indices, scores=scores, k_xy=nb.k_xy, k_yx=nb.k_yx)


def _as_pairs(pairs: object, n_x: int, n_y: int, name: str) -> np.ndarray:
    """``pairs`` (iterable of (i, j) or an ``(m, 2)`` array) as an int64 ``(m, 2)`` array."""
    arr = np.asarray(pairs if isinstance(pairs, np.ndarray) else list(pairs))
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iu":
        raise ValueError(
            f"{name} must be integer (i, j) pairs, e.g. a set of tuples or an (m, 2) int array; "
            f"got an array of shape {arr.shape} and dtype {arr.dtype}"
        )
    arr = arr.astype(np.int64)
    out = (arr[:, 0] < 0) | (arr[:, 0] >= n_x) | (arr[:, 1] < 0) | (arr[:, 1] >= n_y)
    if out.any():
        first = tuple(int(v) for v in arr[np.flatnonzero(out)[0]])
        raise ValueError(
            f"{name} has {int(out.sum())} pairs outside the embeddings (first {first}); valid source "
            f"rows are 0..{n_x - 1} and target rows 0..{n_y - 1}"
        )
    return arr


def _rowwise_cos(xu: np.ndarray, yu: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """cos(x_i, y_j) for aligned index arrays, in float64, a chunk of rows at a time."""
    out = np.empty(len(i), dtype=np.float64)
    for start in range(0, len(i), _PAIR_CHUNK):
        sl = slice(start, start + _PAIR_CHUNK)
        a = xu[i[sl]].astype(np.float64)  # (chunk, dim)
        b = yu[j[sl]].astype(np.float64)
        out[sl] = np.einsum("nd,nd->n", a, b)
    return out


def score_pairs(x: np.ndarray, y: np.ndarray, pairs: Iterable[tuple[int, int]], k: int = 4) -> np.ndarray:
    """Ratio margin of arbitrary ``(i, j)`` pairs (x row i, y row j), e.g. the gold pairs.

    The neighbour means are those of :func:`margin_scores` with the same ``k``, so a pair that
    is also a candidate gets the same score (up to float32 rounding in faiss).

    Returns:
        ``(m,)`` float64 margins, in the order of ``pairs``.
    """
    k = _check_k(k)
    xa = _as_embeddings(x, "x", cosine=True)
    ya = _as_embeddings(y, "y", cosine=True)
    _check_same_dim(xa, ya, "x", "y")
    p = _as_pairs(pairs, xa.shape[0], ya.shape[0], "pairs")
    nb = _neighbourhoods(xa, ya, k)
    cos = _rowwise_cos(_unit(xa), _unit(ya), p[:, 0], p[:, 1])
    return _ratio_margin(cos, nb.x_mean[p[:, 0]], nb.y_mean[p[:, 1]])


# ---------------------------------------------------------------------------------------------
# BUCC mining
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MiningResult:
    """BUCC-style mining scored against gold pairs.

    Attributes:
        precision, recall, f1: of the extracted pairs (candidates with margin >= threshold)
            against the gold pairs; precision is 0 when nothing is extracted.
        threshold: the margin threshold applied (``inf`` when no threshold yields a correct pair).
        n_candidates: number of mined candidate pairs before thresholding.
        n_extracted: candidates at or above the threshold (the first ``n_extracted`` of ``pairs``).
        n_gold: number of distinct gold pairs.
        protocol: how candidates and threshold were obtained (directions, k, clipping, threshold
            selection), to be stored with the numbers.
        pairs: ``(n_candidates, 2)`` int64 (source row, target row), by decreasing margin.
        scores: ``(n_candidates,)`` float64 margins of ``pairs``.
    """

    precision: float
    recall: float
    f1: float
    threshold: float
    n_candidates: int
    n_extracted: int
    n_gold: int
    protocol: str
    pairs: np.ndarray = field(repr=False)
    scores: np.ndarray = field(repr=False)


_MODE_DESCRIPTIONS = {
    "forward": "forward: each source sentence's best target by margin among its nearest targets",
    "backward": "backward: each target sentence's best source by margin among its nearest sources",
    "intersection": "intersection: pairs that are each other's best by margin in both directions",
    "max": (
        "max: union of the forward and backward best pairs, kept greedily by decreasing margin so "
        "that each source and each target appears at most once (LASER/XTREME 'max' retrieval)"
    ),
}


def _mine_candidates(nb: _Neighbourhoods, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Candidate (src, tgt) pairs for ``mode`` and their margins, by decreasing margin."""
    fwd_idx, fwd_scores = _candidates(nb.x2y_sim, nb.x2y_idx, nb.x_mean, nb.y_mean)
    bwd_idx, bwd_scores = _candidates(nb.y2x_sim, nb.y2x_idx, nb.y_mean, nb.x_mean)
    src_rows, tgt_rows = np.arange(len(fwd_idx)), np.arange(len(bwd_idx))
    fwd = np.stack([src_rows, fwd_idx[:, 0]], axis=1), fwd_scores[:, 0]
    bwd = np.stack([bwd_idx[:, 0], tgt_rows], axis=1), bwd_scores[:, 0]
    if mode == "forward":
        pairs, scores = fwd
    elif mode == "backward":
        pairs, scores = bwd
    elif mode == "intersection":
        mutual = bwd_idx[fwd_idx[:, 0], 0] == src_rows  # (n_x,) x_i's best target picks x_i back
        pairs, scores = fwd[0][mutual], fwd[1][mutual]
    else:  # "max"
        pairs = np.concatenate([fwd[0], bwd[0]])
        scores = np.concatenate([fwd[1], bwd[1]])
    order = np.argsort(-scores, kind="stable")
    pairs, scores = pairs[order], scores[order]
    if mode == "max":
        keep = _greedy_one_to_one(pairs, len(src_rows), len(tgt_rows))
        pairs, scores = pairs[keep], scores[keep]
    return pairs, scores


def _greedy_one_to_one(pairs: np.ndarray, n_src: int, n_tgt: int) -> np.ndarray:
    """Mask keeping each pair (in the given order) whose source and target are both unused.

    Sequential by nature (whether a pair is kept depends on the pairs kept before it); one pass
    over at most n_src + n_tgt pairs, as in LASER's mine_bitexts.py.
    """
    used_src = np.zeros(n_src, dtype=bool)
    used_tgt = np.zeros(n_tgt, dtype=bool)
    keep = np.zeros(len(pairs), dtype=bool)
    for r, (i, j) in enumerate(pairs.tolist()):
        if not used_src[i] and not used_tgt[j]:
            used_src[i] = used_tgt[j] = keep[r] = True
    return keep


def _best_f1_cut(scores: np.ndarray, is_gold: np.ndarray, n_gold: int) -> tuple[int, float]:
    """``(n_extracted, threshold)`` maximising F1 when extracting the top candidates.

    ``scores`` is sorted in decreasing order. Extracting the first c candidates gives
    precision = correct_c / c and recall = correct_c / n_gold, so F1 = 2·correct_c / (c + n_gold):
    one cumulative sum scores every cut at once (LASER's ``BuccOptimize`` loops over them).
    """
    if len(scores) == 0:
        return 0, math.inf
    correct = np.cumsum(is_gold)  # (n,) correct pairs among the first c = 1..n
    f1 = 2 * correct / (np.arange(1, len(scores) + 1) + n_gold)
    # A threshold cannot separate tied scores: only cut after the last of a run of equal scores.
    cut_ok = np.append(scores[1:] < scores[:-1], True)
    f1 = np.where(cut_ok, f1, -1.0)
    best = int(np.argmax(f1))  # first maximum: the highest threshold among equally good ones
    if f1[best] <= 0:
        return 0, math.inf  # no cut extracts a single gold pair: extract nothing
    last = float(scores[best])
    if best + 1 == len(scores):
        return best + 1, last
    # As LASER/XTREME: the midpoint to the next (rejected) score, which transfers to new data
    # better than the last accepted score itself. Guard against the midpoint rounding onto the
    # rejected score when the two are adjacent floats.
    mid = (last + float(scores[best + 1])) / 2
    return best + 1, mid if mid > scores[best + 1] else last


class Extraction(NamedTuple):
    """Extracting the candidates at or above a threshold, scored against the gold pairs."""

    n_extracted: int
    precision: float  # 0 when nothing is extracted
    recall: float
    f1: float  # 2PR / (P + R), 0 when nothing correct is extracted


def f1_at_threshold(scores: np.ndarray, is_gold: np.ndarray, n_gold: int, threshold: float) -> Extraction:
    """Precision, recall and F1 of extracting the candidates whose score is >= ``threshold``.

    Args:
        scores: ``(n,)`` candidate scores (margins), in any order.
        is_gold: ``(n,)`` bool, whether each candidate is a gold pair; candidates are distinct.
        n_gold: number of gold pairs, mined or not: the recall denominator, so gold pairs that
            are no candidate count as misses.
        threshold: ``inf`` extracts nothing.
    """
    scores, is_gold = np.asarray(scores, dtype=np.float64), np.asarray(is_gold, dtype=bool)
    if scores.shape != is_gold.shape or scores.ndim != 1:
        raise ValueError(f"scores and is_gold must be 1-D and of one length; got shapes {scores.shape} and "
                         f"{is_gold.shape}")
    n_correct_max = int(is_gold.sum())
    if n_gold < max(1, n_correct_max):
        raise ValueError(f"n_gold={n_gold} is not valid: expected at least 1 and at least the {n_correct_max} "
                         "gold candidates")
    extracted = scores >= threshold
    n_extracted, n_correct = int(extracted.sum()), int((extracted & is_gold).sum())
    precision = n_correct / n_extracted if n_extracted else 0.0
    return Extraction(n_extracted, precision, n_correct / n_gold, 2 * n_correct / (n_extracted + n_gold))


def mine_bitext(
    src_emb: np.ndarray,
    tgt_emb: np.ndarray,
    gold: Iterable[tuple[int, int]],
    k: int = 4,
    mode: MiningMode = "forward",
    threshold: float | None = None,
) -> MiningResult:
    """Mine parallel pairs with the ratio margin and score them against ``gold`` (BUCC).

    Args:
        src_emb: ``(n_src, dim)`` embeddings of the source-language sentences.
        tgt_emb: ``(n_tgt, dim)`` embeddings of the target-language sentences.
        gold: true (source row, target row) pairs. Sentences without a gold partner are normal
            (BUCC corpora are comparable, not parallel); their candidates count as false
            positives when extracted, and gold pairs never mined count as misses.
        k: neighbourhood size of the margin and of the candidate search (4 in the paper).
        mode: which candidates to mine, one of :data:`MINING_MODES` (see ``_MODE_DESCRIPTIONS``).
        threshold: ``None`` to choose the threshold that maximises F1 against ``gold`` (XTREME's
            protocol, an oracle on this set); or a fixed margin threshold, e.g. one chosen on a
            development set, to get a held-out estimate; ``inf`` (what the oracle returns when no
            cut extracts a gold pair) extracts nothing.

    Returns:
        A :class:`MiningResult`; its ``protocol`` states the mode, k and threshold selection.
    """
    if mode not in MINING_MODES:
        raise ValueError(f"mode={mode!r} is not valid: expected one of {', '.join(MINING_MODES)}")
    k = _check_k(k)
    # +inf is a threshold the oracle itself returns (no cut extracts a gold pair): passed on to a
    # held-out part, it extracts nothing there.
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or math.isnan(threshold)
        or threshold == -math.inf
    ):
        raise ValueError(f"threshold={threshold!r} is not valid: expected None (choose by F1), a finite number or "
                         "inf (extract nothing)")
    src = _as_embeddings(src_emb, "src_emb", cosine=True)
    tgt = _as_embeddings(tgt_emb, "tgt_emb", cosine=True)
    _check_same_dim(src, tgt, "src_emb", "tgt_emb")
    n_src, n_tgt = src.shape[0], tgt.shape[0]
    gold_pairs = _as_pairs(gold, n_src, n_tgt, "gold")
    if len(gold_pairs) == 0:
        raise ValueError("gold is empty: F1 needs at least one true (source row, target row) pair")

    nb = _neighbourhoods(src, tgt, k)
    pairs, scores = _mine_candidates(nb, mode)
    # Pairs as single int64 codes so membership is one vectorised np.isin.
    gold_codes = np.unique(gold_pairs[:, 0] * n_tgt + gold_pairs[:, 1])
    is_gold = np.isin(pairs[:, 0] * n_tgt + pairs[:, 1], gold_codes)
    n_gold = len(gold_codes)

    if threshold is None:
        _, thr = _best_f1_cut(scores, is_gold, n_gold)
        how = (
            f"chosen to maximise F1 against the {n_gold} gold pairs over all {len(scores)} candidate "
            "margins (midpoint between the last extracted and the next margin; tuned on this gold "
            "set, as XTREME's BUCC protocol)"
        )
    else:
        thr = float(threshold)
        n_extracted = int(np.count_nonzero(scores >= thr))
        how = f"fixed at {thr:.6g} (given, not tuned on this gold set)"

    n_extracted, precision, recall, f1 = f1_at_threshold(scores, is_gold, n_gold, thr)

    clipped = []
    if nb.k_xy < k:
        clipped.append(f"{nb.k_xy} for source->target (only {n_tgt} targets)")
    if nb.k_yx < k:
        clipped.append(f"{nb.k_yx} for target->source (only {n_src} sources)")
    k_text = f"k={k}" + (f" clipped to {' and '.join(clipped)}" if clipped else "")
    protocol = (
        "BUCC-style mining with the ratio margin (Artetxe & Schwenk 2019) over exact cosine kNN "
        f"(faiss IndexFlatIP on L2-normalised float32); {k_text}; candidates: "
        f"{_MODE_DESCRIPTIONS[mode]}; threshold: {how}; a pair is extracted when its margin >= threshold"
    )
    return MiningResult(
        precision=float(precision),
        recall=float(recall),
        f1=float(f1),
        threshold=float(thr),
        n_candidates=len(pairs),
        n_extracted=n_extracted,
        n_gold=n_gold,
        protocol=protocol,
        pairs=pairs,
        scores=scores,
    )
