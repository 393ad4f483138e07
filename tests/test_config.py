"""YAML + --set overrides -> frozen dataclasses; every bad key or value is named."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from conftest import REPO
from xlt.config import ConfigError, apply_overrides, check, load_config, save_config


@dataclass(frozen=True)
class Inner:
    pooling: Literal["cls", "mean"] = "cls"
    layer: int = -1


@dataclass(frozen=True)
class Outer:
    name: str = "run"
    lr: float = 5e-5
    steps: int = 10
    use_gpu: bool = False
    langs: tuple[str, ...] = ("de", "fr")
    prefix: str | None = None
    model: Inner = field(default_factory=Inner)

    def __post_init__(self):
        check(self.lr > 0, "lr", self.lr, "a positive number")


def write(tmp_path, text):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_yaml_and_overrides(tmp_path):
    cfg = load_config(Outer, write(tmp_path, "lr: 1e-4\nmodel:\n  pooling: mean\n"),
                      ["steps=3", "model.layer=2", "langs=[ar, hi]", "use_gpu=true", "prefix=null"])
    assert cfg == Outer(lr=1e-4, steps=3, use_gpu=True, langs=("ar", "hi"), model=Inner("mean", 2))


def test_int_is_a_valid_float_but_not_the_reverse(tmp_path):
    assert load_config(Outer, overrides=["lr=1"]).lr == 1.0
    with pytest.raises(ConfigError, match=r"steps=2.5 is not valid: expected an integer"):
        load_config(Outer, overrides=["steps=2.5"])


@pytest.mark.parametrize("overrides, match", [
    (["lrr=1"], r"unknown key lrr for Outer; valid keys: name, lr, steps"),
    (["model.pool=cls"], r"unknown key model.pool for Inner; valid keys: model.pooling, model.layer"),
    (["model.pooling=max"], r"model.pooling='max' is not valid: expected one of 'cls', 'mean'"),
    (["use_gpu=yes please"], r"use_gpu='yes please' is not valid: expected true or false"),
    (["lr=-1"], r"lr=-1.0 is not valid: expected a positive number"),
    (["langs=de"], r"langs='de' is not valid: expected a list"),
    (["steps"], r"not of the form key=value"),
    (["model=3"], r"model=3 is not valid: expected a mapping of Inner fields"),
])
def test_bad_values_are_named(overrides, match):
    with pytest.raises(ConfigError, match=match):
        load_config(Outer, overrides=overrides)


def test_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(Outer, tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(Outer, write(tmp_path, "- a\n- b\n"))
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(Outer, write(tmp_path, "a: [1,\n"))


def test_save_roundtrip(tmp_path):
    cfg = Outer(lr=3e-5, langs=("zh",), model=Inner("mean", 4))
    save_config(cfg, tmp_path / "out.yaml")
    assert load_config(Outer, tmp_path / "out.yaml") == cfg


def test_overrides_do_not_mutate_input():
    data = {"model": {"layer": 1}}
    apply_overrides(data, ["model.layer=2"])
    assert data == {"model": {"layer": 1}}


def test_frozen():
    with pytest.raises(Exception):
        Outer().lr = 1.0  # type: ignore[misc]


def test_overrides_address_list_items_by_index():
    data = {"objectives": [{"name": "a", "params": {"t": 1.0}}]}
    out = apply_overrides(data, ["objectives[0].params.t=0.3", "objectives[0].weight=2"])
    assert out == {"objectives": [{"name": "a", "params": {"t": 0.3}, "weight": 2}]}
    assert data == {"objectives": [{"name": "a", "params": {"t": 1.0}}]}  # lists are copied too
    with pytest.raises(ConfigError, match=r"objectives has 1 item\(s\), so no index 1"):
        apply_overrides(data, ["objectives[1].weight=2"])
    with pytest.raises(ConfigError, match=r"'model' is not a list"):
        apply_overrides({"model": {"layer": 1}}, ["model[0].layer=2"])


def test_every_job_preset_loads_with_its_task_and_with_smoke():
    from xlt.cotrain import load_cotrain_config
    from xlt.train import load_finetune_config

    configs = REPO / "configs"
    for name in ("sib200", "xnli", "pawsx", "nusax"):
        for load, smoke in ((load_finetune_config, "smoke.yaml"), (load_cotrain_config, "cotrain_smoke.yaml")):
            job = "finetune" if load is load_finetune_config else "cotrain"
            cfg = load(configs / f"{job}_{name}.yaml", smoke=configs / smoke)
            assert cfg.task.name == name and cfg.task.paired == (name in ("xnli", "pawsx"))


def test_the_declared_co_training_block_is_the_same_in_the_demo_sib200_and_nusax_presets():
    """Issue 92: one declared recipe, not tuned per dataset: the probe learner's kind, encoder and settings, the
    selection, the job's classifier and the rounds are equal (each preset keeps its lengths and its LM's batches)."""
    from xlt.cotrain import load_cotrain_config

    def block(name: str) -> dict:
        cfg = load_cotrain_config(REPO / "configs" / f"{name}.yaml")
        return {"iterations": cfg.iterations, "mode": cfg.mode, "selection": cfg.selection,
                "classifier": cfg.classifier, "emb": (cfg.emb.kind, cfg.emb.model.source, cfg.emb.probe)}

    demo = block("cotrain_demo")
    assert block("cotrain_sib200") == demo and block("cotrain_nusax") == demo
    assert demo["emb"][0] == "probe" and demo["classifier"].learners == ("lm", "emb")


@pytest.mark.parametrize("job, presets, smoke", [
    ("finetune", ("finetune_sib200", "finetune_xnli"), "smoke"),
    ("pretrain", ("pretrain_veco2", "pretrain_mgc"), "pretrain_smoke"),
    ("cotrain", ("cotrain_demo", "cotrain_xnli"), "cotrain_smoke"),
    ("evaluate", ("evaluate_sib200",), "evaluate_smoke"),
])
def test_every_job_smokes_one_way_into_a_directory_of_its_preset(job, presets, smoke):
    """One output key (``output.dir``), one data-dir key (``data.data_dir``) and one smoke mechanism for
    every job: the smoke runs of two presets never share a directory; ``--set output.dir`` still wins."""
    from xlt.cotrain.config import CotrainConfig
    from xlt.eval.protocols import EvaluateConfig
    from xlt.pretrain.config import PretrainConfig
    from xlt.train.config import FinetuneConfig

    cls = {"finetune": FinetuneConfig, "pretrain": PretrainConfig, "cotrain": CotrainConfig,
           "evaluate": EvaluateConfig}[job]
    configs = REPO / "configs"
    for preset in presets:
        cfg = load_config(cls, configs / f"{preset}.yaml", ["data.data_dir=/data"], smoke=configs / f"{smoke}.yaml")
        assert (cfg.output.dir, cfg.data.data_dir) == (f"results/smoke/{preset}", "/data")
        assert load_config(cls, configs / f"{preset}.yaml").output.dir.startswith(f"results/{job}/")
    moved = load_config(cls, configs / f"{presets[0]}.yaml", ["output.dir=s3://b/x?scheme=http"],
                        smoke=configs / f"{smoke}.yaml").output
    assert (moved.dir, moved.storage_path, moved.name) == ("s3://b/x?scheme=http", "s3://b?scheme=http", "x")


def test_include_merges_a_file_under_a_key_and_set_may_include_too(tmp_path, monkeypatch):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "t.yaml").write_text("type: files\nname: t\nlabels: [a, b]\n", encoding="utf-8")
    (tmp_path / "job.yaml").write_text("task: {include: tasks/t.yaml, name: mine}\nother: 1\n", encoding="utf-8")
    from xlt.config import read_yaml

    assert read_yaml(tmp_path / "job.yaml") == {"task": {"type": "files", "name": "mine", "labels": ["a", "b"]},
                                                "other": 1}
    monkeypatch.chdir(tmp_path)
    assert apply_overrides({}, ["task={include: tasks/t.yaml}"])["task"]["name"] == "t"
    with pytest.raises(ConfigError, match="--set: task.include names .*missing.yaml, which does not exist"):
        apply_overrides({}, ["task={include: missing.yaml}"])
    with pytest.raises(ConfigError, match="is not valid YAML"):
        apply_overrides({}, ["data.target_langs=[de]'"])


def test_include_in_the_items_of_a_list(tmp_path, monkeypatch):
    (tmp_path / "bitext").mkdir()
    (tmp_path / "bitext" / "b.yaml").write_text("type: lines\nname: b\ntask: {include: ../t.yaml}\n", encoding="utf-8")
    (tmp_path / "t.yaml").write_text("name: t\n", encoding="utf-8")
    (tmp_path / "job.yaml").write_text("sources: [{include: bitext/b.yaml, langs: [de]}, {type: hf}]\n",
                                       encoding="utf-8")
    from xlt.config import read_yaml

    assert read_yaml(tmp_path / "job.yaml") == {"sources": [
        {"type": "lines", "name": "b", "task": {"name": "t"}, "langs": ["de"]}, {"type": "hf"}]}
    monkeypatch.chdir(tmp_path)
    assert apply_overrides({}, ["data.sources=[{include: bitext/b.yaml}]"])["data"]["sources"][0]["name"] == "b"
    with pytest.raises(ConfigError, match=r"--set: data.sources\[1\].include names .*missing.yaml"):
        apply_overrides({}, ["data.sources=[{include: bitext/b.yaml}, {include: missing.yaml}]"])
    with pytest.raises(ConfigError, match=r"--set: data.sources\[0\].task.include names .*missing.yaml"):
        apply_overrides({}, ["data.sources=[{type: task, task: {include: missing.yaml}}]"])


def test_a_key_set_on_the_command_line_replaces_the_presets_alternative_to_it(monkeypatch):
    """``InputConfig.ALTERNATIVES``: ``--set input.path=...`` over a preset that names ``input.task`` reads the file
    (the README's first predict command); both given on the command line are one error naming both keys."""
    from xlt.predict import PredictConfig

    monkeypatch.chdir(REPO)  # the command line's include is relative to it
    preset = REPO / "configs" / "predict_sib200.yaml"
    cfg = load_config(PredictConfig, preset, ["input.path=corpus.jsonl", "input.lang_field=lang"])
    assert cfg.input.path == "corpus.jsonl" and cfg.input.task is None
    assert load_config(PredictConfig, preset).input.task is not None
    with pytest.raises(ConfigError, match=r"^input.path and input.task: both are set; expected exactly one"):
        load_config(PredictConfig, preset, ["input.path=corpus.jsonl", "input.lang=de",
                                            "input.task={include: configs/tasks/sib200.yaml}"])
    with pytest.raises(ConfigError, match=r"^input.path and input.task: neither is set"):
        load_config(PredictConfig, preset, ["input.task=null"])
