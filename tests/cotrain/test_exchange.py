"""Exchange bookkeeping over iterations: who receives what, pools shrink, nothing lost or duplicated."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import TINY_TASK, TINY_TASK_OVERRIDE
from xlt.config import ConfigError, from_dict
from xlt.cotrain import LEARNERS, LoopState, PoolPredictions, exchange, load_cotrain_config, receiver
from xlt.cotrain.loop import CotrainData, collect
from xlt.tasks import Task, TaskConfig

LABELS = ("a", "b", "c")


def data(n_pool: int = 60, n_labeled: int = 30) -> CotrainData:
    labeled = [{"id": f"l{i}", "text": f"labelled {i}", "label": LABELS[i % 3], "lang": "en"} for i in range(n_labeled)]
    pool = [{"id": f"u{i}", "text": f"pool {i}", "lang": "de", "gold": LABELS[i % 3]} for i in range(n_pool)]
    task = Task(from_dict(TaskConfig, {**TINY_TASK, "labels": list(LABELS)}), None, {})
    return CotrainData(task, labeled, pool, {"text": [], "label": [], "lang": []})


def random_predictions(d: CotrainData, seed: int) -> PoolPredictions:
    rng = np.random.default_rng(seed)
    ids = np.array([r["id"] for r in d.pool], dtype=object)
    return PoolPredictions(ids, np.array(LABELS, dtype=object)[rng.integers(0, 3, len(ids))], rng.uniform(0.5, 1, len(ids)))


@pytest.mark.parametrize("mode", ["cotrain", "self-train"])
def test_exchange_over_iterations(mode):
    cfg = load_cotrain_config(None, [TINY_TASK_OVERRIDE, f"mode={mode}", "selection.threshold=0.6", "selection.seed=3"])
    d = data()
    state = LoopState.fresh(LEARNERS, [r["id"] for r in d.pool])
    gold = {r["id"]: r["gold"] for r in d.pool}
    for iteration in range(4):
        preds = {name: random_predictions(d, 10 * iteration + k) for k, name in enumerate(LEARNERS)}
        pools_before = {name: list(state.pool[name]) for name in LEARNERS}
        received_before = {name: len(state.received[name]) for name in LEARNERS}
        stats = exchange(state, preds, cfg, d, iteration)
        for k, name in enumerate(LEARNERS):
            to = receiver(mode, name)
            assert to == (name if mode == "self-train" else LEARNERS[1 - k])
            new = [r for r in state.received[to][received_before[to]:] if r["selected_by"] == name]
            ids = [r["id"] for r in new]
            assert len(ids) == stats[name]["pseudo/selected"] <= 30 // 3  # n/3 of the labelled data
            assert set(ids) <= set(pools_before[name])  # selected from the selector's own pool...
            assert set(state.pool[name]) == set(pools_before[name]) - set(ids)  # ...which it leaves
            own = {i: (label, c) for i, label, c in zip(preds[name].ids, preds[name].labels, preds[name].confidence)}
            assert all(r["label"] == own[r["id"]][0] and own[r["id"]][1] > 0.6 for r in new)  # its own pseudo-label
            assert all(r["iteration"] == iteration and r["text"] == f"pool {r['id'][1:]}" for r in new)
            if ids:
                assert stats[name]["pseudo/accuracy"] == pytest.approx(np.mean([gold[r["id"]] == r["label"] for r in new]))
    for name in LEARNERS:
        ids = [r["id"] for r in state.received[name]]
        assert len(ids) == len(set(ids))  # no labelled set receives a row twice
        assert len(state.pool[name]) + sum(r["selected_by"] == name for learner in LEARNERS
                                           for r in state.received[learner]) == len(d.pool)  # nothing lost


def test_state_round_trips_through_its_file(tmp_path):
    state = LoopState.fresh(LEARNERS, ["u1", "u2"])
    state.received["lm"].append({"id": "u1", "text": "x", "label": "a", "lang": "de", "iteration": 0,
                                 "selected_by": "emb"})
    state.iteration = 1
    state.save(tmp_path)
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


def test_custom_resources_of_learner_workers_count_in_the_footprint():
    cfg = load_cotrain_config(None, [TINY_TASK_OVERRIDE, "lm.scaling={num_workers: 2, cpus_per_worker: 1, "
                                     "resources: {lm_host: 0.5}}", "emb.scaling.resources={lm_host: 1}"])
    assert cfg.lm.scaling.worker_resources() == {"CPU": 1, "lm_host": 0.5}
    inference = cfg.inference.num_actors * cfg.inference.num_cpus
    assert cfg.footprint()["lm_host"] == 2.0 and cfg.footprint()["CPU"] == 2 + cfg.emb.scaling.cpus_per_worker + inference
    with pytest.raises(ConfigError, match=r"^lm\.scaling\.resources\.CPU=1 is not valid: expected a number > 0 of a custom"):
        load_cotrain_config(None, [TINY_TASK_OVERRIDE, "lm.scaling.resources={CPU: 1}"])


def test_collect_maps_a_stream_in_any_order_back_to_pool_rows():
    ids = np.array([f"u{i}" for i in range(7)], dtype=object)
    batches = [{"position": np.array([5, 1]), "pseudo_label": np.array(["b", "a"], dtype=object),
                "confidence": np.array([0.9, 0.6], dtype=np.float32), "node": np.array(["n1", "n1"], dtype=object)},
               {"position": np.array([0, 6, 3]), "pseudo_label": np.array(["c", "c", "a"], dtype=object),
                "confidence": np.array([0.5, 0.7, 0.8], dtype=np.float32), "node": np.array(["n2"] * 3, dtype=object)}]
    done = []
    preds, nodes = collect(iter(batches), ids, LABELS, done.append)
    assert preds.ids.tolist() == ["u5", "u1", "u0", "u6", "u3"] and preds.labels.tolist() == ["b", "a", "c", "c", "a"]
    assert preds.confidence.tolist() == [float(np.float32(c)) for c in (0.9, 0.6, 0.5, 0.7, 0.8)]
    assert nodes == {"n1": 2, "n2": 3} and done == [2, 3]
    assert preds.ids[0] is ids[5]  # the pool's own id objects, not a string made per row
    empty, none = collect(iter([]), ids, LABELS)
    assert len(empty.ids) == 0 and none == {}
