"""Trial pieces without Tune: the trial's config, co-training scores, resources."""

from __future__ import annotations

import pytest

from conftest import TINY_TASK
from xlt.config import ConfigError, from_dict
from xlt.cotrain.config import CotrainConfig
from xlt.sweep.space import parse_space
from xlt.sweep.trainables import DRIVER_ONLY, JOBS, TrialSetup, cotrain_metrics, max_concurrent
from xlt.train.config import FinetuneConfig


def test_trial_setup_applies_active_values_over_the_trial_overrides():
    params = parse_space({"job": "finetune", "params": {
        "data.augment.t_c": {"choice": [0, 1]},
        "data.augment.r_c": {"uniform": [0.2, 0.8], "when": {"data.augment.t_c": 1}}}}).params
    setup = TrialSetup({"task": TINY_TASK, "data": {"augment": {"r_c": 0.5, "languages": ["de"]}}}, params,
                       ("optim.epochs=1",))
    # the random searcher samples r_c anyway; with t_c = 0 the preset's r_c stands
    cfg = from_dict(FinetuneConfig, setup.data({"data.augment.t_c": 0, "data.augment.r_c": 0.7}))
    assert (cfg.data.augment.t_c, cfg.data.augment.r_c, cfg.optim.epochs) == (0, 0.5, 1)
    cfg = from_dict(FinetuneConfig, setup.data({"data.augment.t_c": 1, "data.augment.r_c": 0.7}))
    assert (cfg.data.augment.t_c, cfg.data.augment.r_c) == (1, 0.7)


def test_cotrain_score_is_the_better_learners():
    records = [{"iteration": 1, "learner": "lm", "mode": "cotrain", "train/rows": 30.0, "val/acc/en": 0.9,
                "val/acc/avg_target": 0.6, "pseudo/selected": 10.0},
               {"iteration": 1, "learner": "emb", "mode": "cotrain", "train/rows": 32.0, "val/acc/en": 0.8,
                "val/acc/avg_target": 0.7},
               {"iteration": 1, "learner": "classifier", "mode": "cotrain", "val/acc/avg_target": 0.75}]
    metrics = cotrain_metrics(1, records, "val")
    # The job's classifier is reported beside the learners, never taken for one (a trial's checkpoints are theirs)
    assert metrics["train/iteration"] == 2 and metrics["best_learner"] == "emb"
    assert metrics["classifier/val/acc/avg_target"] == 0.75
    assert metrics["val/acc/avg_target"] == 0.7 and metrics["val/acc/en"] == 0.8
    assert metrics["lm/val/acc/avg_target"] == 0.6 and metrics["lm/pseudo/selected"] == 10.0
    assert "lm/mode" not in metrics and "lm/iteration" not in metrics


def test_resources_and_concurrency():
    finetune = JOBS["finetune"]
    cfg = from_dict(FinetuneConfig, {"task": TINY_TASK, "scaling": {"cpus_per_worker": 2}})
    # the trial only drives its Ray Train run; the run's workers are its footprint
    assert finetune.resources(cfg) == DRIVER_ONLY and finetune.max_t(from_dict(FinetuneConfig, {"task": TINY_TASK})) == 3
    assert max_concurrent(finetune.footprint(cfg), {"CPU": 8.0}) == 4
    assert max_concurrent(finetune.footprint(cfg), {"CPU": 1.0}) == 1  # never zero: Tune queues it
    two = from_dict(FinetuneConfig, {"task": TINY_TASK, "scaling": {"num_workers": 2, "use_gpu": True}})
    assert finetune.footprint(two) == {"CPU": 2, "GPU": 2}
    cotrain = JOBS["cotrain"]
    cfg = from_dict(CotrainConfig, {"task": TINY_TASK, "lm": {"scaling": {"num_workers": 2, "use_gpu": True}},
                                    "emb": {"scaling": {"cpus_per_worker": 0.5}},
                                    "inference": {"num_actors": 2, "num_cpus": 0.5}})
    # the learners' Ray Train workers and the pseudo-labelling actors reserve their own resources
    assert cotrain.resources(cfg) == DRIVER_ONLY
    assert cotrain.footprint(cfg) == {"CPU": 3.5, "GPU": 2}
    assert max_concurrent(cotrain.footprint(cfg), {"CPU": 8.0, "GPU": 4.0}) == 2
    assert cotrain.max_t(cfg) == 4
    # In process (scaling.num_workers: 0) the trial trains itself: its bundle holds what a worker would.
    local = from_dict(FinetuneConfig, {"task": TINY_TASK, "scaling": {"num_workers": 0, "cpus_per_worker": 2}})
    assert finetune.resources(local) == finetune.footprint(local) == {"CPU": 2}
    mixed = from_dict(CotrainConfig, {"task": TINY_TASK, "lm": {"scaling": {"num_workers": 0}},
                                      "emb": {"scaling": {"cpus_per_worker": 0.5}}})
    assert cotrain.resources(mixed) == {"CPU": 1} and cotrain.footprint(mixed) == {"CPU": 2.5, "GPU": 0}


def test_jobs_refuse_what_a_sweep_cannot_run_and_trials_may_train_on_several_workers():
    JOBS["finetune"].check(from_dict(FinetuneConfig, {"task": TINY_TASK, "scaling": {"num_workers": 2}}))
    with pytest.raises(ConfigError, match=r"data.eval_split='test' is not valid: expected dev in a sweep"):
        JOBS["cotrain"].check(from_dict(CotrainConfig, {"task": TINY_TASK}))
    JOBS["cotrain"].check(from_dict(CotrainConfig, {"task": TINY_TASK, "data": {"eval_split": "dev"}}))
