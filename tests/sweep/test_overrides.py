"""A trial is the preset + sweep_only + sampled values; the shipped spaces fit their presets."""

from __future__ import annotations

import pytest

from conftest import REPO, TINY_TASK
from xlt.config import apply_overrides, merge_presets
from xlt.sweep.overrides import as_overrides, check_space, exported_data, trial_data
from xlt.sweep.space import SpaceError, load_space, parse_space
from xlt.sweep.trainables import JOBS

BASE = {"objectives": [{"name": "supervised_contrastive_alignment", "params": {"temperature": 1.0}}],
        "optim": {"lr": 5e-5, "epochs": 3}}


def test_trial_data_layers_sweep_only_then_values_and_export_drops_sweep_only():
    values = {"objectives[0].params.temperature": 0.3, "optim.lr": 1e-5}
    data = trial_data(BASE, values, ["optim.epochs=1", "optim.lr=1.0e-3"])
    assert data == {"objectives": [{"name": "supervised_contrastive_alignment", "params": {"temperature": 0.3}}],
                    "optim": {"lr": 1e-5, "epochs": 1}}
    assert exported_data(BASE, values)["optim"] == {"lr": 1e-5, "epochs": 3}
    assert BASE["objectives"][0]["params"]["temperature"] == 1.0  # the preset is never modified


def test_as_overrides_parse_back_to_the_same_values():
    values = {"optim.lr": 1e-05, "objectives[0].weight": 2.5, "selection.policy": "agreement", "data.augment.t_c": 0,
              "x.flag": True, "x.none": None}
    overrides = as_overrides(values)
    assert "optim.lr=1.0e-05" in overrides  # 1e-05 would come back from YAML as a string
    base = {"objectives": [{"name": "a"}]}
    assert apply_overrides(base, overrides) == exported_data(base, values)


@pytest.mark.parametrize("name", sorted(p.stem for p in (REPO / "search_spaces").glob("*.yaml")))
def test_shipped_spaces_fit_their_presets(name):
    space = load_space(REPO / "search_spaces" / f"{name}.yaml")
    job = JOBS[space.job]
    check_space(space, merge_presets(space.preset), job.config)  # raises on any key or value the config refuses
    job.check(job.config(trial_data(merge_presets(space.preset), {}, space.sweep_only)))


def test_a_key_the_config_does_not_have_is_named_with_the_config_error():
    space = parse_space({"job": "finetune", "params": {"optim.lrr": {"uniform": [0.1, 0.2]}}}, "typo.yaml")
    with pytest.raises(SpaceError, match=r"typo.yaml: optim.lrr: the value 0.1 does not make a valid finetune config "
                                         r"from the preset: unknown key optim.lrr for FinetuneOptim"):
        check_space(space, {"task": TINY_TASK}, JOBS["finetune"].config)


def test_a_value_out_of_the_configs_range_is_named():
    space = parse_space({"job": "finetune", "params": {"optim.batch_size": {"int": [0, 8]}}}, "range.yaml")
    with pytest.raises(SpaceError, match=r"range.yaml: optim.batch_size: the value 0 .*optim.batch_size=0 is not valid"):
        check_space(space, {"task": TINY_TASK}, JOBS["finetune"].config)


def test_an_index_past_the_presets_list_is_named():
    space = parse_space({"job": "finetune", "params": {"objectives[0].weight": {"uniform": [0.1, 2]}}}, "idx.yaml")
    with pytest.raises(SpaceError, match=r"idx.yaml: objectives\[0\].weight: .*objectives has 0 item\(s\)"):
        check_space(space, {"task": TINY_TASK}, JOBS["finetune"].config)


def test_conditional_entries_are_checked_with_their_condition_active():
    # r_c of 0.5 is only applied with t_c = 1; with the condition's value the config is valid
    space = parse_space({"job": "finetune", "params": {
        "data.augment.t_c": {"choice": [1, 2]},
        "data.augment.r_c": {"uniform": [0.2, 1.5], "when": {"data.augment.t_c": 2}}}}, "cond.yaml")
    base = {"task": TINY_TASK, "data": {"augment": {"languages": ["de"]}}}
    with pytest.raises(SpaceError, match=r"cond.yaml: data.augment.r_c: the value 1.5 .*r_c=1.5 is not valid"):
        check_space(space, base, JOBS["finetune"].config)


def test_the_documented_example_is_a_valid_space():
    import re

    import yaml

    block = re.search(r"```yaml\n(.*?)```", (REPO / "search_spaces" / "README.md").read_text(), re.S).group(1)
    space = parse_space(yaml.safe_load(block), "search_spaces/README.md")
    check_space(space, merge_presets(REPO / "configs" / "finetune_sib200_scl.yaml"), JOBS["finetune"].config)
    assert [p.type for p in space.params] == ["loguniform", "uniform", "int", "choice", "grid", "uniform"]
