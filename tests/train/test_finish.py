"""A fine-tuning or pretraining run with evaluation off (``evals: []``, production retraining) ends without a score:
the ending says nothing was scored, ``results.json`` holds no rows and says so, and the run's record is updated with
what it wrote; the rows its task left out for an unknown label are counted in both. (The jobs themselves: ``python jobs/finetune.py --smoke --set 'evals=[]'`` trains, checkpoints and
exports; here their endings, on a run's metrics without a score.) What needs a score refuses evaluation off before
training: ``optim.keep: best-dev`` here, a sweep in ``tests/sweep/test_overrides.py``."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from conftest import REPO
from xlt.config import ConfigError
from xlt.record import RUNNING, read_record, write_record
from xlt.report import NOTHING_SCORED
from xlt.tracking import Tracker

TRAINED = {"train/epoch": 2, "train/global_step": 4, "train/loss": 1.9}  # what a run without evals reports


def ended(tmp_path, job: str, cfg, finish) -> tuple[str, dict]:
    """``finish(result, tracker)`` of a ``job`` run of ``cfg`` in ``tmp_path/run`` that reported ``TRAINED``: its
    printed ending and ``results.json``."""
    run = tmp_path / "run"
    write_record(run, job, cfg, RUNNING)
    result = SimpleNamespace(metrics=TRAINED, checkpoint=SimpleNamespace(path=str(run / "epoch002-step0000004")))
    finished = finish(result, Tracker(job, "run", run, enabled=False))
    assert read_record(run)["outputs"]["results"] == "results.json"
    return finished.text, json.loads((run / "results.json").read_text())


def test_a_finetuning_run_without_evals_ends_saying_nothing_was_scored(tmp_path):
    from xlt.train.config import load_finetune_config
    from xlt.train.finish import finish_finetune

    cfg = load_finetune_config(REPO / "configs" / "finetune_sib200.yaml", ["evals=[]", f"output.dir={tmp_path / 'run'}"])
    dropped = {"test/de": 2, "train/en": 3}  # task.unknown_labels: drop (tests/tasks/test_files.py)
    text, results = ended(tmp_path, "finetune", cfg,
                          lambda result, tracker: finish_finetune(cfg, result, tracker, dropped))
    assert NOTHING_SCORED in text and "| lang " not in text
    assert results["rows"] == [] and results["scored"] is False and results["metrics"] == TRAINED
    assert results["dropped rows"] == dropped
    assert "Rows left out for a label outside the task's (task.unknown_labels: drop): test/de 2, train/en 3." in text


def test_a_pretraining_run_without_evals_ends_saying_nothing_was_scored(tmp_path):
    from xlt.pretrain.config import load_pretrain_config
    from xlt.pretrain.finish import finish_pretrain

    cfg = load_pretrain_config(REPO / "configs" / "pretrain_veco2.yaml", ["evals=[]", f"output.dir={tmp_path / 'run'}"])
    mixture = SimpleNamespace(excluded=0, rows=lambda: [{"pair": "en-de", "n": 24}])
    text, results = ended(tmp_path, "pretrain", cfg, lambda result, tracker: finish_pretrain(
        SimpleNamespace(config=cfg, mixture=mixture), result, tracker))
    assert NOTHING_SCORED in text and "Tatoeba" not in text and results["tatoeba"] == []


def test_keeping_the_best_dev_epoch_refuses_evaluation_off_before_training():
    from xlt.train.config import load_finetune_config

    with pytest.raises(ConfigError, match=r"optim.keep='best-dev' is not valid: expected last, or evals scoring dev"):
        load_finetune_config(REPO / "configs" / "finetune_sib200.yaml", ["evals=[]", "optim.keep=best-dev"])
