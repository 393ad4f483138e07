"""Experiment tracking: every job run in MLflow (config as parameters, metrics by step, artifacts)
and in TensorBoard (the same metrics as scalars).

Where runs go: ``$MLFLOW_TRACKING_URI`` (any tracking server, or a database URI) when set, else a
SQLite store ``results/mlruns/mlflow.db`` under the current directory with artifacts beside it
(``mlflow ui --backend-store-uri sqlite:///results/mlruns/mlflow.db``). One MLflow experiment per
job (``xlt-finetune``, ``xlt-cotrain``, ...), one MLflow run per output directory: a resumed job
continues its run (found by the ``xlt.output`` tag), so its metrics keep one history.

Who logs what:

- the job's driver (``Tracker``): parameters, metrics it computes itself (co-training's
  per-iteration records), artifacts (results tables, plots, ``best.yaml``), the checkpoints'
  location as a tag;
- Ray Train runs (fine-tuning, pretraining, each co-training learner fit): ``TrackingCallback``,
  a Ray Train ``UserCallback`` on the run's controller, logs what every epoch reports through
  ``xlt.engine.checkpoints.report`` (rank 0's metrics) under the run's prefix and step;
- sweeps: Ray Tune's own ``MLflowLoggerCallback`` (a child run per trial) and TensorBoard logger.

TensorBoard event files go to ``<output>/tensorboard/`` (``tensorboard --logdir <output>``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .extras import require
from .metrics import TRAIN_EPOCH, TRAIN_FIT
from .storage import is_uri

DEFAULT_STORE = Path("results") / "mlruns"
OUTPUT_TAG = "xlt.output"
# What serving a logged classifier needs (MLflow adds itself): xlt, which brings its dependencies, and the
# reader of the pickled pyfunc. Stated rather than inferred: MLflow infers them by loading the model in a
# subprocess, 6 s a model on a 2-core machine, and lists whatever that happened to import.
SERVING_REQUIREMENTS = ("xlt", "cloudpickle")
# MLflow refuses a parameter value longer than this, and more than 100 parameters per call.
MAX_PARAM_LENGTH, PARAMS_PER_CALL, METRICS_PER_CALL = 6000, 100, 1000


def tracking_uri() -> str:
    """``$MLFLOW_TRACKING_URI``, else the local SQLite store under ``results/mlruns``."""
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        return uri
    DEFAULT_STORE.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(DEFAULT_STORE / 'mlflow.db').resolve()}"


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """A config (dataclass, mapping, list) as ``{"optim.lr": "0.0001", "objectives.0.name": ...}``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, Mapping):
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, (list, tuple)) and any(isinstance(v, (Mapping, list, tuple)) for v in value):
        items = enumerate(value)
    else:
        return {prefix: str(value)[:MAX_PARAM_LENGTH]}
    flat: dict[str, str] = {}
    for key, item in items:
        flat.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def numeric(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The finite numbers of ``metrics`` (MLflow and TensorBoard take nothing else)."""
    return {key: float(value) for key, value in metrics.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)}


class Sink:
    """Where one run's metrics are written: an MLflow run and a TensorBoard directory, either optional."""

    def __init__(self, uri: str | None, run_id: str | None, log_dir: str | None) -> None:
        self.uri, self.run_id, self.log_dir = uri, run_id, log_dir
        self._client = self._writer = None

    def metrics(self, metrics: Mapping[str, Any], step: int, prefix: str = "") -> None:
        values = {f"{prefix}{key}": value for key, value in numeric(metrics).items()}
        if self.run_id is not None:
            from mlflow.entities import Metric

            now = int(time.time() * 1000)
            batch = [Metric(mlflow_key(key), value, now, step) for key, value in values.items()]
            for start in range(0, len(batch), METRICS_PER_CALL):
                self.client.log_batch(self.run_id, metrics=batch[start:start + METRICS_PER_CALL])
        if self.log_dir is not None:
            for key, value in values.items():
                self.writer.add_scalar(key, value, step)
            self.writer.flush()

    @property
    def client(self):
        if self._client is None:
            from mlflow.tracking import MlflowClient

            self._client = MlflowClient(tracking_uri=self.uri)
        return self._client

    @property
    def writer(self):
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=self.log_dir)
        return self._writer

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __getstate__(self) -> dict[str, Any]:  # sent to Ray Train's controller without its clients
        return {"uri": self.uri, "run_id": self.run_id, "log_dir": self.log_dir, "_client": None, "_writer": None}


