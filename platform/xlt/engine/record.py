"""A run's record (``xlt.record``) as the engine keeps it: ``running`` when the run starts, then after each report
with a checkpoint the classifiers that checkpoint holds (``Workload.classifiers``) with the report's metrics, and
at the end ``finished`` (the last checkpoint's) or ``failed`` (the last recorded ones stay usable)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..record import FAILED, FINISHED, RUNNING, write_record
from ..storage import join
from .loop import Workload


@functools.cache
def recorder_class() -> type:
    """``Recorder``, defined on first use: its base, Ray Train's ``UserCallback``, imports Ray Train."""
    from ray.train import UserCallback

    class Recorder(UserCallback):
        """Writes the record of the run of ``workload`` on ``cfg`` in ``directory``; as a Ray Train callback (on the
        run's controller, or an in-process run's thread), after each report with a checkpoint."""

        def __init__(self, workload: Workload, cfg: Any, directory: str) -> None:
            self.workload, self.cfg, self.directory = workload, cfg, directory
            self.metrics: dict[str, Any] = {}
            self.classifiers: dict[str, dict[str, Any]] = {}
            self.outputs: dict[str, str] = {}

        def after_report(self, run_context: Any, metrics: Any, checkpoint: Any) -> None:
            if checkpoint is not None:
                self.at(checkpoint, metrics[0] if metrics else {})
                self.write(RUNNING, phase=f"checkpoint {Path(checkpoint.path).name}")

        def at(self, checkpoint: Any, metrics: Mapping[str, Any]) -> None:
            """The run's classifiers are those of ``checkpoint`` (a ``ray.train.Checkpoint``), reported with
            ``metrics``."""
            path = join(self.directory, Path(checkpoint.path).name)  # a store's path has no scheme
            self.metrics = dict(metrics)
            self.classifiers = self.workload.classifiers(self.cfg, path, self.directory)
            self.outputs = {"checkpoint": path, **self.workload.outputs(self.cfg, path)}

        def write(self, status: str, phase: str | None = None, error: str | None = None) -> None:
            write_record(self.directory, self.workload.job, self.cfg, status, metrics=self.metrics,
                         classifiers=self.classifiers, default=next(iter(self.classifiers), None),
                         outputs=self.outputs, phase=phase, error=error)

        def finished(self, result: Any, metrics: Mapping[str, Any]) -> None:
            # The driver's copy saw no report of a Ray Train run (its controller's copy did), an in-process run's
            # last report was of this checkpoint already.
            if result.checkpoint is not None and self.outputs.get("checkpoint") != join(
                    self.directory, Path(result.checkpoint.path).name):
                self.at(result.checkpoint, metrics)
            self.metrics = dict(metrics) or self.metrics
            self.write(FINISHED)

        def failed(self, error: BaseException) -> None:
            self.write(FAILED, error=f"{type(error).__name__}: {error}")

    return Recorder
