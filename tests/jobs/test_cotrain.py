"""jobs/cotrain.py --smoke end to end on a local Ray of its own: tables, files, progress, tracking and exports. (A
real kill of the job in the middle of an iteration, its output on an S3-compatible server, and the
restart from another working directory that ends in the state of an uninterrupted run:
tests/cluster/test_node_failure.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cotrain_smoke import state
from report.images import assert_a_drawn_png
from tracking.readback import artifacts, event_scalars, metric_steps, mlflow_run
from xlt.hardware import native_bf16

pytestmark = pytest.mark.ray


def test_smoke_writes_tables_plots_progress_tracking_and_exports(cotrain_smoke):
    """The session's co-training smoke run (``cotrain_smoke.JOB``: two iterations, three LM epochs a fit,
    the LM's precision auto, exported)."""
    out, proc, mlflow_store = cotrain_smoke.out, cotrain_smoke.proc, cotrain_smoke.mlflow_store
    assert "### Per iteration (test accuracy)" in proc.stdout
    assert re.search(r"\| emb co-training \(iteration 1\) +\|", proc.stdout)
    assert "iteration 1: lm test avg_target" in proc.stderr
    for name in ("results.json", "results.md", "accuracy_per_iteration.png", "config.yaml", "state.json"):
        assert (out / name).is_file(), name
    result = json.loads((out / "results.json").read_text())
    # Two iterations of both learners and of the job's classifier (the preset's: lm × emb, or either alone where
    # English dev puts it above the product), printed as it was chosen
    assert "cotrain.py" in result["command"] and len(result["history"]) == 6
    learners = result["classifier"]["learners"]
    assert learners in (["lm", "emb"], ["lm"], ["emb"]) and result["classifier"]["iteration"] == 1
    what = "lm × emb (the product of their probabilities)" if len(learners) == 2 else f"learner {learners[0]} alone"
    assert (f"The job's classifier: {what}, chosen on en dev among lm × emb, lm, emb (ties to the first), "
            "iteration 1") in proc.stdout
    assert f"| **the job's classifier** ({' × '.join(learners)}, iteration 1) |" in proc.stdout
    assert "| adapted probe: tiny:bert " in proc.stdout  # the declared single-text recipe beside it (adapted_probes)
    # The frozen probe of probes: on the job's own rows, beside the learners in both per-language tables.
    assert len(re.findall(r"\| frozen probe: tiny:bert +\|", proc.stdout)) == 2
    probe = result["probes"]["frozen probe: tiny:bert"]
    assert set(probe) == {"acc", "f1"} and set(probe["acc"]) == {"en", "de", "zh", "avg_target"}
    assert probe["acc"]["avg_target"] == pytest.approx((probe["acc"]["de"] + probe["acc"]["zh"]) / 2)
    # auto as this machine resolves it (its CPU's flags), recorded where the run's config is: results,
    # MLflow parameters (below), the learners' checkpoints and model cards (below), each pass.
    ran = "bf16" if native_bf16() else "fp32"
    assert result["config"]["lm"]["optim"]["precision"] == result["config"]["inference"]["precision"] == ran
    assert {row["pseudo-label/precision"] for row in result["history"] if "pseudo-label/precision" in row} == {ran}
    assert {row["phase"] for row in result["phases"]} >= {"start Ray", "fit lm", "pseudo-label and select", "exchange",
                                                          "probes"}
    assert "### Where the time went" in proc.stdout
    assert "\nresume:  " in proc.stdout and "look:    MLflow: mlflow ui --backend-store-uri sqlite:///" in proc.stdout
    # Progress bars (rows, rate, ETA): the driver's pseudo-labelling, a learner's epochs and its evaluation
    # drawn from its Ray Train worker; Ray's own notices are off without --verbose.
    for bar in ("pseudo-label", "lm-iteration0 epoch 1/3", "emb-iteration1 evaluate test"):  # the split by its own name
        assert bar in proc.stderr, bar
    assert "row/s" in proc.stderr or "rows/s" in proc.stderr
    for noise in ("Started a local Ray instance", "Token authentication", "Failed to query Ray Train",
                  "Reporting training result", "Starting execution of Dataset", "Attempting to start training"):
        assert noise not in proc.stderr, noise

    assert_a_drawn_png(out / "accuracy_per_iteration.png")
    tracked = mlflow_run(mlflow_store, "cotrain")
    assert tracked.info.status == "FINISHED" and tracked.data.params["selection.threshold"] == "0.0"
    assert tracked.data.params["lm.optim.precision"] == tracked.data.params["inference.precision"] == ran
    assert metric_steps(mlflow_store, tracked, "lm/test/acc/avg_target") == [0, 1]  # one per iteration
    assert metric_steps(mlflow_store, tracked, "emb/epoch/train/loss") == [1, 2]  # each fit's epoch (K = 1)
    assert artifacts(mlflow_store, tracked) == {"results.json", "results.md", "accuracy_per_iteration.png"}
    scalars = event_scalars(out / "tensorboard")
    assert scalars["lm/test/acc/avg_target"] == [0, 1]
    assert scalars["lm/epoch/train/loss"] == [1, 2, 3, 4, 5, 6]  # fit × 3 epochs + epoch

    # The run's record: finished, each learner and the job's classifier, the exports among its outputs.
    record = json.loads((out / "run.json").read_text())
    assert (record["job"], record["status"], record["default"]) == ("cotrain", "finished", "lm")
    assert set(record["classifiers"]) == {"lm", "emb", "classifier"}
    assert record["classifiers"]["classifier"]["iteration"] == 1
    assert {record["outputs"][f"export {name}"] for name in ("lm", "emb", "classifier")} == \
        {"export/lm", "export/emb", "export/classifier"}

    # output.export: each learner as the run left it (its last fit), as a classifier and an MLflow model
    import mlflow
    import pandas as pd

    from xlt.models import Classifier
    from xlt.predict import model_spec
    from xlt.train import load_classifier

    texts = ["der rover fand wasser", "la finale s'est terminée"]
    for learner in ("lm", "emb"):
        last = Path(model_spec(out, learner)[0]).parent  # the record's entry: the learner's last checkpoint
        assert last.name.startswith(f"{learner}-iteration1-")
        expected = load_classifier(last).predict(texts)
        assert Classifier.from_pretrained(out / "export" / learner).predict(texts).labels == expected.labels
        card = (out / "export" / learner / "README.md").read_text()
        assert f"- What: `{learner}` of the cotrain run in `{out}`" in card and "as iteration 1 of Yu & Joty" in card
        if learner == "lm":
            assert f"precision: {ran}" in card
            assert f"precision: {ran}" in (last / "config.yaml").read_text()
        (uri,) = [line.split()[-1] for line in proc.stdout.splitlines() if line.strip().startswith(f"mlflow model {learner}")]
        mlflow.set_tracking_uri(mlflow_store)
        assert list(mlflow.pyfunc.load_model(uri).predict(pd.DataFrame({"text": texts}))["label"]) == expected.labels
        # What serving it needs, pinned: xlt (its dependencies with it), the pickle's reader, MLflow.
        requirements = Path(mlflow.pyfunc.get_model_dependencies(uri)).read_text().split()
        assert sorted(r.split("==")[0] for r in requirements) == ["cloudpickle", "mlflow", "xlt"], requirements


def assert_pairs_exchanged(out: Path | str) -> None:
    """A co-training run on XNLI (target languages de, zh) pseudo-labelled pairs and exchanged them
    whole. tests/jobs/test_job_submit.py submits that job with ``ray job submit``."""
    received = state(out)["received"]
    rows = received["lm"] + received["emb"]
    assert rows and all(r["text_pair"] and r["id"].startswith("xnli/") for r in rows)  # pairs travel whole
    assert {r["lang"] for r in rows} <= {"de", "zh"}

