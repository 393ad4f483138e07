"""Results of a sweep: the best trial (finished runs first), the table, best-so-far, the exported config."""

from __future__ import annotations

import math

import pytest

from conftest import TINY_TASK
from report.images import assert_a_drawn_png
from xlt.sweep.best import (INTERRUPTED, TrialRecord, best_so_far, best_trial, export_config, plot_best_so_far,
                            reported_status, results_rows, summary)
from xlt.sweep.space import Param
from xlt.sweep.trainables import JOBS
from xlt.train import load_finetune_config

M, T = "val/acc/avg_target", "train/epoch"


def rec(index, acc, epochs, status="TERMINATED", **values):
    result = {} if acc is None else {M: acc, T: epochs}
    return TrialRecord(index, f"t{index}", status, values, result)


def test_best_prefers_trials_that_ran_to_the_end():
    records = [rec(0, 0.70, 3), rec(1, 0.80, 1), rec(2, 0.75, 3), rec(3, None, 0, "ERROR")]
    # trial 1 was stopped by ASHA after one epoch: its score is not what its config gives at epoch 3
    assert best_trial(records, M, "max", T, max_t=3).index == 2
    assert best_trial(records, M, "min", T, max_t=3).index == 0
    assert best_trial(records[1:2], M, "max", T, max_t=3).index == 1  # nobody finished: the best of all
    assert best_trial([rec(0, 0.7, 3), rec(1, 0.7, 3)], M, "max", T, 3).index == 0  # ties: the earlier
    with pytest.raises(ValueError, match="no trial reported 'val/acc/avg_target'; statuses: ERROR"):
        best_trial(records[3:], M, "max", T, 3)


def test_a_trial_the_saved_state_left_running_or_pending_was_interrupted():
    # tune.run marks every trial TERMINATED when SIGINT stops it; the state it saved just before does not
    assert reported_status("TERMINATED", "TERMINATED") == "TERMINATED"
    assert reported_status("TERMINATED", "RUNNING") == INTERRUPTED
    assert reported_status("TERMINATED", "PENDING") == INTERRUPTED
    assert reported_status("ERROR", "ERROR") == "ERROR"
    assert reported_status("TERMINATED", None) == "TERMINATED"  # not in the saved state: Tune's word stands


def test_non_finite_scores_do_not_count():
    records = [rec(0, math.nan, 3), rec(1, 0.5, 3)]
    assert best_trial(records, M, "max", T, 3).index == 1 and best_so_far(records, M, "max") == [None, 0.5]


def test_table_and_best_so_far_in_creation_order():
    params = [Param("optim.lr", "loguniform", (1e-5, 1e-3)), Param("data.augment.r_c", "uniform", (0, 1))]
    records = [rec(1, 0.6, 1, **{"optim.lr": 2e-5}), rec(0, 0.5, 3, **{"optim.lr": 1e-4, "data.augment.r_c": 0.3}),
               rec(2, 0.55, 3, **{"optim.lr": 3e-5})]
    rows = results_rows(records, params, M, T)
    assert [r["trial"] for r in rows] == [0, 1, 2]
    assert rows[0] == {"trial": 0, "status": "TERMINATED", "optim.lr": 1e-4, "data.augment.r_c": 0.3, M: 0.5, T: 3}
    assert rows[1]["data.augment.r_c"] is None  # inactive: shown as a dash
    assert best_so_far(records, M, "max") == [0.5, 0.6, 0.6] and best_so_far(records, M, "min") == [0.5, 0.5, 0.5]
    assert summary(records, T) == {"trials": 3, "statuses": {"TERMINATED": 3}, "total train/epoch": 7}


def test_plot_is_a_drawn_png(tmp_path):
    path = plot_best_so_far([rec(0, 0.5, 3), rec(1, None, 0, "ERROR"), rec(2, 0.6, 2)], M, "max",
                            tmp_path / "p.png", "title")
    assert_a_drawn_png(path)


def test_exported_config_is_what_jobs_finetune_reads(tmp_path):
    base = {"objectives": [{"name": "supervised_contrastive_alignment", "params": {"temperature": 1.0}}],
            "optim": {"epochs": 3}, "output": {"dir": "results/finetune/preset-run"}, "task": TINY_TASK}
    values = {"objectives[0].params.temperature": 0.25, "objectives[0].weight": 4.0, "optim.lr": 2e-5}
    job = JOBS["finetune"]
    export_config(job.config, base, values, job.renames("scl"), tmp_path / "best.yaml")
    cfg = load_finetune_config(tmp_path / "best.yaml")
    assert cfg.objectives[0].params == {"temperature": 0.25} and cfg.objectives[0].weight == 4.0
    assert cfg.optim.lr == 2e-5 and cfg.optim.epochs == 3 and cfg.output.dir == "results/finetune/scl-best"
