"""Retrieval on synthetic embeddings whose right answer is known.

Margins are checked against a naive double loop over the formula of Artetxe & Schwenk (2019);
the F1-maximising threshold against a brute-force search over every threshold.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from xlt.eval import (
    MINING_MODES,
    MarginCandidates,
    MiningResult,
    RetrievalResult,
    knn,
    margin_scores,
    mine_bitext,
    score_pairs,
    tatoeba_accuracy,
    tatoeba_hits,
)
from xlt.eval.retrieval import Extraction, _best_f1_cut, f1_at_threshold


def orthonormal_rows(n: int, dim: int, seed: int) -> np.ndarray:
    """n random orthonormal vectors in R^dim (rows), n <= dim."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, dim)))
    return q[:n].astype(np.float32)


def anisotropic(n: int, dim: int, rng: np.random.Generator, shared: np.ndarray) -> np.ndarray:
    """Random vectors sharing a common direction, as real sentence embeddings do: nearest
    neighbours are positively similar, so the ratio margin is defined."""
    return (shared + rng.normal(size=(n, dim))).astype(np.float32)


# ---- naive reference implementations -------------------------------------------------------


def naive_cos_matrix(x: np.ndarray, y: np.ndarray) -> list[list[float]]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    out = []
    for i in range(len(x)):
        row = []
        for j in range(len(y)):
            dot = sum(float(a) * float(b) for a, b in zip(x[i], y[j]))
            row.append(dot / (math.sqrt(float(x[i] @ x[i])) * math.sqrt(float(y[j] @ y[j]))))
        out.append(row)
    return out