class Tracker(Sink):
    """A job run's MLflow run (created, or continued for the same output) and TensorBoard directory.

    ``output``: the job's output directory or URI, which identifies the run; ``enabled=False``
    (the jobs' ``--no-tracking``) makes every method a no-op.
    """

    def __init__(self, job: str, name: str, output: str | Path, *, enabled: bool = True) -> None:
        output = str(output) if is_uri(str(output)) else str(Path(output).resolve())
        log_dir = None if not enabled else (
            str(DEFAULT_STORE.resolve().parent / "tensorboard" / name) if is_uri(output) else f"{output}/tensorboard")
        if enabled:
            require("mlflow", "tracking", "or run the job with --no-tracking")
        super().__init__(tracking_uri() if enabled else None, None, log_dir)
        self.output = output
        if enabled:
            experiment = self._experiment(f"xlt-{job}")
            runs = self.client.search_runs([experiment], f"tags.`{OUTPUT_TAG}` = '{output}'", max_results=1)
            if runs:
                self.run_id = runs[0].info.run_id
                self.client.update_run(self.run_id, status="RUNNING")
            else:
                self.run_id = self.client.create_run(experiment, run_name=name, tags={OUTPUT_TAG: output}).info.run_id

    def _experiment(self, name: str) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        # A SQLite store keeps its artifacts beside the database file (MLflow's default would be
        # ./mlruns under whatever directory the job runs in); a server decides for itself.
        artifacts = None
        if self.uri.startswith("sqlite:///"):
            artifacts = (Path(self.uri[len("sqlite:///"):]).parent / "artifacts").resolve().as_uri()
        try:
            return self.client.create_experiment(name, artifact_location=artifacts)
        except Exception:  # created meanwhile by another job
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            return found.experiment_id

    def params(self, cfg: Any) -> None:
        """The config, flattened to dotted keys. A resumed run keeps the values it was started with
        (MLflow refuses to change a parameter; the jobs refuse a config that learns something else)."""
        if self.run_id is None:
            return
        from mlflow.entities import Param

        logged = self.client.get_run(self.run_id).data.params
        fresh = [Param(key, value) for key, value in flatten(cfg).items() if key not in logged]
        for start in range(0, len(fresh), PARAMS_PER_CALL):
            self.client.log_batch(self.run_id, params=fresh[start:start + PARAMS_PER_CALL])

    def tag(self, key: str, value: str) -> None:
        if self.run_id is not None:
            self.client.set_tag(self.run_id, key, value)

    def artifacts(self, *paths: str | Path) -> None:
        """Copy the files that exist among ``paths`` into the run's artifacts."""
        if self.run_id is None:
            return
        for path in paths:
            if Path(path).is_file():
                self.client.log_artifact(self.run_id, str(path))

    def model(self, export: str | Path, name: str = "classifier", backend: str = "torch") -> str | None:
        """Log an export (``Classifier.save_pretrained``) as this run's MLflow model ``name``, which the
        model registry can serve: a pyfunc (``exported_classifier``) over the export's files, labelling on
        ``backend`` (``torch``, or ``onnx`` / ``onnx-int8``: the export's ONNX files, ``xlt.models.onnx_backbone``),
        which the model states (its ``model_config`` and ``metadata``). Returns the model's URI (``None`` with
        tracking off)."""
        if self.run_id is None:
            return None
        from importlib.metadata import version

        import mlflow

        mlflow.set_tracking_uri(self.uri)
        with mlflow.start_run(run_id=self.run_id):  # the run's own status is set by finish()
            requirements = SERVING_REQUIREMENTS + (() if backend == "torch" else ("onnxruntime",))
            info = mlflow.pyfunc.log_model(name=name, python_model=exported_classifier(),
                                           artifacts={"export": str(export)}, model_config={"backend": backend},
                                           metadata={"backend": backend}, signature=signature(export),
                                           pip_requirements=[f"{p}=={version(p)}" for p in requirements])
        return info.model_uri

    def callbacks(self, prefix: str = "", epochs_per_fit: int = 0) -> list[TrackingCallback]:
        """The Ray Train callbacks that log a run's epochs here, keys prefixed with ``prefix`` and
        step = epoch, or fit × ``epochs_per_fit`` + epoch for a run serving many fits; none when
        tracking is off."""
        if self.run_id is None and self.log_dir is None:
            return []
        return [TrackingCallback(Sink(self.uri, self.run_id, self.log_dir), prefix, epochs_per_fit)]

    def tune_callbacks(self) -> list[Any]:
        """Ray Tune's MLflow logger: one run per trial in this run's experiment, nested under it
        (``mlflow.parentRunId``), with the trial's config and every reported metric."""
        if self.run_id is None:
            return []
        experiment = self.client.get_run(self.run_id).info.experiment_id
        return [trial_runs_class()(tracking_uri=self.uri, experiment_name=self.client.get_experiment(experiment).name,
                          tags={"mlflow.parentRunId": self.run_id, OUTPUT_TAG: f"{self.output}/trial"})]

    def how_to_look(self) -> list[str]:
        """Commands that show this run: the MLflow UI on its store (or its page on a server) and
        TensorBoard on its event files."""
        lines = []
        if self.run_id is not None:
            experiment = self.client.get_run(self.run_id).info.experiment_id
            if self.uri.startswith(("http://", "https://")):
                lines.append(f"MLflow: {self.uri.rstrip('/')}/#/experiments/{experiment}/runs/{self.run_id}")
            else:
                lines.append(f"MLflow: mlflow ui --backend-store-uri {self.uri}  (experiment {experiment}, "
                             f"run {self.run_id})")
        if self.log_dir is not None:
            lines.append(f"TensorBoard: tensorboard --logdir {self.log_dir}")
        return lines

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        """A job that raised leaves its run ``FAILED`` (``KILLED`` on Ctrl-C), else ``FINISHED``."""
        self.finish("FINISHED" if kind is None else "KILLED" if issubclass(kind, KeyboardInterrupt) else "FAILED")

    def finish(self, status: str = "FINISHED") -> None:
        """End the run (``FINISHED``, ``FAILED`` or ``KILLED``) and close the event file."""
        if self.run_id is not None:
            self.client.set_terminated(self.run_id, status=status)
        self.close()


