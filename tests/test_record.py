"""``xlt.record``: the ``run.json`` every job writes: written whole or not at all, read back as written, relative
paths, one-line refusals (no record, not JSON, a newer version)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from xlt.record import (FINISHED, RECORD_FILE, RUNNING, VERSION, MissingRecord, located, read_record, relative,
                        update_record, write_record)


@dataclass(frozen=True)
class Config:
    name: str = "run"
    epochs: int = 2


def test_a_record_reads_back_as_written_and_updates_add_outputs(tmp_path):
    path = write_record(tmp_path / "run", "finetune", Config(), RUNNING, phase="checkpoint epoch001",
                        classifiers={"model": {"export": "export"}}, default="model",
                        outputs={"checkpoint": tmp_path / "run" / "epoch001"})
    record = read_record(tmp_path / "run")
    assert path.endswith(RECORD_FILE) and sorted(p.name for p in (tmp_path / "run").iterdir()) == [RECORD_FILE]
    assert (record["version"], record["job"], record["status"], record["phase"]) == (VERSION, "finetune", RUNNING,
                                                                                     "checkpoint epoch001")
    assert record["config"] == {"name": "run", "epochs": 2} and record["outputs"] == {"checkpoint": "epoch001"}
    update_record(tmp_path / "run", status=FINISHED, outputs={"results": str(tmp_path / "run" / "results.json")})
    record = read_record(tmp_path / "run")
    assert record["status"] == FINISHED and "phase" not in record
    assert record["outputs"] == {"checkpoint": "epoch001", "results": "results.json"}
    assert record["classifiers"] == {"model": {"export": "export"}} and record["default"] == "model"


def test_paths_inside_the_run_are_kept_relative_and_read_back_where_the_run_now_is(tmp_path):
    assert relative(tmp_path, tmp_path / "a" / "model.pt") == "a/model.pt"
    assert relative(tmp_path / "run", tmp_path / "elsewhere") == str(tmp_path / "elsewhere")
    assert relative("s3://bucket/run", "s3://bucket/run/epoch001") == "epoch001"
    assert located(tmp_path / "moved", "a/model.pt") == str(tmp_path / "moved" / "a" / "model.pt")
    assert located(tmp_path, "/abs/model.pt") == "/abs/model.pt" and located(tmp_path, "s3://b/x") == "s3://b/x"


def test_what_is_not_a_record_is_refused_in_one_line(tmp_path):
    with pytest.raises(MissingRecord, match=r"holds no run.json, .* run the job that wrote it again"):
        read_record(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"command": "python jobs/cotrain.py --set output.dir=x"}))
    with pytest.raises(MissingRecord, match=r"run its own command again, which writes it without training: "
                                            r"python jobs/cotrain.py --set output.dir=x$"):
        read_record(tmp_path)
    (tmp_path / RECORD_FILE).write_text("{\n  not json")
    with pytest.raises(ValueError, match=r"run.json:2: not JSON"):
        read_record(tmp_path)
    write_record(tmp_path, "predict", {}, FINISHED)
    newer = json.loads((tmp_path / RECORD_FILE).read_text()) | {"version": VERSION + 1}
    (tmp_path / RECORD_FILE).write_text(json.dumps(newer))
    with pytest.raises(ValueError, match=rf"is version {VERSION + 1} of the run record; this xlt reads up to version "
                                         rf"{VERSION}: upgrade xlt"):
        read_record(tmp_path)
    with pytest.raises(ValueError, match=r"default classifier 'lm' is not one of the run's"):
        write_record(tmp_path, "cotrain", {}, FINISHED, default="lm")
