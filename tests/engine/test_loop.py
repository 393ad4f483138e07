"""The engine's per-worker loop against a bare PyTorch loop: the same weights after N steps on one
Ray Train worker killed mid-epoch and restored from its checkpoint, and in process
(``scaling.num_workers: 0``), uninterrupted and then resumed from its run directory.

The workload is a linear regression (no dropout, no data randomness once shuffling is off), so
the only differences the engine could make are in what it adds: seeding, AdamW's parameter
groups, the linear schedule, gradient clipping and accumulation, the order of the batches,
checkpointing and resuming. The reference writes each of those by hand with plain torch.
"""

# No `from __future__ import annotations`: Ray ships this module by value, and from_dict reads the
# config fields' types, which string annotations would name in a module the workers cannot import.

import dataclasses
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from xlt.record import read_record
from xlt.engine import OptimSettings, ScalingSettings, Workload, read_state, run_dir, steps_per_epoch, launch
from xlt.storage import OutputSettings

ROWS, DIM, BATCH = 24, 3, 4


@dataclass(frozen=True)
class ToyConfig:
    optim: OptimSettings = field(default_factory=lambda: OptimSettings(
        lr=0.05, weight_decay=0.1, batch_size=BATCH, epochs=2, warmup_ratio=0.25, max_grad_norm=0.5,
        grad_accum_steps=2, shuffle_buffer=0, log_every_steps=0))
    scaling: ScalingSettings = field(default_factory=ScalingSettings)
    output: OutputSettings = field(default_factory=OutputSettings)
    train_rows: int = ROWS

    def steps_per_epoch(self, num_workers: int) -> int:
        return steps_per_epoch(self.train_rows, num_workers, self.optim)


class Regression(Workload):
    """y ≈ w·x + b with a squared error; the loss part ``mse`` is reported as ``train/loss/mse``."""

    config_class = ToyConfig

    def build(self, cfg, steps_per_epoch, wrap):
        from xlt.engine import build_training

        return build_training(nn.Linear(DIM, 1), cfg.optim, steps_per_epoch, wrap)

    def batcher(self, cfg, training, epoch, rank):
        def batch(rows):
            x = torch.tensor(np.stack(rows["x"]), dtype=torch.float32)
            return (x, torch.tensor(rows["y"], dtype=torch.float32)), len(x)
        return batch

    def loss(self, training, model, inputs):
        x, y = inputs
        mse = ((model(x).squeeze(-1) - y) ** 2).mean()
        return mse, {"mse": mse}


def toy_rows() -> list[dict]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(ROWS, DIM))
    y = x @ np.array([1.0, -2.0, 0.5]) + 0.3 + 0.1 * rng.normal(size=ROWS)
    return [{"x": x[i].astype(np.float32), "y": float(y[i])} for i in range(ROWS)]


def bare_loop(cfg: ToyConfig, rows: list[dict]) -> dict[str, torch.Tensor]:
    """The same training written with plain torch: seeded init, AdamW (no decay on the bias),
    linear warmup then decay, micro-batches of BATCH, 2 per step, clipping, data order."""
    torch.manual_seed(cfg.optim.seed)
    model = nn.Linear(DIM, 1)
    opt = torch.optim.AdamW([{"params": [model.weight], "weight_decay": cfg.optim.weight_decay},
                             {"params": [model.bias], "weight_decay": 0.0}], lr=cfg.optim.lr)
    steps = cfg.steps_per_epoch(1)
    total = steps * cfg.optim.epochs
    warmup = round(cfg.optim.warmup_ratio * total)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: s / max(1, warmup) if s < warmup else max(0.0, (total - s) / max(1, total - warmup)))
    x = torch.tensor(np.stack([r["x"] for r in rows]))
    y = torch.tensor([r["y"] for r in rows], dtype=torch.float32)
    micro = [(x[i:i + BATCH], y[i:i + BATCH]) for i in range(0, ROWS, BATCH)]
    k = cfg.optim.grad_accum_steps
    for _ in range(cfg.optim.epochs):
        for start in range(0, len(micro), k):
            group = micro[start:start + k]
            opt.zero_grad()
            for bx, by in group:
                (((model(bx).squeeze(-1) - by) ** 2).mean() / len(group)).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.max_grad_norm)
            opt.step()
            schedule.step()
    return model.state_dict()