def _user_callback_base() -> type:
    from ray.train import UserCallback

    return UserCallback


class TrackingCallback(_user_callback_base()):  # type: ignore[misc]
    """Ray Train ``UserCallback`` (on the run's controller): each report's rank-0 metrics to the
    sink, at step ``epochs_per_fit`` × the reported ``train/fit`` + ``train/epoch`` (a run serving
    many fits, ``xlt.engine.fits``, numbers them; a run of one fit reports no ``train/fit``)."""

    def __init__(self, sink: Sink, prefix: str = "", epochs_per_fit: int = 0) -> None:
        self.sink, self.prefix, self.epochs_per_fit = sink, prefix, epochs_per_fit

    def after_report(self, run_context, metrics, checkpoint) -> None:
        first = metrics[0] if metrics else {}
        if first:
            step = self.epochs_per_fit * int(first.get(TRAIN_FIT, 0)) + int(first.get(TRAIN_EPOCH, 0))
            self.sink.metrics(first, step, self.prefix)


def mlflow_key(key: str) -> str:
    """A key as MLflow accepts it (alphanumerics, ``_ - . : /`` and spaces):
    ``objectives[0].params.temperature`` -> ``objectives.0.params.temperature``, a retrieval
    direction ``xx->en`` -> ``xx-to-en``, anything else outside the set -> ``_``."""
    key = re.sub(r"\[(\d+)\]", r".\1", key).replace("->", "-to-")
    return re.sub(r"[^\w\-. :/]", "_", key)


