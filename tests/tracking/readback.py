"""Reading a job's tracking back as a researcher would: MLflow's client on the test's store, and
TensorBoard's event reader on the output directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def mlflow_run(uri: str, job: str) -> Any:
    """The one MLflow run the test's job logged to experiment ``xlt-<job>`` (a top-level run: not a
    sweep's trial)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(f"xlt-{job}")
    assert experiment is not None, f"no MLflow experiment xlt-{job} in {uri}"
    runs = [r for r in client.search_runs([experiment.experiment_id]) if "mlflow.parentRunId" not in r.data.tags]
    assert len(runs) == 1, [r.info.run_name for r in runs]
    return runs[0]


def metric_steps(uri: str, run: Any, key: str) -> list[int]:
    from mlflow.tracking import MlflowClient

    return [m.step for m in MlflowClient(uri).get_metric_history(run.info.run_id, key)]


def artifacts(uri: str, run: Any) -> set[str]:
    from mlflow.tracking import MlflowClient

    return {a.path for a in MlflowClient(uri).list_artifacts(run.info.run_id)}


def event_scalars(log_dir: Path) -> dict[str, list[int]]:
    """TensorBoard scalar tags under ``log_dir`` (event files parsed), each with its steps."""
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    assert any(log_dir.rglob("events.out.tfevents.*")), f"no event files under {log_dir}"
    multiplexer = EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(log_dir))
    multiplexer.Reload()
    scalars: dict[str, list[int]] = {}
    for run, tags in multiplexer.Runs().items():
        for tag in tags["scalars"]:
            scalars.setdefault(tag, []).extend(e.step for e in multiplexer.Scalars(run, tag))
    return scalars
