"""``engine.settings.check_device``: every training job refuses a precision its device cannot compute
in before it reads any data (and before Ray starts), in one line naming the device."""

from __future__ import annotations

import pytest
import torch

from conftest import REPO
from xlt import hardware
from xlt.cotrain import load_cotrain_config, prepare as prepare_cotrain
from xlt.engine import OptimSettings, ScalingSettings, check_device
from xlt.pretrain import load_pretrain_config
from xlt.pretrain.trainer import prepare as prepare_pretrain
from xlt.train import load_finetune_config, prepare as prepare_finetune

CONFIGS = REPO / "configs"
NOWHERE = "data.data_dir=/nonexistent/xlt-data"  # reading data would fail with another message


@pytest.fixture
def avx2_only(monkeypatch):
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    monkeypatch.setattr(hardware, "cpu_model", lambda: "AMD EPYC 7B13")


@pytest.mark.parametrize("load, prepare, preset, key", [
    (load_finetune_config, prepare_finetune, "finetune_sib200.yaml", "optim.precision"),
    (load_pretrain_config, prepare_pretrain, "pretrain_ml_ctl.yaml", "optim.precision"),
    (load_cotrain_config, prepare_cotrain, "cotrain_demo.yaml", "emb.optim.precision"),
])
def test_each_job_refuses_bf16_on_a_cpu_without_it_before_reading_data(avx2_only, load, prepare, preset, key):
    cfg = load(CONFIGS / preset, [f"{key}=bf16", NOWHERE])
    with pytest.raises(ValueError, match=rf"^{key}: bf16 is not something this CPU \(AMD EPYC 7B13\) computes in; "
                                         r"it can do fp32 \(or auto\)$"):
        prepare(cfg)


def test_a_gpu_run_is_checked_on_its_workers_when_the_driver_has_no_gpu(avx2_only, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    check_device(OptimSettings(precision="bf16"), ScalingSettings(use_gpu=True))  # a CPU head node: no verdict here
    with pytest.raises(ValueError, match="bf16 is not something this CPU"):
        check_device(OptimSettings(precision="bf16"), ScalingSettings(use_gpu=False))
    check_device(OptimSettings(precision="auto"), ScalingSettings())  # auto: what the device can do


def test_a_run_in_process_on_a_gpu_needs_one_in_this_process(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"^lm.scaling.use_gpu: the run trains in this process \(lm.scaling.num_workers: 0\), "
                                         "which sees no GPU"):
        check_device(OptimSettings(), ScalingSettings(num_workers=0, use_gpu=True), "lm.")


@pytest.mark.parametrize("native", [True, False])
def test_auto_is_resolved_when_a_config_is_made_so_that_it_records_what_ran(monkeypatch, native):
    """Every job's config: training on a CPU by its flags, on a GPU fp32; pseudo-labelling likewise."""
    monkeypatch.setattr(hardware, "native_bf16", lambda flags=None: native)
    cpu = "bf16" if native else "fp32"
    finetune = load_finetune_config(CONFIGS / "finetune_sib200.yaml", ["optim.precision=auto"])
    pretrain = load_pretrain_config(CONFIGS / "pretrain_ml_ctl.yaml", ["optim.precision=auto"])
    cotrain = load_cotrain_config(CONFIGS / "cotrain_demo.yaml")  # lm.optim and inference: auto
    assert finetune.optim.precision == pretrain.optim.precision == cotrain.lm.optim.precision == cpu
    assert cotrain.inference.precision == cpu and cotrain.emb.optim.precision == "fp32"  # emb: fp32 as written
    on_gpu = load_finetune_config(CONFIGS / "finetune_sib200.yaml", ["optim.precision=auto", "scaling.use_gpu=true"])
    assert on_gpu.optim.precision == "fp32"
    gpu_actors = load_cotrain_config(CONFIGS / "cotrain_demo.yaml", ["inference.num_gpus=0.5"])
    assert gpu_actors.inference.precision == "fp32"
    assert load_finetune_config(CONFIGS / "finetune_sib200.yaml", ["optim.precision=fp16"]).optim.precision == "fp16"