@functools.cache
def trial_runs_class() -> type:
    """``TrialRuns``, defined on first use: its base, Ray Tune's MLflow callback, imports MLflow (0.7 s of
    a core), which every process importing this module would pay, Ray Train's controllers among them."""
    from ray.air.integrations.mlflow import MLflowLoggerCallback

    class TrialRuns(MLflowLoggerCallback):
        """Ray Tune's ``MLflowLoggerCallback``, a run per trial, with the trial's config keys made valid
        MLflow names (``mlflow_key``): a search space addresses list items as ``objectives[0]...``,
        which MLflow refuses."""

        def log_trial_start(self, trial) -> None:
            if trial not in self._trial_runs:
                run = self.mlflow_util.start_run(tags={**self.tags, "trial_name": str(trial)}, run_name=str(trial))
                self._trial_runs[trial] = run.info.run_id
            params = {mlflow_key(key): value for key, value in trial.config.items()}
            self.mlflow_util.log_params(run_id=self._trial_runs[trial], params_to_log=params)

        def log_trial_result(self, iteration: int, trial, result) -> None:
            """The reported metrics; not the config Tune repeats in every result (logged as params)."""
            super().log_trial_result(iteration, trial, {mlflow_key(key): value for key, value in result.items()
                                                        if key != "config"})

    return TrialRuns


def signature(export: str | Path):
    """The MLflow signature of an export's pyfunc (``exported_classifier``): its input columns, ``text``, ``text_pair``
    for pairs and ``lang`` (required by a classifier centred per language), and the predict job's output columns."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema

    from .models.classifier import export_inputs

    paired, centred, labels = export_inputs(export)
    inputs = [ColSpec("string", "text"), *([ColSpec("string", "text_pair")] if paired else []),
              ColSpec("string", "lang", required=centred)]
    outputs = [ColSpec("string", "label"), ColSpec("float", "confidence"),
               *(ColSpec("float", f"p_{label}") for label in labels)]
    return ModelSignature(Schema(inputs), Schema(outputs))


def exported_classifier():
    """An MLflow pyfunc over an xlt classifier export (where xlt is installed): ``predict`` takes a
    DataFrame with ``text`` (and ``text_pair`` for a pair classifier; ``lang`` for a centred probe), labels it on
    the backend its ``model_config`` names (``Tracker.model``) and returns ``label``,
    ``confidence`` and ``p_<label>`` for each label, as ``jobs/predict.py`` writes them. Built on
    first use: ``mlflow.pyfunc`` costs a job's start-up seconds, and its untyped-``predict`` warning
    (the input is a DataFrame) is silenced here rather than printed by every job."""
    import warnings

    from mlflow.pyfunc import PythonModel

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*type hints.*", category=UserWarning)

        class ExportedClassifier(PythonModel):
            def load_context(self, context) -> None:
                from pathlib import Path

                from xlt.models import Classifier

                export = context.artifacts["export"]
                self.classifier = Classifier.from_pretrained(export)
                backend = (context.model_config or {}).get("backend", "torch")
                if backend != "torch":  # the export's ONNX files (xlt.models.onnx_backbone)
                    from xlt.models.onnx_backbone import FILES, ONNX_DIR, use_onnx

                    use_onnx(self.classifier.encoder, Path(export) / ONNX_DIR / FILES[backend])

            def predict(self, context, model_input, params=None):
                import pandas as pd

                texts = list(model_input["text"])
                items = list(zip(texts, model_input["text_pair"])) if self.classifier.paired else texts
                langs = list(model_input["lang"]) if "lang" in model_input else None  # a centred probe's
                predictions = self.classifier.predict(items, langs=langs)
                columns = {"label": predictions.labels, "confidence": predictions.confidence}
                columns |= {f"p_{label}": predictions.probabilities[:, k]
                            for k, label in enumerate(self.classifier.labels)}
                return pd.DataFrame(columns)

    return ExportedClassifier()
