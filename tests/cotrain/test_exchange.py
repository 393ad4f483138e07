"""Exchange bookkeeping over iterations (who receives what, pools shrink, nothing lost or duplicated),
the loop state file, and a pseudo-labelled stream fed to the selections with its exactly-once check."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from conftest import REPO, TINY_TASK, TINY_TASK_OVERRIDE
from xlt.config import ConfigError, from_dict
from xlt.cotrain import LEARNERS, LoopState, Selection, exchange, load_cotrain_config, receiver
from xlt.cotrain.loop import PreparedCotrain, selections
from xlt.cotrain.pool import POOL_COLUMNS, Pass, StoredPool, fingerprint, stream_selections
from xlt.hardware import native_bf16
from xlt.tasks import Task, TaskConfig

LABELS = ("a", "b", "c")


def data(n_pool: int = 60, n_labeled: int = 30) -> tuple[PreparedCotrain, dict[str, np.ndarray]]:
    """The loop's data (labelled rows) and the pool's columns, as the stream carries them."""
    labeled = [{"id": f"l{i}", "text": f"labelled {i}", "label": LABELS[i % 3], "lang": "en"} for i in range(n_labeled)]
    pool = {"id": [f"u{i}" for i in range(n_pool)], "text": [f"pool {i}" for i in range(n_pool)],
            "text_pair": [None] * n_pool, "lang": ["de"] * n_pool, "gold": [LABELS[i % 3] for i in range(n_pool)]}
    task = Task(from_dict(TaskConfig, {**TINY_TASK, "labels": list(LABELS)}), None, {})
    return (PreparedCotrain(task, labeled, {"de": n_pool}, {"text": [], "label": [], "lang": []}),
            {k: np.array(v, dtype=object) for k, v in pool.items()})


def predicted(pool: dict[str, np.ndarray], seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = len(pool["id"])
    return np.array(LABELS, dtype=object)[rng.integers(0, 3, n)], rng.uniform(0.5, 1, n)


@pytest.mark.parametrize("mode", ["cotrain", "self-train"])
def test_exchange_over_iterations(mode):
    cfg = load_cotrain_config(None, [TINY_TASK_OVERRIDE, f"mode={mode}", "selection.threshold=0.6", "selection.seed=3"])
    d, pool = data()
    state = LoopState.fresh(LEARNERS)
    gold = dict(zip(pool["id"], pool["gold"]))
    for iteration in range(4):
        chosen = selections(state, cfg, d, iteration)
        preds = {name: predicted(pool, 10 * iteration + k) for k, name in enumerate(LEARNERS)}
        for name in LEARNERS:
            chosen[name].offer(pool, *preds[name])
        pools_before = {name: set(pool["id"]) - state.selected(name) for name in LEARNERS}
        received_before = {name: len(state.received[name]) for name in LEARNERS}
        stats = exchange(state, chosen, cfg, iteration)
        for k, name in enumerate(LEARNERS):
            to = receiver(mode, name)
            assert to == (name if mode == "self-train" else LEARNERS[1 - k])
            new = [r for r in state.received[to][received_before[to]:] if r["selected_by"] == name]
            ids = [r["id"] for r in new]
            assert len(ids) == stats[name]["pseudo/selected"] <= 30 // 3  # n/3 of the labelled data
            assert set(ids) <= pools_before[name]  # selected from the selector's own pool...
            assert set(pool["id"]) - state.selected(name) == pools_before[name] - set(ids)  # ...which it leaves
            own = {i: (label, c) for i, label, c in zip(pool["id"], *preds[name])}
            assert all(r["label"] == own[r["id"]][0] and own[r["id"]][1] > 0.6 for r in new)  # its own pseudo-label
            assert all(r["iteration"] == iteration and r["text"] == f"pool {r['id'][1:]}" and r["lang"] == "de"
                       and r["text_pair"] is None for r in new)
            if ids:
                assert stats[name]["pseudo/accuracy"] == pytest.approx(np.mean([gold[r["id"]] == r["label"] for r in new]))
    for name in LEARNERS:
        ids = [r["id"] for r in state.received[name]]
        assert len(ids) == len(set(ids))  # no labelled set receives a row twice
        assert len(state.selected(name)) == sum(r["selected_by"] == name for learner in LEARNERS
                                                 for r in state.received[learner])  # nothing lost


def test_nothing_selected_is_scored_nan():
    cfg = load_cotrain_config(None, [TINY_TASK_OVERRIDE, "selection.threshold=0.6"])
    d, pool = data()
    state = LoopState.fresh(LEARNERS)
    chosen = selections(state, cfg, d, 0)
    for name in LEARNERS:
        chosen[name].offer(pool, predicted(pool, 0)[0], np.full(len(pool["id"]), 0.6))  # none above t
    stats = exchange(state, chosen, cfg, 0)
    assert stats["lm"]["pseudo/selected"] == 0 and np.isnan(stats["lm"]["pseudo/accuracy"])
    assert state.received == {"lm": [], "emb": []}


def test_state_round_trips_through_its_file(tmp_path):
    state = LoopState.fresh(LEARNERS)
    state.received["lm"].append({"id": "u1", "text": "x", "label": "a", "lang": "de", "iteration": 0,
                                 "selected_by": "emb"})
    state.iteration = 1
    state.save(tmp_path)
    assert LoopState.load(tmp_path) == state
    assert state.selected("emb") == {"u1"} and state.selected("lm") == set()
    # A state file of an earlier version listed each learner's remaining pool: derived now, so dropped.
    old = json.loads((tmp_path / "state.json").read_text()) | {"pool": {"lm": ["u1", "u2"], "emb": ["u2"]}}
    (tmp_path / "state.json").write_text(json.dumps(old))
    assert LoopState.load(tmp_path) == state
    (tmp_path / "state.json").write_text("{not json")
    with pytest.raises(ValueError, match="is not a co-training state file"):
        LoopState.load(tmp_path)


def test_a_cluster_too_small_to_hold_learners_and_actors_at_once_is_named(monkeypatch, caplog):
    import ray

    from xlt.cotrain.loop import warn_if_short

    cfg = load_cotrain_config(None, [TINY_TASK_OVERRIDE, "lm.scaling.cpus_per_worker=2", "emb.scaling.cpus_per_worker=1",
                                     "inference.num_cpus=1"])
    assert cfg.footprint() == {"CPU": 4.0, "GPU": 0.0}
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 4.0})
    warn_if_short(cfg)
    assert not caplog.records
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    warn_if_short(cfg)
    assert "holds 4 CPU at once" in caplog.text and "this cluster has 2 CPU now" in caplog.text
    # Labelling in the driver's process reserves nothing.
    here = load_cotrain_config(None, [TINY_TASK_OVERRIDE, "lm.scaling.cpus_per_worker=2", "emb.scaling.cpus_per_worker=1",
                                      "inference.num_cpus=1", "inference.num_actors=0"])
    assert here.footprint() == {"CPU": 3.0, "GPU": 0.0}
    with pytest.raises(ConfigError, match=r"inference\.num_actors=-1 is not valid: expected an integer >= 0 \(0 = in"):
        load_cotrain_config(None, [TINY_TASK_OVERRIDE, "inference.num_actors=-1"])
    assert here.inference.precision == ("bf16" if native_bf16() else "fp32")  # auto, resolved (xlt.hardware)
    with pytest.raises(ConfigError, match=r"inference\.precision='fp8' is not valid: expected auto or fp32 or bf16 or fp16"):
        load_cotrain_config(None, [TINY_TASK_OVERRIDE, "inference.precision=fp8"])
    with pytest.raises(ConfigError, match=r"inference\.tokens_per_batch=-1 is not valid: expected an integer >= 0"):
        load_cotrain_config(None, [TINY_TASK_OVERRIDE, "inference.tokens_per_batch=-1"])
    with pytest.raises(ConfigError, match=r"inference\.num_gpus=-0.5 is not valid: expected a number >= 0"):
        load_cotrain_config(None, [TINY_TASK_OVERRIDE, "inference.num_gpus=-0.5"])


@pytest.mark.parametrize("preset", ["cotrain_demo", "cotrain_sib200"])
def test_the_presets_for_one_machine_hold_at_most_its_two_cpus(preset):
    """Else the job warns that it waits for an autoscaler (an in-process learner's share counts)."""
    cfg = load_cotrain_config(REPO / "configs" / f"{preset}.yaml")
    assert cfg.footprint()["CPU"] <= 2, cfg.footprint()


def test_custom_resources_of_learner_workers_count_in_the_footprint():
    cfg = load_cotrain_config(None, [TINY_TASK_OVERRIDE, "lm.scaling={num_workers: 2, cpus_per_worker: 1, "
                                     "resources: {lm_host: 0.5}}", "emb.scaling.resources={lm_host: 1}"])
    assert cfg.lm.scaling.worker_resources() == {"CPU": 1, "lm_host": 0.5}
    inference = cfg.inference.num_actors * cfg.inference.num_cpus
    assert cfg.footprint()["lm_host"] == 2.0 and cfg.footprint()["CPU"] == 2 + cfg.emb.scaling.cpus_per_worker + inference
    with pytest.raises(ConfigError, match=r"^lm\.scaling\.resources\.CPU=1 is not valid: expected a number > 0 of a custom"):
        load_cotrain_config(None, [TINY_TASK_OVERRIDE, "lm.scaling.resources={CPU: 1}"])


def labelled_batch(ids: list[str], node: str, seed: int, worker: str | None = None, precision: str = "fp32") -> pa.Table:
    """A batch as the actor pool hands it on: pool columns, both learners' predictions, the actor
    (``worker``, by default one per node), its node and the precision it computed in."""
    rng = np.random.default_rng(seed)
    n = len(ids)
    columns = {"id": ids, "text": [f"t {i}" for i in ids], "text_pair": [None] * n, "lang": ["de"] * n,
               "gold": ["a"] * n, "probabilities": [[0.5, 0.5]] * n,
               "worker": [worker or f"actor-on-{node}"] * n, "node": [node] * n, "precision": [precision] * n}
    for name in LEARNERS:
        columns[f"{name}_pseudo_label"] = list(np.array(LABELS, dtype=object)[rng.integers(0, 3, n)])
        columns[f"{name}_confidence"] = rng.uniform(0.5, 1, n).astype(np.float32)
    return pa.table(columns)


def test_a_stream_in_any_order_feeds_both_selections_and_is_checked_exactly_once():
    ids = [f"u{i}" for i in range(9)]
    batches = [labelled_batch(ids[5:], "n1", 0, precision="bf16"), labelled_batch(ids[:2], "n2", 1),
               labelled_batch(ids[2:5], "n2", 2, worker="a second actor on n2")]
    stored = StoredPool([], [], len(ids), fingerprint(np.array(ids, dtype=object)))
    done: list[int] = []
    chosen = {name: Selection("agreement", threshold=0.0, size=100, seed=0) for name in LEARNERS}
    seen = stream_selections(iter(batches), chosen, partners={"lm": "emb", "emb": "lm"}, done=done.append)
    seen.check(stored)
    # The pass's placement: each actor's node, in the order their first rows came.
    assert seen.placement() == ["n1", "n2", "n2"] and done == [4, 2, 3] and seen.rows == 9
    assert list(seen.precisions) == ["bf16", "fp32"]  # n1's CPU has native bf16, n2's not: auto differed
    table = pa.concat_tables(batches)
    agreed = [i for i, a, b in zip(table["id"].to_pylist(), table["lm_pseudo_label"].to_pylist(),
                                   table["emb_pseudo_label"].to_pylist()) if a == b]
    for name in LEARNERS:
        got = chosen[name].result()
        assert sorted(got["id"].tolist()) == sorted(agreed) and set(got) == {*POOL_COLUMNS, "label", "confidence", "key"}
    # A row lost, or doubled by a retry, fails the pass (O(1) memory: a count and a sum of hashes).
    for wrong in ([batches[0], batches[1]], [*batches, labelled_batch(["u3"], "n1", 3)],
                  [batches[0], batches[1], labelled_batch(["u2", "u3", "u3"], "n2", 2)]):
        fresh = {name: Selection("threshold-random", threshold=0.0, size=1, seed=0) for name in LEARNERS}
        with pytest.raises(RuntimeError, match="a row was lost or predicted twice"):
            stream_selections(iter(wrong), fresh).check(stored)
    assert fingerprint(np.array(ids[::-1], dtype=object)) == stored.fingerprint and Pass().fingerprint == 0
