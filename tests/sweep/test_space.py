"""Space files -> Tune / Optuna spaces: every type, conditionals, and errors naming file, key, reason."""

from __future__ import annotations

import pickle
from pathlib import Path

import optuna
import pytest
from ray import tune
from ray.tune.search.variant_generator import generate_variants

from xlt.sweep.space import OptunaSpace, Param, SpaceError, active_values, load_space, parse_space, to_tune

SPACE = {
    "job": "finetune",
    "params": {
        "optim.lr": {"loguniform": [1.0e-5, 1.0e-3]},
        "data.augment.r_c": {"uniform": [0.1, 0.9]},
        "data.augment.t_f": {"int": [0, 2]},
        "objectives[0].name": {"choice": ["supervised_contrastive_alignment", "multiview_alignment"]},
        "objectives[0].params.temperature": {"loguniform": [0.05, 2.0],
                                             "when": {"objectives[0].name": "supervised_contrastive_alignment"}},
        "optim.seed": {"grid": [0, 1, 2]},
    },
}


def test_every_type_is_parsed_in_file_order():
    space = parse_space(SPACE, "space.yaml")
    assert space.metric == "val/acc/avg_target" and space.mode == "max" and space.num_samples == 10
    assert space.params == (
        Param("optim.lr", "loguniform", (1e-5, 1e-3)),
        Param("data.augment.r_c", "uniform", (0.1, 0.9)),
        Param("data.augment.t_f", "int", (0, 2)),
        Param("objectives[0].name", "choice", ("supervised_contrastive_alignment", "multiview_alignment")),
        Param("objectives[0].params.temperature", "loguniform", (0.05, 2.0),
              (("objectives[0].name", ("supervised_contrastive_alignment",)),)),
        Param("optim.seed", "grid", (0, 1, 2)),
    )


def test_random_search_space_samples_every_entry_and_enumerates_the_grid():
    params = parse_space(SPACE, "space.yaml").params
    space = to_tune(params, "random")
    assert isinstance(space["optim.lr"], tune.search.sample.Float) and space["data.augment.t_f"].upper == 3
    configs = [config for _ in range(30) for _, config in generate_variants(space)]
    assert sorted({c["optim.seed"] for c in configs}) == [0, 1, 2]  # each grid value, every sample
    assert {c["data.augment.t_f"] for c in configs} == {0, 1, 2}  # int: both ends included
    for c in configs:
        assert 1e-5 <= c["optim.lr"] <= 1e-3 and 0.1 <= c["data.augment.r_c"] <= 0.9
        active = active_values(params, c)
        # the temperature is sampled for every trial but applies only to SCL
        assert ("objectives[0].params.temperature" in active) == (c["objectives[0].name"] ==
                                                                  "supervised_contrastive_alignment")


def test_optuna_space_suggests_only_active_entries():
    data = {**SPACE, "params": {k: v for k, v in SPACE["params"].items() if k != "optim.seed"}}
    params = parse_space(data, "space.yaml").params
    space = to_tune(params, "optuna")
    assert isinstance(space, OptunaSpace)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0), direction="maximize")
    seen = set()
    for _ in range(40):
        trial = study.ask()
        space(trial)
        p = trial.params
        scl = p["objectives[0].name"] == "supervised_contrastive_alignment"
        assert ("objectives[0].params.temperature" in p) == scl
        assert 0.05 <= p.get("objectives[0].params.temperature", 0.05) <= 2.0 and 0.1 <= p["data.augment.r_c"] <= 0.9
        assert active_values(params, p) == p
        seen.add(p["data.augment.t_f"])
        study.tell(trial, 0.0)
    assert seen == {0, 1, 2}
    # OptunaSearch pickles its space with the searcher state a resumed sweep restores.
    assert pickle.loads(pickle.dumps(space)).params == params


def test_active_values_needs_every_active_entry():
    params = parse_space(SPACE, "space.yaml").params
    with pytest.raises(KeyError, match="optim.lr"):
        active_values(params, {"data.augment.r_c": 0.5})


def test_grid_is_refused_for_optuna_naming_file_and_key():
    with pytest.raises(SpaceError, match=r"space.yaml: optim.seed: grid enumerates its values.*--searcher random"):
        to_tune(parse_space(SPACE, "space.yaml").params, "optuna", "space.yaml")


