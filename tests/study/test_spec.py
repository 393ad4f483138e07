"""Study files: what they say, what they refuse (file, key, what was expected), and what each unit runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import REPO
from xlt.config import ConfigError
from xlt.study import Unit, load_study

PRESET = str(REPO / "configs" / "finetune_sib200.yaml")


def write(tmp_path: Path, **data) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"job": "finetune", "preset": PRESET, **data}, sort_keys=False))
    return path


def test_a_study_lists_its_units_arms_and_seeded_configs(tmp_path):
    study = load_study(write(tmp_path, seeds=[3, 4], set=["data.max_examples=8"], variants={
        "ce": None, "views": {"label": "CE + views", "set": ["data.augment={t_f: 1, t_p: 0, t_c: 0, languages: [de]}"]},
        "probe": {"recipe": "probe", "model": "bundled:use-multilingual-v3"}},
        comparisons=[{"a": "views", "b": "ce", "paper": "+1", "source": "x"}]))
    assert [u.name for u in study.units()] == ["ce-seed3", "ce-seed4", "views-seed3", "views-seed4", "probe-seed3"]
    assert study.output == "results/studies/s" and study.split == "test" and study.label("views") == "CE + views"
    ce, views = study.unit_data(Unit("ce", 4)), study.unit_data(Unit("views", 4), ["optim.lr=0.5"])
    assert ce["optim"]["seed"] == 4 and ce["data"]["max_examples"] == 8 and "augment" not in ce["data"]
    assert views["data"]["augment"]["seed"] == 4 and views["optim"]["lr"] == 0.5  # views drawn per seed too


def test_a_co_training_variant_scores_each_learner(tmp_path):
    study = load_study(write(tmp_path, job="cotrain", preset=str(REPO / "configs" / "cotrain_nusax.yaml"),
                             variants={"co": None}, comparisons=[{"a": "co/lm", "b": "co/emb"}]))
    assert study.all_arms() == ["co/lm", "co/emb"] and study.label("co/emb") == "co (EMB learner)"
    data = study.unit_data(Unit("co", 2))
    assert (data["selection"]["seed"], data["lm"]["optim"]["seed"], data["emb"]["optim"]["seed"]) == (2, 2, 2)


@pytest.mark.parametrize("data, message", [
    ({"variants": {"a": None}, "colour": 1}, "top level: unknown key(s) ['colour']"),
    ({"variants": {"a": {"recipe": "knn"}}}, "variants.a.recipe: 'knn' is not a recipe; expected one of job, probe, setfit"),
    ({"variants": {"a": {"model": "tiny:bert"}}}, "variants.a.model: only a baseline recipe"),
    ({"variants": {"a": {"recipe": "setfit", "setfit": {"num_iterations": "many"}}}}, "variants.a.setfit"),
    ({"variants": {"a": {"adapt": {"center": True}}}}, "variants.a.adapt: settings of a baseline recipe's head"),
    ({"variants": {"a": {"recipe": "probe", "adapt": {"rounds": -1}}}}, "variants.a.adapt: variants.a.adapt.rounds=-1 is not valid"),
    ({"variants": {"a": {"set": "optim.lr=1"}}}, "variants.a.set: expected a list of key=value strings"),
    ({"variants": {"a": None}, "seeds": [1, 1]}, "seeds: expected a list of distinct integers"),
    ({"variants": {"a": None}, "comparisons": [{"a": "a", "b": "b"}]}, "comparisons[0].b: 'b' is not one of the study's arms (a)"),
    ({"variants": {"a": None}, "job": "pretrain"}, "job: 'pretrain': expected one of finetune, cotrain"),
    ({"variants": {"a": None}, "preset": "nowhere.yaml"}, "preset: 'nowhere.yaml' is not a file"),
])
def test_a_bad_study_file_is_refused_naming_the_key(tmp_path, data, message):
    path = write(tmp_path, **data)
    with pytest.raises(ConfigError, match=r"s\.yaml: ") as error:
        load_study(path)
    assert message in str(error.value)


def test_every_committed_study_loads_and_its_units_configs_build():
    from xlt.study.units import UnitSetup, unit_config
    from xlt.sweep.trainables import JOBS

    for path in sorted((REPO / "studies").glob("*.yaml")):
        study = load_study(path)
        setup = UnitSetup(study, "/tmp/unused")
        for unit in {u.variant: u for u in study.units()}.values():  # one seed a variant: the rest differ by seed alone
            JOBS[study.job].config(unit_config(setup, unit))  # a baseline's too: it reads the job's rows


def test_the_readmes_study_of_your_own_task_loads_with_its_job_config(tmp_path):
    import re

    from xlt.config import from_dict
    from xlt.study.units import UnitSetup, unit_config
    from xlt.train.config import FinetuneConfig

    blocks = re.findall(r"```yaml\n(# (\S+)\n.*?)```", (REPO / "README.md").read_text(), re.S)
    files = {name: text for text, name in blocks}
    for name in ("my_reviews.yaml", "studies/my-reviews.yaml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(files[name])
    study = load_study(tmp_path / "studies" / "my-reviews.yaml")
    assert [v.recipe for v in study.variants] == ["probe", "probe", "setfit", "job", "job"]
    for unit in study.units():
        cfg = from_dict(FinetuneConfig, unit_config(UnitSetup(study, str(tmp_path / "out")), unit))
        assert cfg.task.name == "reviews" and cfg.data.max_examples == 200