def naive_margin_matrix(x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    """margin(x_i, y_j) = cos / (Σ_{NN_k(x)} cos/2k + Σ_{NN_k(y)} cos/2k), k clipped per side."""
    cos = naive_cos_matrix(x, y)
    n_x, n_y = len(x), len(y)
    k_x, k_y = min(k, n_y), min(k, n_x)
    x_term = [sum(sorted(cos[i], reverse=True)[:k_x]) / (2 * k_x) for i in range(n_x)]
    y_term = [
        sum(sorted((cos[i][j] for i in range(n_x)), reverse=True)[:k_y]) / (2 * k_y) for j in range(n_y)
    ]
    return np.array([[cos[i][j] / (x_term[i] + y_term[j]) for j in range(n_y)] for i in range(n_x)])


def brute_force_f1(scores: np.ndarray, is_gold: np.ndarray, n_gold: int) -> tuple[float, float]:
    """Best F1 over every threshold t (extract scores >= t), plus "extract nothing"."""
    best_f1, best_t = 0.0, math.inf
    for t in sorted(set(scores.tolist()), reverse=True):
        extracted = scores >= t
        correct = int((extracted & is_gold).sum())
        if correct == 0:
            continue
        p, r = correct / int(extracted.sum()), correct / n_gold
        f1 = 2 * p * r / (p + r)
        if f1 > best_f1 + 1e-12:
            best_f1, best_t = f1, t
    return best_f1, best_t


# ---- knn -----------------------------------------------------------------------------------


def test_knn_matches_numpy_cosine_and_dot():
    rng = np.random.default_rng(0)
    q, keys = rng.normal(size=(7, 12)), rng.normal(size=(30, 12)) * rng.uniform(0.5, 3, size=(30, 1))
    cos = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (keys / np.linalg.norm(keys, axis=1, keepdims=True)).T
    scores, idx = knn(q, keys, 5)
    assert scores.shape == idx.shape == (7, 5) and idx.dtype == np.int64
    np.testing.assert_array_equal(idx, np.argsort(-cos, axis=1)[:, :5])
    np.testing.assert_allclose(scores, np.sort(cos, axis=1)[:, ::-1][:, :5], rtol=1e-5, atol=1e-6)
    # "dot" ranks by the raw inner product, so long keys win.
    dot = q @ keys.T
    scores, idx = knn(q, keys, 3, metric="dot")
    np.testing.assert_array_equal(idx, np.argsort(-dot, axis=1)[:, :3])
    np.testing.assert_allclose(scores, np.sort(dot, axis=1)[:, ::-1][:, :3], rtol=1e-5, atol=1e-5)


class GpuFaiss:
    """faiss as a GPU build presents itself (``StandardGpuResources``, ``get_num_gpus``,
    ``GpuIndexFlatIP``), searching with the real CPU index underneath: which index ``knn`` asks for."""

    def __init__(self, gpus: int):
        import faiss

        self.gpus, self.built, self.IndexFlatIP = gpus, [], faiss.IndexFlatIP

    class StandardGpuResources:
        pass

    def get_num_gpus(self) -> int:
        return self.gpus

    def GpuIndexFlatIP(self, resources, dim: int):
        assert isinstance(resources, self.StandardGpuResources)
        self.built.append(dim)
        return self.IndexFlatIP(dim)


@pytest.mark.parametrize("gpus", [1, 0])
def test_knn_searches_a_gpu_index_where_faiss_has_gpus_and_the_cpu_index_otherwise(monkeypatch, gpus):
    rng = np.random.default_rng(3)
    q, keys = rng.normal(size=(20, 16)), rng.normal(size=(50, 16))
    on_cpu = knn(q, keys, 4)  # faiss-cpu: no GPU support at all
    fake = GpuFaiss(gpus)
    monkeypatch.setitem(sys.modules, "faiss", fake)
    searched = knn(q, keys, 4)
    assert fake.built == ([16] if gpus else [])  # a GPU build without a visible GPU falls back
    assert np.array_equal(searched[1], on_cpu[1]) and np.allclose(searched[0], on_cpu[0])


def test_knn_clips_k_to_number_of_keys():
    rng = np.random.default_rng(1)
    scores, idx = knn(rng.normal(size=(4, 8)), rng.normal(size=(3, 8)), 10)
    assert scores.shape == idx.shape == (4, 3)
    assert (idx >= 0).all()  # faiss pads with -1 when asked for more than it has
    assert all(sorted(row) == [0, 1, 2] for row in idx.tolist())


def test_knn_does_not_modify_inputs():
    rng = np.random.default_rng(2)
    q = rng.normal(size=(3, 4)).astype(np.float32)
    before = q.copy()
    knn(q, q, 2)
    np.testing.assert_array_equal(q, before)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"metric": "l2"}, ValueError, r"metric='l2' is not valid: expected one of cosine, dot"),
        ({"k": 0}, ValueError, r"k=0 is not valid: expected an integer >= 1"),
        ({"k": True}, ValueError, r"k=True is not valid"),
        ({"k": 2.0}, ValueError, r"k=2.0 is not valid"),
        ({"keys": np.ones((3, 5))}, ValueError, r"same embedding dimension; got queries \(2, 4\) and keys \(3, 5"),
        ({"queries": np.ones(4)}, ValueError, r"queries must be 2-D \(n, dim\); got shape \(4,\)"),
        ({"keys": np.zeros((0, 4))}, ValueError, r"keys is empty \(shape \(0, 4\)\)"),
        ({"queries": np.array([[1, 2, 3, np.nan], [1, 1, 1, 1]])}, ValueError, r"queries has NaN .* at row 0"),
        ({"keys": np.array([[1e39, 0, 0, 0]])}, ValueError, r"keys has NaN or inf \(after casting to float32\)"),
        ({"keys": np.array([[1.0, 0, 0, 0], [0, 0, 0, 0]])}, ValueError, r"keys has 1 all-zero rows \(first at row 1"),
        ({"queries": [["a", "b", "c", "d"]]}, TypeError, r"queries must be a numeric array"),
    ],
)
def test_knn_input_errors(kwargs, error, match):
    args = {"queries": np.ones((2, 4)), "keys": np.ones((3, 4)), "k": 1} | kwargs
    with pytest.raises(error, match=match):
        knn(**args)


