"""benchmarks/cotrain_exchange.py: a run's selections scored against the pool's gold labels, per iteration and
language, with the run's own record of each selection's accuracy beside them."""

from __future__ import annotations

from benchmarks.loading import load_benchmark
from xlt.cotrain import CotrainConfig, LoopState
from xlt.cotrain.config import load_cotrain_config

from conftest import REPO


def test_each_selection_is_scored_against_gold_by_iteration_and_language():
    module = load_benchmark("cotrain_exchange")
    cfg: CotrainConfig = load_cotrain_config(REPO / "configs" / "cotrain_demo.yaml")
    state = LoopState(2, {"lm": [], "emb": []}, history=[
        {"iteration": 0, "learner": "lm", "pseudo/candidates": 9.0, "pseudo/accuracy": 0.5},
        {"iteration": 0, "learner": "emb", "pseudo/candidates": 4.0, "pseudo/accuracy": 1.0}])
    # what lm selected goes to emb (co-training), and the other way round
    state.received["emb"] += [{"id": "a", "label": "pos", "lang": "de", "iteration": 0, "selected_by": "lm"},
                              {"id": "b", "label": "pos", "lang": "fr", "iteration": 0, "selected_by": "lm"}]
    state.received["lm"] += [{"id": "c", "label": "neg", "lang": "de", "iteration": 0, "selected_by": "emb"}]
    steps, by_language = module.exchange_tables(cfg, state, {"a": "pos", "b": "neg", "c": "neg"})
    assert [(s["selected by"], s["to"], s["rows"], s["accuracy"], s["run's accuracy"]) for s in steps] == [
        ("emb", "lm", 1, 1.0, 1.0), ("lm", "emb", 2, 0.5, 0.5)]
    assert steps[1]["labels given"] == "pos 2" and steps[1]["gold labels"] == "pos 1, neg 1"
    assert [(r["selected by"], r["lang"], r["rows"], r["accuracy"]) for r in by_language] == [
        ("emb", "de", 1, 1.0), ("lm", "de", 1, 1.0), ("lm", "fr", 1, 0.0)]


def test_a_pass_that_selected_nothing_is_a_row_with_its_counts_as_integers():
    module = load_benchmark("cotrain_exchange")
    cfg: CotrainConfig = load_cotrain_config(REPO / "configs" / "cotrain_demo.yaml")
    state = LoopState(1, {"lm": [], "emb": []}, history=[
        {"iteration": 0, "learner": "emb", "pseudo/candidates": 0.0, "pseudo/accuracy": float("nan"), "train/rows": 50.0}])
    steps, by_language = module.exchange_tables(cfg, state, {})
    assert [(s["selected by"], s["candidates"], s["rows"], s["accuracy"], s["run's accuracy"]) for s in steps] == [
        ("emb", 0, 0, None, None)]
    assert by_language == []
    assert module.history_table(state, "test")[0]["labelled rows"] == 50
