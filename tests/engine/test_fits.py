"""A run serving many fits (``xlt.engine.fits``) against the bare PyTorch loop of ``test_loop``: every fit
ends with the weights a fresh training on its rows would have, also when its worker is killed
mid-fit or the driver starts a new service on the same run directory; a fit is fed as a run is;
the mailbox's protocol and the split of a fit's rows without Ray."""

# No `from __future__ import annotations`: Ray ships this module by value (see test_loop).

import dataclasses
import os
import signal
import sys
import threading
from unittest import mock

import pytest
import torch

from engine.test_loop import ROWS, Regression, ToyConfig, bare_loop, toy_rows, wait_for_snapshot
from xlt.engine import FitService, ScalingSettings, read_state, launch
from xlt.storage import OutputSettings
from xlt.engine import fits
from xlt.engine.fits import shard


def fit_config(cfg: ToyConfig, name: str, epochs: int) -> ToyConfig:
    # A fit is named by its output.dir's last part, beside the run serving it (as a co-training learner's fits).
    return dataclasses.replace(cfg, output=OutputSettings(f"{cfg.output.storage_path}/{name}", cfg.output.num_to_keep),
                               optim=dataclasses.replace(cfg.optim, epochs=epochs))


def assert_weights(outcome, cfg: ToyConfig, rows: list[dict]) -> None:
    state = read_state(outcome.checkpoint.path, ToyConfig)
    assert (state.epoch, state.config.output.name) == (cfg.optim.epochs, cfg.output.name)
    for name, tensor in bare_loop(cfg, rows).items():
        assert torch.allclose(state.model[name], tensor, atol=1e-6), name


def service(workload, cfg: ToyConfig) -> FitService:
    import ray

    for module in ("engine.test_loop", __name__):  # tests/ is not an installed package
        ray.cloudpickle.register_pickle_by_value(sys.modules[module])
    return FitService(workload, cfg, {})


@pytest.mark.parametrize("workers", [1, 0], ids=["ray-train", "in-process"])
def test_each_served_fit_ends_as_a_fresh_bare_loop_on_its_rows(ray_cluster, tmp_path, workers):
    cfg = ToyConfig(scaling=ScalingSettings(num_workers=workers),
                    output=OutputSettings(str(tmp_path / "served")))
    rows = toy_rows()
    fits = [(fit_config(cfg, "fit0", 2), rows), (fit_config(cfg, "fit1", 3), rows[::-1])]
    outcomes = []
    with service(Regression(), cfg) as served:
        for index, (fit_cfg, fit_rows) in enumerate(fits):
            outcomes.append(served.fit(index, fit_cfg, fit_rows))
            assert_weights(outcomes[-1], fit_cfg, fit_rows)  # read now: later fits' checkpoints replace it
            assert outcomes[-1].metrics["train/fit"] == index and outcomes[-1].metrics["train/resumed_from_step"] == 0
            assert outcomes[-1].metrics["train/global_step"] == 3 * fit_cfg.optim.epochs
    # A new service on the same run directory (a rerun job): the fit its last checkpoint belongs to
    # is not trained again; another fit starts afresh.
    with service(Regression(), cfg) as served:
        again = served.fit(1, *fits[1])
        assert again.checkpoint.path == outcomes[1].checkpoint.path and again.metrics == outcomes[1].metrics
        assert_weights(served.fit(2, *fits[0]), fits[0][0], rows)