def engine_run(workload: Workload, cfg: ToyConfig, rows: list[dict]):
    import ray.data

    # Ray workers import this module by value: tests/ is not an installed package.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    datasets = {"train": ray.data.from_items(rows, override_num_blocks=1)}
    return launch(workload, cfg, datasets).fit()


def wait_for_snapshot(run: str, checkpoint: str) -> None:
    """Until Ray Train's controller has registered ``checkpoint`` (it polls the workers' reports
    every few seconds; a kill before that restarts the run from an earlier checkpoint)."""
    snapshot = os.path.join(run, "checkpoint_manager_snapshot.json")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if os.path.exists(snapshot) and checkpoint in open(snapshot).read():
            return
        time.sleep(0.2)
    raise TimeoutError(f"{snapshot} never listed the checkpoint {checkpoint}")


class KilledOnce(Regression):
    """``Regression`` whose worker process is SIGKILLed at the third micro-batch of the second
    epoch, once (``marker`` remembers it across the restart)."""

    def __init__(self, marker: str, run: str) -> None:
        self.marker, self.run = marker, run

    def batcher(self, cfg, training, epoch, rank):
        inner = super().batcher(cfg, training, epoch, rank)
        seen = []

        def batch(rows):
            seen.append(1)
            if epoch == 1 and len(seen) == 3 and not os.path.exists(self.marker):
                wait_for_snapshot(self.run, "epoch001")
                open(self.marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            return inner(rows)
        return batch


def test_a_worker_killed_mid_epoch_resumes_from_its_checkpoint_to_the_same_weights(ray_cluster, tmp_path, monkeypatch):
    """Also: the run directory's latest checkpoint (``latest_checkpoint``, as Ray Train's controller
    recorded it, through the restart) is the one the run ended with, however the directory is named
    (tests/engine/test_checkpoints.py: the same in process)."""
    rows = toy_rows()
    cfg = ToyConfig(scaling=ScalingSettings(max_failures=1),
                    output=OutputSettings(str(tmp_path / "killed")))
    marker = tmp_path / "worker-was-killed"
    result = engine_run(KilledOnce(str(marker), run_dir(cfg)), cfg, rows)
    assert marker.exists()  # the worker was killed once, in epoch 2
    assert result.metrics["train/resumed_from_step"] == 3  # restarted from the epoch-1 checkpoint
    state = read_state(result.checkpoint.path, ToyConfig)
    assert (state.epoch, state.global_step) == (2, 6)
    # The bare loop's weights: its first epoch trained before the kill, uninterrupted, on Ray Train.
    for name, tensor in bare_loop(cfg, rows).items():
        assert torch.allclose(state.model[name], tensor, atol=1e-6), name
    assert result.metrics["train/loss/mse"] == pytest.approx(result.metrics["train/loss"])
    assert_latest_checkpoint(result, run_dir(cfg), monkeypatch)


def assert_latest_checkpoint(result, run: str, monkeypatch) -> None:
    """``run``'s latest checkpoint is ``result``'s, also named relative to the working directory, as a
    user types it (``results/...``)."""
    from xlt.engine.checkpoints import latest_checkpoint

    monkeypatch.chdir(os.path.dirname(run))
    name = os.path.basename(run)
    for form in (run, Path(run), f"{run}/", name, f"./{name}/"):
        assert latest_checkpoint(form).path == result.checkpoint.path, form


class Recorder:
    """A Ray Train ``UserCallback``'s one hook: what each report handed it."""

    def __init__(self) -> None:
        self.reports: list[tuple[dict, str | None]] = []

    def after_report(self, run_context, metrics, checkpoint) -> None:
        self.reports.append((metrics[0], checkpoint and os.path.basename(checkpoint.path)))


def test_in_process_the_engine_matches_a_bare_loop_and_resumes_from_the_run_directory(ray_cluster, tmp_path):
    """``scaling.num_workers: 0``: the same weights as the bare loop; each epoch's checkpoint lands
    in the run directory (the latest ``num_to_keep``), the callbacks see each report, and a rerun
    with more epochs resumes from the latest checkpoint there."""
    import ray.data

    rows = toy_rows()
    cfg = ToyConfig(scaling=ScalingSettings(num_workers=0),
                    output=OutputSettings(str(tmp_path / "inprocess"), num_to_keep=1))
    datasets = {"train": ray.data.from_items(rows, override_num_blocks=1)}
    recorder = Recorder()
    assert cfg.steps_per_epoch(1) == 3  # 6 micro-batches, 2 per step
    first = launch(Regression(), cfg, datasets, callbacks=[recorder]).fit()
    assert first.checkpoint.path == f"{run_dir(cfg)}/epoch002-step0000006"
    assert first.metrics["train/resumed_from_step"] == 0
    assert first.metrics["train/loss/mse"] == pytest.approx(first.metrics["train/loss"])
    state = read_state(first.checkpoint.path, ToyConfig)
    assert (state.epoch, state.global_step) == (2, 6)
    for name, tensor in bare_loop(cfg, rows).items():
        assert torch.allclose(state.model[name], tensor, atol=1e-6), name
    assert [(m["train/epoch"], name) for m, name in recorder.reports] == [(1, "epoch001-step0000003"),
                                                                          (2, "epoch002-step0000006")]
    kept = sorted(p.name for p in (tmp_path / "inprocess").iterdir() if p.name.startswith("epoch"))
    assert kept == ["epoch002-step0000006"]  # num_to_keep=1: the epoch-1 checkpoint was removed
    # No Ray Train controller kept this run: its snapshot is not there, the in-process run's list is, and its record.
    assert sorted(p.name for p in (tmp_path / "inprocess").glob("*.json")) == ["run.json", "xlt_checkpoints.json"]
    record = read_record(tmp_path / "inprocess")
    assert (record["job"], record["status"], record["outputs"]) == ("train", "finished",
                                                                    {"checkpoint": "epoch002-step0000006"})
    assert record["metrics"]["train/global_step"] == 6 and record["classifiers"] == {}  # a regression: none

    longer = ToyConfig(optim=dataclasses.replace(cfg.optim, epochs=3), scaling=cfg.scaling, output=cfg.output)
    second = launch(Regression(), longer, datasets).fit()
    assert second.metrics["train/resumed_from_step"] == 6 and second.metrics["train/global_step"] == 9
    assert read_state(second.checkpoint.path, ToyConfig).epoch == 3


# Scripted dev scores by epoch: the best is epoch 2 (epoch 3 ties it, and ties keep the earlier); with patience 2
# the run stops after epoch 4, the second epoch in a row without a better score.
DEV_SCORES = (0.5, 0.7, 0.7, 0.6, 0.9, 0.95)


class ScoredRegression(Regression):
    """``Regression`` whose evaluation after each epoch reports ``DEV_SCORES`` (what ``optim.keep: best-dev`` reads),
    and after the last the bias the module holds then (``test/bias``: what the final evaluation saw); ``fail_after``:
    the run fails once that epoch's checkpoint is written (a job killed there)."""

    def __init__(self, fail_after: int = 0) -> None:
        self.fail_after = fail_after

    def dev_metric(self, cfg):
        return "val/score"

    def evaluate(self, cfg, training, last, rows):
        from xlt.engine import Evaluation

        if self.fail_after and training.epoch == self.fail_after + 1:
            raise RuntimeError("killed after the checkpoint of epoch %d" % self.fail_after)
        return Evaluation({"val/score": DEV_SCORES[training.epoch - 1],
                           **({"test/bias": float(training.module.bias.detach())} if last else {})})


def first_best_and_stop(scores, patience: int, epochs: int) -> tuple[int, int]:
    """The naive reference: the epoch of the best score (the first of equals) among those trained, and the epoch the
    run stops after (patience epochs in a row without a better score; 0: never early)."""
    best = 1
    for epoch in range(1, epochs + 1):
        if scores[epoch - 1] > scores[best - 1]:
            best = epoch
        if patience and epoch - best >= patience:
            return best, epoch
    return best, epochs


@pytest.mark.parametrize("patience", [0, 2])
def test_keep_best_dev_ends_with_the_best_epochs_weights_and_patience_stops_the_run(ray_cluster, tmp_path, patience):
    """``optim.keep: best-dev``: the run ends holding the weights of the epoch of the best dev score (the first of
    equals), those its final evaluation scored, checkpointed and recorded as ``train/kept_epoch``; with
    ``optim.patience`` it stops after that many epochs in a row without a better score, as written out by hand. A
    run killed after an epoch that was not the best resumes to the same end."""
    import ray.data

    rows = toy_rows()
    epochs = len(DEV_SCORES)
    datasets = {"train": ray.data.from_items(rows, override_num_blocks=1)}

    def config(name: str, keep: str = "best-dev"):
        optim = dataclasses.replace(ToyConfig().optim, epochs=epochs, keep=keep, patience=patience if keep != "last" else 0)
        return ToyConfig(optim=optim, scaling=ScalingSettings(num_workers=0),
                         output=OutputSettings(str(tmp_path / name), num_to_keep=epochs))

    every = launch(ScoredRegression(), config("every-epoch", keep="last"), datasets).fit()  # each epoch's weights
    weights = {read_state(p, ToyConfig).epoch: read_state(p, ToyConfig).model
               for p in sorted((tmp_path / "every-epoch").glob("epoch*"))}
    best, stop = first_best_and_stop(DEV_SCORES, patience, epochs)
    assert (best, stop) == ((2, 4) if patience else (6, 6))

    kept = launch(ScoredRegression(), config("kept"), datasets).fit()
    state = read_state(kept.checkpoint.path, ToyConfig)
    assert (state.epoch, state.stopped, state.best.epoch) == (stop, stop < epochs, best)
    for name, tensor in weights[best].items():
        assert torch.equal(state.model[name], tensor), name
    assert kept.metrics["train/kept_epoch"] == best and kept.metrics["train/epoch"] == stop
    assert kept.metrics["test/bias"] == pytest.approx(float(weights[best]["bias"]))
    if stop < epochs:  # every epoch up to the stop trained as the run that kept each
        for name, tensor in weights[stop].items():
            assert not torch.equal(state.model[name], tensor) or best == stop, name
    # A finished run is complete, stopped or not: a rerun trains nothing and keeps its weights.
    again = launch(ScoredRegression(), config("kept"), datasets).fit()
    assert again.checkpoint.path == kept.checkpoint.path

    # Killed after epoch 3 (not the best: its weights are in best_model.pt beside the checkpoint), then rerun.
    with pytest.raises(Exception, match="killed after the checkpoint of epoch 3"):
        launch(ScoredRegression(fail_after=3), config("killed"), datasets).fit()
    assert (tmp_path / "killed" / "epoch003-step0000009" / "best_model.pt").is_file()
    resumed = launch(ScoredRegression(), config("killed"), datasets).fit()
    assert resumed.metrics["train/resumed_from_step"] == 9
    assert read_state(resumed.checkpoint.path, ToyConfig).model.keys() == state.model.keys()
    for name, tensor in read_state(resumed.checkpoint.path, ToyConfig).model.items():
        assert torch.equal(tensor, state.model[name]), name


def test_keep_best_dev_stops_every_worker_alike(ray_cluster, tmp_path):
    """Two Ray Train workers: rank 0 alone evaluates, and the stop it decides reaches the other rank (else the next
    epoch's collective calls would hang)."""
    cfg = ToyConfig(optim=dataclasses.replace(ToyConfig().optim, epochs=len(DEV_SCORES), keep="best-dev", patience=2),
                    scaling=ScalingSettings(num_workers=2, cpus_per_worker=0.5),
                    output=OutputSettings(str(tmp_path / "two")))
    result = engine_run(ScoredRegression(), cfg, toy_rows())
    assert (result.metrics["train/epoch"], result.metrics["train/kept_epoch"]) == (4, 2)