def test_knn_dot_allows_zero_rows():
    scores, idx = knn(np.array([[1.0, 0.0]]), np.array([[0.0, 0.0], [2.0, 0.0]]), 1, metric="dot")
    assert idx.tolist() == [[1]] and scores.tolist() == [[2.0]]


# ---- Tatoeba -------------------------------------------------------------------------------


def test_tatoeba_identity_is_perfect():
    eye = np.eye(8, dtype=np.float32)
    assert tatoeba_accuracy(eye, eye) == RetrievalResult(src_to_tgt=1.0, tgt_to_src=1.0, mean=1.0, n=8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tatoeba_orthogonal_rows_perfect_and_scale_invariant(seed):
    src = orthonormal_rows(20, 32, seed)
    scale = np.random.default_rng(seed).uniform(0.1, 10, size=(20, 1)).astype(np.float32)
    r = tatoeba_accuracy(src, src * scale)
    assert (r.src_to_tgt, r.tgt_to_src, r.mean, r.n) == (1.0, 1.0, 1.0, 20)


def test_tatoeba_partial_shuffle_exact_accuracy():
    n = 20
    src = orthonormal_rows(n, 32, seed=3)
    perm = np.arange(n)
    moved = np.array([2, 5, 11, 13, 17, 19])
    perm[moved] = np.roll(moved, 1)  # a cycle over 6 rows: 14 fixed points
    r = tatoeba_accuracy(src, src[perm])
    assert (r.src_to_tgt, r.tgt_to_src, r.mean) == (14 / 20, 14 / 20, 14 / 20)


def test_tatoeba_directions_can_differ():
    # tgt row 1 is almost src row 0: src->tgt still finds every partner (cos 1 beats 0.995),
    # but tgt row 1 retrieves src row 0 instead of src row 1.
    n = 10
    src = orthonormal_rows(n, 16, seed=4)
    tgt = src.copy()
    tgt[1] = src[0] + 0.1 * src[1]
    r = tatoeba_accuracy(src, tgt)
    assert (r.src_to_tgt, r.tgt_to_src, r.mean, r.n) == (1.0, 0.9, 0.95, 10)


def test_tatoeba_hits_name_the_queries_that_miss():
    # the 6-cycle of test_tatoeba_partial_shuffle_exact_accuracy: exactly the moved rows miss, both ways
    n = 20
    src = orthonormal_rows(n, 32, seed=3)
    perm = np.arange(n)
    moved = np.array([2, 5, 11, 13, 17, 19])
    perm[moved] = np.roll(moved, 1)
    src_hits, tgt_hits = tatoeba_hits(src, src[perm])
    assert np.flatnonzero(~src_hits).tolist() == moved.tolist()
    assert np.flatnonzero(~tgt_hits).tolist() == moved.tolist()
    # the near-duplicate of test_tatoeba_directions_can_differ: only tgt row 1 misses
    src = orthonormal_rows(10, 16, seed=4)
    tgt = src.copy()
    tgt[1] = src[0] + 0.1 * src[1]
    src_hits, tgt_hits = tatoeba_hits(src, tgt)
    assert src_hits.all() and np.flatnonzero(~tgt_hits).tolist() == [1]


def test_tatoeba_shape_errors():
    with pytest.raises(ValueError, match=r"src_emb has 3 rows but tgt_emb has 4: Tatoeba needs aligned sets"):
        tatoeba_accuracy(np.ones((3, 4)), np.ones((4, 4)))
    with pytest.raises(ValueError, match=r"src_emb \(3, 4\) and tgt_emb \(3, 5\)"):
        tatoeba_accuracy(np.ones((3, 4)), np.ones((3, 5)))
    with pytest.raises(ValueError, match=r"tgt_emb is empty"):
        tatoeba_accuracy(np.ones((3, 4)), np.ones((0, 4)))
    with pytest.raises(ValueError, match=r"src_emb has NaN or inf .* first at row 2"):
        tatoeba_accuracy(np.array([[1.0, 0], [0, 1], [np.inf, 0]]), np.ones((3, 2)))


# ---- ratio margin --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("n_x", "n_y", "k"), [(9, 12, 4), (12, 9, 1), (10, 10, 7), (6, 3, 4), (2, 5, 4)])
def test_margin_scores_match_naive_loop(seed, n_x, n_y, k):
    rng = np.random.default_rng(seed)
    shared = 2.0 * rng.normal(size=8)
    x, y = anisotropic(n_x, 8, rng, shared), anisotropic(n_y, 8, rng, shared)
    naive = naive_margin_matrix(x, y, k)
    naive_cos = np.array(naive_cos_matrix(x, y))

    m = margin_scores(x, y, k=k)
    assert isinstance(m, MarginCandidates)
    assert (m.k_xy, m.k_yx) == (min(k, n_y), min(k, n_x))  # (6, 3, 4) and (2, 5, 4) clip
    assert m.indices.shape == m.scores.shape == (n_x, m.k_xy)
    for i in range(n_x):
        # candidates: the k nearest by cosine; ordered by decreasing margin
        assert set(m.indices[i].tolist()) == set(np.argsort(-naive_cos[i])[: m.k_xy].tolist())
        np.testing.assert_allclose(m.scores[i], naive[i, m.indices[i]], rtol=1e-5, atol=1e-6)
        assert (np.diff(m.scores[i]) <= 0).all()

    # arbitrary pairs, here all of them
    all_pairs = [(i, j) for i in range(n_x) for j in range(n_y)]
    np.testing.assert_allclose(score_pairs(x, y, all_pairs, k=k), naive.ravel(), rtol=1e-5, atol=1e-6)


def test_margin_best_can_differ_from_nearest_by_cosine():
    # y0 is a hub, fairly close to every x; y1 is x0's partner, pushed off along an extra axis.
    # By cosine x0 picks the hub (0.786 vs 0.682); the margin discounts the hub and picks y1.
    eye = np.eye(5)
    hub = np.array([1.0, 1.0, 1.0, 1.0, 0.0])
    x = eye[:4] + 0.3 * hub
    y = np.vstack([hub, x[:3] + 1.5 * eye[4]])
    cos = np.array(naive_cos_matrix(x, y))
    assert cos[0].argmax() == 0
    m = margin_scores(x, y, k=2)
    assert m.indices[0].tolist() == [1, 0]
    naive = naive_margin_matrix(x, y, 2)
    assert naive[0, 1] > naive[0, 0]
    np.testing.assert_allclose(m.scores[0], naive[0, [1, 0]], rtol=1e-5)


def test_score_pairs_accepts_arrays_and_empty():
    rng = np.random.default_rng(5)
    shared = 2.0 * rng.normal(size=6)
    x, y = anisotropic(5, 6, rng, shared), anisotropic(4, 6, rng, shared)
    from_set = score_pairs(x, y, [(0, 1), (4, 3)])
    from_array = score_pairs(x, y, np.array([[0, 1], [4, 3]]))
    np.testing.assert_array_equal(from_set, from_array)
    assert score_pairs(x, y, []).shape == (0,)


def test_score_pairs_errors():
    x = y = np.eye(3) + 0.5
    match = r"pairs has 1 pairs outside the embeddings \(first \(0, 3\)\); valid source rows are 0..2 and target"
    with pytest.raises(ValueError, match=match):
        score_pairs(x, y, [(0, 1), (0, 3)])
    with pytest.raises(ValueError, match=r"pairs must be integer \(i, j\) pairs"):
        score_pairs(x, y, [(0, 1, 2)])
    with pytest.raises(ValueError, match=r"pairs must be integer"):
        score_pairs(x, y, np.array([[0.5, 1.0]]))


def test_margin_undefined_when_neighbours_are_orthogonal():
    eye = np.eye(4)
    with pytest.raises(ValueError, match=r"ratio margin undefined for 4 pair\(s\)"):
        margin_scores(eye[:2], eye[2:], k=2)


# ---- BUCC mining ---------------------------------------------------------------------------


def bucc_like(seed: int, n_pairs: int, n_src_only: int, n_tgt_only: int, noise: float, dim: int = 32):
    """Comparable corpora: n_pairs translations (shuffled on the target side) plus unpaired
    sentences on each side. Returns src, tgt, gold."""
    rng = np.random.default_rng(seed)
    shared = 1.0 * rng.normal(size=dim)
    base = anisotropic(n_pairs, dim, rng, shared)
    src = np.vstack([base + noise * rng.normal(size=base.shape), anisotropic(n_src_only, dim, rng, shared)])
    tgt_paired = base + noise * rng.normal(size=base.shape)
    tgt = np.vstack([tgt_paired, anisotropic(n_tgt_only, dim, rng, shared)])
    order = rng.permutation(len(tgt))  # tgt row r holds old row order[r]
    tgt = tgt[order]
    where = np.argsort(order)  # old row -> new row
    gold = {(i, int(where[i])) for i in range(n_pairs)}
    # Interleave the unpaired sources too, so gold is not a prefix.
    src_order = rng.permutation(len(src))
    src = src[src_order]
    src_where = np.argsort(src_order)
    gold = {(int(src_where[i]), j) for i, j in gold}
    return src.astype(np.float32), tgt.astype(np.float32), gold


@pytest.mark.parametrize("mode", MINING_MODES)
def test_mining_well_separated_pairs_gives_f1_one(mode):
    src, tgt, gold = bucc_like(seed=0, n_pairs=40, n_src_only=15, n_tgt_only=20, noise=0.05)
    r = mine_bitext(src, tgt, gold, k=4, mode=mode)
    assert isinstance(r, MiningResult)
    assert (r.precision, r.recall, r.f1) == (1.0, 1.0, 1.0)
    assert (r.n_extracted, r.n_gold) == (40, 40)
    assert r.n_candidates == len(r.pairs) == len(r.scores)
    if mode == "forward":
        assert r.n_candidates == len(src)  # one per source, unpaired ones included
    if mode == "backward":
        assert r.n_candidates == len(tgt)
    if mode == "max":
        assert len(set(r.pairs[:, 0].tolist())) == len(set(r.pairs[:, 1].tolist())) == r.n_candidates

    # The threshold separates gold from non-gold: every gold pair scores at or above it, every
    # other candidate below it.
    assert (score_pairs(src, tgt, gold) >= r.threshold).all()
    non_gold = np.array([tuple(p) not in gold for p in r.pairs.tolist()])
    assert non_gold.sum() > 0  # the distractors do produce candidates
    assert (r.scores[non_gold] < r.threshold).all()
    assert set(map(tuple, r.pairs[: r.n_extracted].tolist())) == gold
    assert (np.diff(r.scores) <= 0).all()


def test_mining_forward_candidates_match_naive_argmax():
    src, tgt, _ = bucc_like(seed=6, n_pairs=12, n_src_only=4, n_tgt_only=5, noise=0.6, dim=8)
    naive = naive_margin_matrix(src, tgt, 4)
    cos = np.array(naive_cos_matrix(src, tgt))
    r = mine_bitext(src, tgt, {(0, 0)}, mode="forward")
    got = dict(map(tuple, r.pairs.tolist()))
    for i in range(len(src)):
        nn = np.argsort(-cos[i])[:4]
        assert got[i] == nn[np.argmax(naive[i, nn])]
    np.testing.assert_allclose(r.scores, [naive[i, j] for i, j in r.pairs.tolist()], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_mining_modes_match_naive_definitions(seed):
    src, tgt, _ = bucc_like(seed=seed, n_pairs=12, n_src_only=4, n_tgt_only=5, noise=0.8, dim=8)
    naive = naive_margin_matrix(src, tgt, 4)
    cos = np.array(naive_cos_matrix(src, tgt))
    n_src, n_tgt = naive.shape
    fwd = {i: int(max(np.argsort(-cos[i])[:4], key=lambda j: naive[i, j])) for i in range(n_src)}
    bwd = {j: int(max(np.argsort(-cos[:, j])[:4], key=lambda i: naive[i, j])) for j in range(n_tgt)}
    mined = {
        mode: set(map(tuple, mine_bitext(src, tgt, {(0, 0)}, mode=mode).pairs.tolist())) for mode in MINING_MODES
    }
    assert mined["forward"] == set(fwd.items())
    assert mined["backward"] == {(i, j) for j, i in bwd.items()}
    assert mined["intersection"] == {(i, j) for i, j in fwd.items() if bwd[j] == i}
    assert mined["intersection"] < mined["forward"]  # noisy enough that some are not mutual
    # max: the union, greedily one-to-one by decreasing margin
    union = sorted(set(fwd.items()) | {(i, j) for j, i in bwd.items()}, key=lambda p: -naive[p])
    used_i, used_j, greedy = set(), set(), set()
    for i, j in union:
        if i not in used_i and j not in used_j:
            used_i.add(i), used_j.add(j), greedy.add((i, j))
    assert mined["max"] == greedy


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("mode", MINING_MODES)
def test_f1_threshold_matches_brute_force(seed, mode):
    src, tgt, gold = bucc_like(seed=seed, n_pairs=60, n_src_only=30, n_tgt_only=30, noise=1.2)
    r = mine_bitext(src, tgt, gold, mode=mode)
    is_gold = np.array([tuple(p) in gold for p in r.pairs.tolist()])
    best_f1, _ = brute_force_f1(r.scores, is_gold, len(gold))
    assert 0 < r.f1 < 1  # noisy enough that the threshold matters
    assert r.f1 == pytest.approx(best_f1, abs=1e-12)
    # The reported numbers are those of applying the reported threshold.
    extracted = r.scores >= r.threshold
    correct = int((extracted & is_gold).sum())
    assert r.n_extracted == int(extracted.sum())
    assert r.precision == pytest.approx(correct / r.n_extracted)
    assert r.recall == pytest.approx(correct / len(gold))
    # A fixed threshold reproduces the tuned result.
    fixed = mine_bitext(src, tgt, gold, mode=mode, threshold=r.threshold)
    summary = (r.precision, r.recall, r.f1, r.n_extracted)
    assert (fixed.precision, fixed.recall, fixed.f1, fixed.n_extracted) == summary
    assert "fixed at" in fixed.protocol and "maximise F1" not in fixed.protocol
    # ... and a threshold equal to the last extracted score still extracts it (margin >= t).
    at_score = mine_bitext(src, tgt, gold, mode=mode, threshold=float(r.scores[r.n_extracted - 1]))
    assert at_score.n_extracted == r.n_extracted


def test_best_f1_cut_never_splits_tied_scores():
    # Cutting after the 2nd candidate would give F1 = 1, but it ties with the 3rd: no threshold
    # can take one and not the other.
    n, thr = _best_f1_cut(np.array([3.0, 2.0, 2.0, 1.0]), np.array([True, True, False, False]), n_gold=2)
    assert (n, thr) == (3, 1.5)
    n, thr = _best_f1_cut(np.array([3.0, 2.0, 2.0, 2.0, 1.0]), np.array([1, 0, 1, 1, 0], dtype=bool), n_gold=4)
    assert (n, thr) == (4, 1.5)  # F1 = 2*3 / (4 + 4) = 0.75, the best valid cut
    # all candidates extracted: the threshold is the lowest score
    assert _best_f1_cut(np.array([2.0, 1.0]), np.array([True, True]), n_gold=3) == (2, 1.0)
    # nothing correct anywhere: extract nothing
    assert _best_f1_cut(np.array([2.0, 1.0]), np.array([False, False]), n_gold=3) == (0, math.inf)
    assert _best_f1_cut(np.array([]), np.array([], dtype=bool), n_gold=3) == (0, math.inf)
    # equally good cuts (F1 2/3 after 1 and after 4): the first, i.e. the higher threshold
    assert _best_f1_cut(np.array([4.0, 3.0, 2.0, 1.0]), np.array([1, 0, 0, 1], dtype=bool), n_gold=2) == (1, 3.5)
    # adjacent floats: the midpoint rounds (half to even) onto the rejected score 1.0, which
    # would then be extracted too; keep the accepted score as threshold instead
    a, b = np.nextafter(1.0, 2.0), 1.0
    assert (a + b) / 2 == b
    assert _best_f1_cut(np.array([a, b]), np.array([True, False]), n_gold=1) == (1, a)


def test_f1_at_threshold_known_answers():
    scores, is_gold = np.array([0.2, 0.9, 0.3, 0.8]), np.array([False, True, False, True])  # any order
    # perfectly separable: any threshold between 0.3 and 0.8 is perfect, and the tuned one is one of them
    assert f1_at_threshold(scores, is_gold, 2, 0.5) == Extraction(2, 1.0, 1.0, 1.0)
    n, thr = _best_f1_cut(np.sort(scores)[::-1], np.array([True, True, False, False]), n_gold=2)
    assert (n, thr) == (2, 0.55) and f1_at_threshold(scores, is_gold, 2, thr).f1 == 1.0
    # a score equal to the threshold is extracted
    assert f1_at_threshold(scores, is_gold, 2, 0.3) == Extraction(3, 2 / 3, 1.0, 0.8)
    # a threshold below every score extracts all; above every score (or inf) extracts nothing
    assert f1_at_threshold(scores, is_gold, 2, -1.0) == Extraction(4, 0.5, 1.0, 2 / 3)
    assert f1_at_threshold(scores, is_gold, 2, math.inf) == Extraction(0, 0.0, 0.0, 0.0)
    # gold pairs that were never mined lower the recall: 2 of 8
    assert f1_at_threshold(scores, is_gold, 8, 0.5) == Extraction(2, 1.0, 0.25, 0.4)
    assert f1_at_threshold(np.array([]), np.array([], dtype=bool), 3, 0.0) == Extraction(0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_best_f1_cut_is_the_best_threshold(seed):
    rng = np.random.default_rng(seed)
    is_gold = rng.random(50) < 0.4
    scores = np.sort(np.round(rng.normal(size=50) + is_gold, 1))[::-1]  # rounded: ties
    n_gold = int(is_gold.sum()) + 5
    n, thr = _best_f1_cut(scores, is_gold, n_gold)
    tuned = f1_at_threshold(scores, is_gold, n_gold, thr)
    assert tuned.n_extracted == n
    assert tuned.f1 == pytest.approx(brute_force_f1(scores, is_gold, n_gold)[0], abs=1e-12)
    assert all(f1_at_threshold(scores, is_gold, n_gold, t).f1 <= tuned.f1 + 1e-12 for t in scores)


@pytest.mark.parametrize("args, match", [
    ((np.array([1.0, 2.0]), np.array([True]), 1, 0.0), r"one length; got shapes \(2,\) and \(1,\)"),
    ((np.array([1.0, 2.0]), np.array([True, True]), 1, 0.0), r"n_gold=1 is not valid: expected at least 1 and at least the 2"),
    ((np.array([1.0]), np.array([False]), 0, 0.0), r"n_gold=0 is not valid"),
])
def test_f1_at_threshold_errors(args, match):
    with pytest.raises(ValueError, match=match):
        f1_at_threshold(*args)


def test_mining_gold_pairs_never_mined_count_as_misses():
    src, tgt, gold = bucc_like(seed=1, n_pairs=40, n_src_only=15, n_tgt_only=20, noise=0.05)
    mined = {i for i, _ in gold}
    unpaired_src = next(i for i in range(len(src)) if i not in mined)
    tgt_taken = {j for _, j in gold}
    unpaired_tgt = next(j for j in range(len(tgt)) if j not in tgt_taken)
    r = mine_bitext(src, tgt, gold | {(unpaired_src, unpaired_tgt)}, mode="forward")
    # The best cut still extracts the 40 true pairs: P = 1, R = 40/41.
    assert (r.n_gold, r.n_extracted) == (41, 40)
    assert r.precision == 1.0
    assert r.recall == 40 / 41
    assert r.f1 == pytest.approx(80 / 81)


def test_mining_with_no_correct_candidate():
    src, tgt, gold = bucc_like(seed=2, n_pairs=10, n_src_only=0, n_tgt_only=0, noise=0.05)
    wrong = {(i, (j + 1) % len(tgt)) for i, j in gold}
    r = mine_bitext(src, tgt, wrong)
    assert (r.precision, r.recall, r.f1, r.n_extracted, r.threshold) == (0.0, 0.0, 0.0, 0, math.inf)
    # a fixed threshold above every score extracts nothing either
    r = mine_bitext(src, tgt, gold, threshold=1e6)
    assert (r.precision, r.recall, r.f1, r.n_extracted) == (0.0, 0.0, 0.0, 0)
    # nor does the oracle's inf, carried to a held-out part (an untrained encoder's BUCC row)
    r = mine_bitext(src, tgt, gold, threshold=math.inf)
    assert (r.precision, r.recall, r.f1, r.n_extracted, r.threshold) == (0.0, 0.0, 0.0, 0, math.inf)


def test_mining_protocol_states_mode_k_and_threshold():
    src, tgt, gold = bucc_like(seed=3, n_pairs=20, n_src_only=5, n_tgt_only=5, noise=0.05)
    r = mine_bitext(src, tgt, gold, mode="intersection")
    assert "ratio margin" in r.protocol and "k=4;" in r.protocol
    assert "intersection: pairs that are each other's best" in r.protocol
    assert "maximise F1 against the 20 gold pairs" in r.protocol
    assert "clipped" not in r.protocol


def test_mining_clips_k_and_says_so():
    rng = np.random.default_rng(7)
    shared = 2.0 * rng.normal(size=8)
    base = anisotropic(3, 8, rng, shared)
    src = np.vstack([base + 0.01 * rng.normal(size=base.shape), anisotropic(2, 8, rng, shared)])
    tgt = base + 0.01 * rng.normal(size=base.shape)  # only 3 targets
    r = mine_bitext(src, tgt, {(0, 0), (1, 1), (2, 2)}, k=4, mode="max")
    assert "k=4 clipped to 3 for source->target (only 3 targets)" in r.protocol
    assert "target->source" not in r.protocol  # 5 sources >= k
    assert r.f1 == 1.0
    r = mine_bitext(tgt, src, {(0, 0), (1, 1), (2, 2)}, k=4, mode="backward")
    assert "k=4 clipped to 3 for target->source (only 3 sources)" in r.protocol


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "union"}, r"mode='union' is not valid: expected one of forward, backward, intersection, max"),
        ({"k": 0}, r"k=0 is not valid"),
        ({"gold": set()}, r"gold is empty"),
        ({"gold": {(0, 0), (9, 1)}}, r"gold has 1 pairs outside the embeddings \(first \(9, 1\)\); valid source rows"),
        ({"gold": {(0, -1)}}, r"gold has 1 pairs outside"),
        ({"threshold": math.nan}, r"threshold=nan is not valid"),
        ({"threshold": "1.2"}, r"threshold='1.2' is not valid"),
        ({"threshold": -math.inf}, r"threshold=-inf is not valid"),
        ({"src_emb": np.zeros((0, 3))}, r"src_emb is empty"),
        ({"tgt_emb": np.ones((4, 2))}, r"src_emb \(4, 3\) and tgt_emb \(4, 2\)"),
        ({"tgt_emb": np.full((4, 3), np.nan)}, r"tgt_emb has NaN or inf .* in 4 of 4 rows"),
    ],
)
def test_mining_input_errors(kwargs, match):
    args = {"src_emb": np.eye(4, 3) + 0.5, "tgt_emb": np.eye(4, 3) + 0.5, "gold": {(0, 0)}} | kwargs
    with pytest.raises(ValueError, match=match):
        mine_bitext(**args)
