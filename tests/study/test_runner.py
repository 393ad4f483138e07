"""What a study runs next: units without a record, estimated from the finished ones; a finished unit whose
config the file no longer gives is refused, a failed one runs again."""

from __future__ import annotations

import dataclasses

import pytest

from study.test_report import record
from study.test_spec import write
from xlt.config import ConfigError
from xlt.study import Unit, load_study
from xlt.study.runner import plan, save_history
from xlt.study.units import IMPORTED, UnitSetup, unit_identity, write_unit_record


def test_the_plan_runs_what_has_no_record_and_estimates_it_from_what_has(tmp_path):
    study = load_study(write(tmp_path, seeds=[0, 1], variants={"ce": None, "probe": {"recipe": "probe"}}))
    setup = UnitSetup(study, str(tmp_path / "out"))
    write_unit_record(setup.output, "ce-seed0", {**record("ce", 0, [1, 0]), "minutes": 3.0,
                                            "config": unit_identity(setup, Unit("ce", 0))})
    save_history(setup.output, [{"units": ["ce-seed0", "ce-seed1"], "failed": {"ce-seed1": "OOM"},
                                 "stopped": ["probe-seed0"]}])
    planned = plan(setup)
    assert [u.name for u in planned.pending] == ["ce-seed1", "probe-seed0"]
    assert planned.table() == [{"unit": "ce-seed0", "status": "finished", "minutes": "3.0"},
                               {"unit": "ce-seed1", "status": "failed last time: runs again", "minutes": "~3.0"},
                               {"unit": "probe-seed0", "status": "stopped last time: continues", "minutes": "~3.0"}]
    assert planned.estimate_line().startswith("2 units to run: about 6.0 minutes of units")
    only = planned.select(["ce"], seeds=[1])  # --only ce --seeds 1
    assert [u.name for u in only.pending] == ["ce-seed1"]
    assert only.table()[2]["status"] == "not this time (--only / --seeds)"
    assert only.estimate_line().startswith("1 unit to run: about 3.0 minutes")
    assert planned.select(["ce"], seeds=[0]).estimate_line().startswith(
        "nothing selected is left to run; the rest of the study: 2 units unfinished: about 6.0 minutes")

    changed = UnitSetup(dataclasses.replace(study, set=("optim.lr=0.5",)), setup.output)
    with pytest.raises(ConfigError, match="units/ce-seed0.json was run with another config than .*s.yaml now gives"):
        plan(changed)


def test_a_study_with_only_imported_units_is_estimated_from_their_minutes(tmp_path):
    study = load_study(write(tmp_path, seeds=[0], variants={"ce": None, "probe": {"recipe": "probe"}}))
    setup = UnitSetup(study, str(tmp_path / "out"))
    write_unit_record(setup.output, "ce-seed0", {**record("ce", 0, [1, 0]), "minutes": 4.0}, folder=IMPORTED)
    assert [row["minutes"] for row in plan(setup).table()] == ["~4.0", "~4.0"]


def test_a_setting_a_record_lacks_counts_as_its_default_and_nothing_else():
    from xlt.study.units import default_setting, same_unit
    from xlt.train.config import FinetuneConfig

    assert default_setting(FinetuneConfig, "optim.head_lr") == 0.0 and default_setting(FinetuneConfig, "optim.lr") == 5e-5
    old = {"recipe": "job", "job": {"task": {"name": "t"}, "optim": {"lr": 1e-4}}}
    assert same_unit(old, {**old, "job": {**old["job"], "optim": {"lr": 1e-4, "head_lr": 0}}}, FinetuneConfig)
    assert same_unit({**old, "job": {**old["job"], "objectives": []}}, old, FinetuneConfig)  # the default (), as JSON keeps it
    assert not same_unit(old, {**old, "job": {**old["job"], "optim": {"lr": 1e-4, "head_lr": 1e-2}}}, FinetuneConfig)
    assert not same_unit(old, {**old, "job": {**old["job"], "optim": {"lr": 5e-5}}}, FinetuneConfig)
    assert not same_unit(old, {**old, "job": {**old["job"], "optim": {"lr": 1e-4, "seed": 3}}}, FinetuneConfig)
    # A free setting (what the run reports, where it runs) never makes another unit, whatever its value.
    assert same_unit(old, {**old, "job": {**old["job"], "evals": "x", "scaling": {"threads": 7}}}, FinetuneConfig)
    assert not same_unit(old, {**old, "model": "tiny:bert"}, FinetuneConfig)  # outside the job's config: no default


def test_a_baseline_unit_is_compared_on_the_job_settings_it_reads():
    from xlt.cotrain.config import CotrainConfig
    from xlt.study.recipes import ROWS_SETTINGS
    from xlt.study.units import same_unit

    reads = ROWS_SETTINGS["cotrain"]
    probe = {"recipe": "probe", "model": "bundled:e5", "job": {"task": {"name": "t"}, "data": {"max_examples": 200},
                                                               "lm": {"model": {"max_length": 64}, "optim": {"lr": 1e-4}}}}
    changed = {**probe, "job": {**probe["job"], "classifier": {"choose": "dev"}, "lm": {**probe["job"]["lm"],
                                                                                         "optim": {"lr": 5e-5}}}}
    assert same_unit(probe, changed, CotrainConfig, reads)  # the learners' rate, the classifier: not its rows
    assert not same_unit(probe, changed, CotrainConfig)  # a job unit reads them all
    for rows in ({"data": {"max_examples": 100}}, {"lm": {"model": {"max_length": 128}}}, {"task": {"name": "u"}}):
        assert not same_unit(probe, {**probe, "job": {**probe["job"], **rows}}, CotrainConfig, reads), rows
    assert not same_unit(probe, {**probe, "model": "bundled:use"}, CotrainConfig, reads)  # its own settings