def entry(value):
    return {"job": "finetune", "params": {"optim.lr": {"loguniform": [1e-5, 1e-3]}, "x.k": value}}


@pytest.mark.parametrize("data, key, reason", [
    ({"job": "finetune", "params": {"a": {"uniform": [0, 1]}}, "jobs": 1}, "jobs", "unknown key; valid keys: job"),
    ({"job": "pretrain", "params": {}}, "job", "got 'pretrain'; expected one of finetune, cotrain"),
    ({"job": "finetune", "metric": "test/acc/avg_target", "params": {}}, "metric", "never on test"),
    ({"job": "finetune", "mode": "best", "params": {}}, "mode", "expected max or min"),
    ({"job": "finetune", "num_samples": 0, "params": {}}, "num_samples", "an integer >= 1"),
    ({"job": "finetune", "sweep_only": "optim.epochs=1", "params": {}}, "sweep_only", "list of key=value"),
    ({"job": "finetune", "params": {}}, "params", "non-empty mapping"),
    ({"job": "finetune", "params": {"optim..lr": {"uniform": [0, 1]}}}, "optim..lr", "not a dotted config key"),
    (entry([0, 1]), "x.k", "expected a mapping"),
    (entry({"uniform": [0, 1], "choice": [1, 2]}), "x.k", "exactly one type"),
    (entry({"uniform": [0, 1], "log": True}), "x.k", "exactly one type"),
    (entry({"uniform": [0, 1, 2]}), "x.k", "uniform: got [0, 1, 2]; expected [low, high]"),
    (entry({"uniform": [1, 1]}), "x.k", "low 1 is not below high 1"),
    (entry({"uniform": ["a", 1]}), "x.k", "two finite numbers"),
    (entry({"loguniform": [0, 1]}), "x.k", "low 0 must be > 0"),
    (entry({"int": [0, 2.5]}), "x.k", "two integers"),
    (entry({"choice": [1]}), "x.k", "at least two values"),
    (entry({"choice": [[1, 2], 3]}), "x.k", "is not a scalar"),
    (entry({"grid": [1, 2, 1]}), "x.k", "repeats a value"),
    (entry({"uniform": [0, 1], "when": {"y.k": 1}}), "x.k", "'y.k' is not a choice or grid entry listed above"),
    (entry({"uniform": [0, 1], "when": {"optim.lr": 1e-4}}), "x.k", "those are: none"),
    (entry({"uniform": [0, 1], "when": "optim.lr"}), "x.k", "when: got 'optim.lr'; expected a mapping"),
])
def test_errors_name_file_key_and_reason(data, key, reason):
    with pytest.raises(SpaceError) as error:
        parse_space(data, "spaces/bad.yaml")
    assert str(error.value).startswith(f"spaces/bad.yaml: {key}: ") and reason in str(error.value)


def test_a_condition_must_name_a_value_its_entry_takes():
    data = {"job": "finetune", "params": {"a.b": {"choice": [0, 1]}, "c.d": {"uniform": [0, 1], "when": {"a.b": 2}}}}
    with pytest.raises(SpaceError, match=r"bad.yaml: c.d: when: a.b never takes \[2\]; its values are \[0, 1\]"):
        parse_space(data, "bad.yaml")


def test_load_space_reads_yaml_numbers_and_resolves_the_preset(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "p.yaml").write_text("optim: {lr: 1.0e-4}\n")
    (tmp_path / "spaces").mkdir()
    path = tmp_path / "spaces" / "s.yaml"
    # PyYAML reads 1e-5 as a string; the schema accepts it as the number it spells.
    path.write_text("job: finetune\npreset: ../configs/p.yaml\nparams:\n  optim.lr: {loguniform: [1e-5, 1e-3]}\n")
    space = load_space(path)
    assert space.params[0].args == (1e-5, 1e-3) and Path(space.preset) == tmp_path / "configs" / "p.yaml"
    path.write_text("job: finetune\npreset: ../configs/missing.yaml\nparams:\n  optim.lr: {uniform: [0, 1]}\n")
    with pytest.raises(SpaceError, match=r"s.yaml: preset: '../configs/missing.yaml' is not a file"):
        load_space(path)