class KilledInFit(Regression):
    """``Regression`` whose worker is SIGKILLed once, at the third micro-batch of the second epoch of
    the fit named ``fit``, after Ray Train has registered that fit's epoch-1 checkpoint."""

    def __init__(self, marker: str, run: str, fit: str) -> None:
        self.marker, self.run, self.fit = marker, run, fit

    def batcher(self, cfg, training, epoch, rank):
        inner = super().batcher(cfg, training, epoch, rank)
        seen = []

        def batch(rows):
            seen.append(1)
            if cfg.output.name == self.fit and epoch == 1 and len(seen) == 3 and not os.path.exists(self.marker):
                wait_for_snapshot(self.run, f"{self.fit}-epoch001")
                open(self.marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            return inner(rows)
        return batch


def test_a_worker_killed_mid_fit_is_restored_into_that_fit_and_a_failed_run_fails_the_next(ray_cluster, tmp_path):
    """One restart allowed (``max_failures: 1``), taken by the kill; a third fit then fails the run, and the
    fit waiting for it fails with the worker's error (in process: ``test_a_failed_run_fails_the_fit_waiting_for_it``)."""
    cfg = ToyConfig(scaling=ScalingSettings(max_failures=1), output=OutputSettings(str(tmp_path / "served")))
    marker, rows = tmp_path / "worker-was-killed", toy_rows()
    with pytest.raises(Exception) as failure:
        with service(KilledInFit(str(marker), str(tmp_path / "served"), "fit1"), cfg) as served:
            first = served.fit(0, fit_config(cfg, "fit0", 2), rows)
            second = served.fit(1, fit_config(cfg, "fit1", 2), rows[::-1])
            served.fit(2, fit_config(cfg, "fit2", 1), [{"y": 1.0}] * 8)  # rows without the column the batcher reads
    # Ray Train's error names the worker's.
    assert "KeyError" in f"{type(failure.value).__name__}: {failure.value}"
    assert marker.exists()
    assert first.metrics["train/resumed_from_step"] == 0
    assert second.metrics["train/resumed_from_step"] == 3  # restarted from fit1's epoch-1 checkpoint
    assert_weights(second, fit_config(cfg, "fit1", 2), rows[::-1])


def test_a_failed_run_fails_the_fit_waiting_for_it(ray_cluster, tmp_path):
    """In process, the error is the worker's own (on Ray Train: the killed worker's test above)."""
    cfg = ToyConfig(scaling=ScalingSettings(num_workers=0), output=OutputSettings(str(tmp_path / "served")))
    bad = fit_config(cfg, "fit0", 1)
    with pytest.raises(KeyError):  # a row without the column the batcher reads
        with service(Regression(), cfg) as served:
            served.fit(0, bad, [{"y": 1.0}] * 8)


def test_a_fits_rows_are_split_evenly():
    rows = [{"text": f"t{i}", "label": str(i % 2)} for i in range(10)]
    assert [len(shard(rows, rank, 3)) for rank in range(3)] == [3, 3, 3]  # rows // workers each, as Ray Data
    assert shard(rows, 1, 3) == rows[3:6]


def test_one_block_is_drawn_from_whole_a_seeded_permutation(ray_cluster):
    """A served fit's share is one block: Ray's buffer (at least ``shuffle_buffer`` rows) takes it
    whole, so an epoch is ``default_rng(seed).permutation`` of the rows, whatever their number."""
    import numpy as np
    import ray.data

    from xlt.engine.loop import epoch_batches

    cfg = ToyConfig()
    cfg = dataclasses.replace(cfg, optim=dataclasses.replace(cfg.optim, shuffle_buffer=8))
    rows = ray.data.from_items([{"i": i} for i in range(40)], override_num_blocks=1).materialize()
    for seed in (0, 3):
        order = [i for batch in epoch_batches(rows, Regression(), None, cfg, seed) for i in batch["i"]]
        assert order == np.random.default_rng(seed).permutation(40).tolist()


def test_a_served_fit_is_fed_as_a_run_of_its_config(ray_cluster, tmp_path):
    """One feed (``loop.epoch_batches``): with a shuffle buffer, a served fit ends with the weights of
    a run of the same config on the same rows (held as one block, as the fit holds them), and a
    shuffled fit differs from one in data order."""
    import ray.data

    cfg = ToyConfig(scaling=ScalingSettings(num_workers=0), output=OutputSettings(str(tmp_path / "served")))
    shuffled = fit_config(dataclasses.replace(cfg, optim=dataclasses.replace(cfg.optim, shuffle_buffer=ROWS // 2)),
                          "fit0", 2)
    rows = toy_rows()
    threads = []
    epochs = fits.train_epochs
    with mock.patch.object(fits, "train_epochs", lambda *a, **k: threads.append(threading.current_thread())
                           or epochs(*a, **k)), service(Regression(), cfg) as served:
        fit = read_state(served.fit(0, shuffled, rows).checkpoint.path, ToyConfig).model
        in_order = read_state(served.fit(1, fit_config(cfg, "fit1", 2), rows).checkpoint.path, ToyConfig).model
    # In process, each fit trains in the thread that asked for it: one OpenMP master per process (xlt.engine.fits).
    assert threads == [threading.current_thread()] * 2
    ran = launch(Regression(), dataclasses.replace(shuffled, output=OutputSettings(str(tmp_path / "run"))),
                        {"train": ray.data.from_items(rows, override_num_blocks=1)}).fit()
    run = read_state(ran.checkpoint.path, ToyConfig).model
    assert all(torch.equal(fit[name], run[name]) for name in run)
    assert not torch.allclose(fit["weight"], in_order["weight"])
