"""Ray Train end to end on 2 CPUs: two DDP workers with gradient accumulation, resume at the checkpoint's step."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import REPO
from xlt.config import ConfigError
from xlt.models import load_encoder
from xlt.pretrain.config import load_pretrain_config
from xlt.pretrain.trainer import build_trainer, encoder_dir, prepare, resume_config
from xlt.train import read_checkpoint
from xlt.engine import read_state, run_dir


def config(data_dir, tmp_path, *overrides):
    return load_pretrain_config(REPO / "configs" / "pretrain_ml_ctl.yaml", [
        f"data.data_dir={data_dir}", "data.max_pairs=12", "data.eval_max_pairs=8", "optim.batch_size=3",
        "optim.grad_accum_steps=2", "optim.epochs=1", "model.max_length=32", "scaling.num_workers=2", "scaling.cpus_per_worker=1",
        f"output.dir={tmp_path / 'resume'}",
        "data.annotate_actors=1", "data.annotate_cpus=0.5",  # the actor pool (the smoke preset: in process)
        *overrides], smoke=REPO / "configs" / "pretrain_smoke.yaml")


def test_two_workers_accumulate_and_resume(ray_cluster, data_dir, tmp_path):
    prepared = prepare(config(data_dir, tmp_path))
    cfg = prepared.config
    rows = cfg.data.train_rows
    assert 0 < rows <= 12 and rows == prepared.datasets["train"].count()  # pairs without a WPS are left out
    steps = cfg.steps_per_epoch(2)
    first = build_trainer(prepared).fit()
    assert first.metrics["train/global_step"] == steps and first.metrics["train/resumed_from_step"] == 0
    assert {"train/loss/cross_zero_nce", "train/loss/mlm", "val/tatoeba/fr", "val/tatoeba/avg"} <= set(first.metrics)
    saved = read_state(first.checkpoint.path, type(cfg))
    assert (saved.epoch, saved.global_step) == (1, steps) and saved.config == cfg

    second = build_trainer(resume_config(run_dir(cfg), ["optim.epochs=2"])).fit()
    assert second.metrics["train/resumed_from_step"] == steps and second.metrics["train/global_step"] == 2 * steps
    final = read_state(second.checkpoint.path, type(cfg))
    assert {float(s["step"]) for s in final.optimizer["state"].values()} == {2.0 * steps}  # AdamW resumed
    encoder = load_encoder(f"local:{encoder_dir(second.checkpoint.path)}")
    assert encoder.pooling == "avg_first_last" and np.isfinite(encoder.encode(["Die Katze."])).all()
    with pytest.raises(FileNotFoundError, match="not an xlt training checkpoint"):
        read_checkpoint(tmp_path)
    # What the run directory holds decides what resumes: another lr is another run; more epochs are the same.
    changed = dataclasses.replace(prepared, config=dataclasses.replace(
        cfg, optim=dataclasses.replace(cfg.optim, epochs=2, lr=1e-3)))
    with pytest.raises(ConfigError, match="differs in optim.lr"):
        build_trainer(changed)
    assert (build_trainer(dataclasses.replace(prepared, config=dataclasses.replace(
        cfg, optim=dataclasses.replace(cfg.optim, epochs=3))))).config.optim.epochs == 3
