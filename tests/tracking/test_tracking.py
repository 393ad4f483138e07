"""xlt.tracking against a real SQLite MLflow store and real TensorBoard event files: parameters,
metrics by step, artifacts, a resumed output continuing its run, a failed job's status, and the
Ray Train callback's steps and prefixes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from xlt.tracking import Tracker, TrackingCallback, flatten, mlflow_key, numeric


@dataclass
class Optim:
    lr: float = 1e-4
    epochs: int = 3


@dataclass
class Config:
    name: str = "run"
    optim: Optim = field(default_factory=Optim)
    objectives: list = field(default_factory=lambda: [{"name": "scl", "weight": 0.5}])
    langs: tuple = ("de", "fr")


def scalars(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(log_dir))
    events.Reload()
    # TensorBoard keeps float32: values rounded to 6 places.
    return {tag: [(e.step, round(e.value, 6)) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_flatten_and_numeric():
    assert flatten(Config()) == {"name": "run", "optim.lr": "0.0001", "optim.epochs": "3",
                                 "objectives.0.name": "scl", "objectives.0.weight": "0.5",
                                 "langs": "('de', 'fr')"}
    assert numeric({"a": 1, "b": 0.5, "c": "x", "d": float("nan"), "e": True}) == {"a": 1.0, "b": 0.5}
    assert mlflow_key("objectives[0].params.temperature") == "objectives.0.params.temperature"
    assert mlflow_key("optim.lr") == "optim.lr" and mlflow_key("tiny:bert/de/xx->en") == "tiny:bert/de/xx-to-en"
    assert mlflow_key("a+b=c") == "a_b_c"


def test_a_run_with_params_metrics_artifacts_and_events_is_continued_when_resumed(tmp_path, mlflow_store):
    from mlflow.tracking import MlflowClient

    out = tmp_path / "out"
    (out).mkdir()
    (out / "results.json").write_text("{}")
    with Tracker("unit", "first", out) as tracker:
        tracker.params(Config())
        tracker.metrics({"test/acc/de": 0.5, "note": "text"}, 0, prefix="lm/")
        tracker.metrics({"test/acc/de": 0.7}, 1, prefix="lm/")
        tracker.artifacts(out / "results.json", out / "missing.png")
        tracker.tag("xlt.checkpoint", "/somewhere")
        run_id = tracker.run_id
    client = MlflowClient(mlflow_store)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.params["optim.lr"] == "0.0001"
    assert run.data.tags["xlt.checkpoint"] == "/somewhere" and run.data.tags["xlt.output"] == str(out.resolve())
    history = client.get_metric_history(run_id, "lm/test/acc/de")
    assert [(m.step, m.value) for m in history] == [(0, 0.5), (1, 0.7)]
    assert [a.path for a in client.list_artifacts(run_id)] == ["results.json"]
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.name == "xlt-unit"
    # Artifacts beside the SQLite file, not in ./mlruns of the working directory.
    assert experiment.artifact_location == (Path(mlflow_store[len("sqlite:///"):]).parent / "artifacts").as_uri()
    assert scalars(out / "tensorboard")["lm/test/acc/de"] == [(0, 0.5), (1, 0.7)]

    # The same output again (a resumed job): the same run, its params kept, new steps appended.
    with pytest.raises(RuntimeError), Tracker("unit", "second", out) as again:
        again.params(Config(optim=Optim(lr=5.0)))  # already logged: not changed, not refused
        again.metrics({"test/acc/de": 0.9}, 2, prefix="lm/")
        raise RuntimeError("the job failed")
    assert again.run_id == run_id
    run = client.get_run(run_id)
    assert run.info.status == "FAILED" and run.data.params["optim.lr"] == "0.0001"
    assert [m.step for m in client.get_metric_history(run_id, "lm/test/acc/de")] == [0, 1, 2]


def test_the_ray_train_callback_logs_rank_zeros_metrics_at_each_fits_steps(tmp_path, mlflow_store):
    import pickle

    from mlflow.tracking import MlflowClient

    with Tracker("unit", "callback", tmp_path) as tracker:
        [callback] = tracker.callbacks("lm/epoch/", epochs_per_fit=3)
        callback = pickle.loads(pickle.dumps(callback))  # as Ray sends it to the run's controller
        assert isinstance(callback, TrackingCallback)
        for epoch in (1, 2):
            callback.after_report(None, [{"train/fit": 2, "train/epoch": epoch, "train/loss": 1.0 / epoch},
                                         {"train/loss": 9.0}], None)
        callback.sink.close()
    history = MlflowClient(mlflow_store).get_metric_history(tracker.run_id, "lm/epoch/train/loss")
    assert [(m.step, m.value) for m in history] == [(7, 1.0), (8, 0.5)]
    assert scalars(tmp_path / "tensorboard")["lm/epoch/train/loss"] == [(7, 1.0), (8, 0.5)]


def test_tracking_off_logs_nothing(tmp_path):
    with Tracker("unit", "off", tmp_path, enabled=False) as tracker:
        tracker.params(Config())
        tracker.metrics({"a": 1.0}, 0)
        tracker.artifacts(tmp_path)
        assert tracker.callbacks() == [] and tracker.tune_callbacks() == []
    assert not (tmp_path / "tensorboard").exists()
