"""jobs/evaluate.py end to end in --smoke mode: table on stdout, JSON + config on disk. The job runs
without Ray, so it runs in the test process (``jobs.inprocess``); its exit status and stderr as a
process of its own are tests/jobs/test_cli_errors.py's."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from conftest import REPO
from jobs.inprocess import run_in_process


@pytest.fixture
def run_job(data_dir, tmp_path, capsys):
    def run(*args: str) -> subprocess.CompletedProcess:
        return run_in_process("evaluate.py", *args, "--set", f"output.dir={tmp_path}", capsys=capsys,
                              data_dir=data_dir)
    return run


ADAPTED = "adapt={center: true, rounds: 1}"  # the probe adapted to the target pools (xlt.eval.adaptation)


def test_a_label_the_source_lacks_is_dropped_and_counted_where_the_task_says_so(run_job, tmp_path):
    """``task.unknown_labels: drop``, the README's command as typed: SIB-200 read as if it had no ``geography`` class
    (a target release's extra class stands for it) leaves those rows out of every split, and the ending and results
    count them per split and language; without the option the first such row stops the job in one line naming it."""
    from predict.test_readme_commands import readme_commands

    (typed,) = [args for args in readme_commands("evaluate.py") if "task.unknown_labels=drop" in args]
    proc = run_job(*typed)
    assert proc.returncode == 0, proc.stderr[-3000:]
    dropped = json.loads((tmp_path / "frozen-linear.json").read_text())["dropped rows"]
    assert {"train/en", "dev/en", "test/en", "test/de"} <= set(dropped) and all(n > 0 for n in dropped.values())
    assert f"(task.unknown_labels: drop): dev/en {dropped['dev/en']}, test/ar {dropped['test/ar']}" in proc.stdout
    six = typed[typed.index("task.unknown_labels=drop") + 2]
    refused = run_job("--smoke", "--set", "task.target_langs=[de]", "--set", six)
    assert refused.returncode == 2 and "unknown label 'geography'" in refused.stderr
    assert "(task.unknown_labels: drop leaves such rows out)" in refused.stderr


@pytest.mark.parametrize("protocol, task, columns, extra", [
    ("frozen-linear", "sib200", "| f1 ", ()), ("frozen-linear", "xnli", "| f1 ", ("--set", ADAPTED)),
    ("tatoeba", "tatoeba", "| xx->en ", ()), ("mining", "tatoeba", "| f1 ", ()), ("bucc", "bucc2018", "| held-out ", ())])
def test_smoke(protocol, task, columns, extra, run_job, tmp_path):
    include = task if protocol == "frozen-linear" else "sib200"  # retrieval ignores the task
    proc = run_job("--protocol", protocol, "--smoke", "--set", f"task={{include: configs/tasks/{include}.yaml}}",
                   "--set", "task.target_langs=[de, zh]", *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"## {protocol} on {task}" in proc.stdout and columns.split()[1] in proc.stdout
    assert ("(adapted to each target's unlabelled pool: centred, 1 self-training round of fraction 0.5)"
            in proc.stdout) == bool(extra)
    result = json.loads((tmp_path / f"{protocol}.json").read_text())
    assert result["protocol"] == protocol and "evaluate.py" in result["command"]
    saved = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert saved["adapt"] == ({"center": True, "rounds": 1, "fraction": 0.5} if extra else
                              {"center": False, "rounds": 0, "fraction": 0.5})  # what the run did, recorded
    rows = result["rows"]
    assert {r["model"] for r in rows} == {"tiny:bert"}
    if protocol == "frozen-linear":  # sentence pairs (xnli) and single texts alike
        for score in ("acc", "f1"):
            by_lang = {r["lang"]: r[score] for r in rows}
            assert set(by_lang) == {"en", "de", "zh", "avg_target", "transfer_gap"}
            assert by_lang["avg_target"] == pytest.approx((by_lang["de"] + by_lang["zh"]) / 2)
            assert by_lang["transfer_gap"] == pytest.approx(by_lang["en"] - by_lang["avg_target"])
    elif protocol == "bucc":
        assert [r["part"] for r in rows][0] == "held-out (threshold from calibration half)"
        calibration = next(r for r in rows if r["part"] == "oracle: calibration half")
        assert rows[0]["threshold"] == calibration["threshold"]  # the held-out threshold is the calibration one
        assert all(0.0 <= r["f1"] <= 1.0 and r["n_gold"] > 0 for r in rows)
        assert all(r["n_tgt"] > r["n_gold"] for r in rows)  # distractors on the en side
        assert "Protocol: BUCC 2018 tunes the threshold on training data" in proc.stdout
        assert "zh sentences on even rows of the dev file (0-based) calibrate" in proc.stdout
    elif protocol == "tatoeba":
        assert [r["lang"] for r in rows] == ["de", "zh", "avg"]
        assert all(0.0 <= r["mean"] <= 1.0 for r in rows)
    else:
        assert [r["lang"] for r in rows] == ["de", "zh"]
        assert all(r["n_tgt"] > r["n_src"] for r in rows)  # distractors were added
        assert "Protocol: BUCC-style mining with the ratio margin" in proc.stdout and "k=4" in proc.stdout


def test_bad_override_is_one_error_line(run_job):
    proc = run_job("--smoke", "--set", "probe_c=[1, -1]")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == ["error: probe_c=(1.0, -1.0) is not valid: expected a list of "
                                                "positive numbers"]


def test_unknown_language_is_reported(run_job):
    proc = run_job("--smoke", "--set", "task.target_langs=[de, ko]")
    assert proc.returncode == 2 and "no data for ko" in proc.stderr and "languages found: ar, de" in proc.stderr
    proc = run_job("--smoke", "--protocol", "tatoeba", "--set", "languages=[de, ko]")
    assert proc.returncode == 2 and "have no tatoeba data" in proc.stderr


def test_the_readmes_evaluate_commands_run_as_typed_up_to_the_evaluation(tmp_path, monkeypatch, capsys, data_dir):
    """Every ``python jobs/evaluate.py`` line of the README, word for word from a checkout's root, reaches the
    evaluation with the config it asks for; the evaluation itself is the smoke runs' above (the typed commands
    embed every SIB-200 language)."""
    from unittest import mock

    from predict.test_readme_commands import readme_commands

    ran = []

    def evaluation(cfg):  # what the job would evaluate, recorded instead
        ran.append(cfg)
        return {"protocol": cfg.protocol, "task": "readme", "languages": [], "rows": []}

    (tmp_path / "configs").symlink_to(REPO / "configs")  # the checkout's presets, its results/ left alone
    monkeypatch.chdir(tmp_path)
    lines = readme_commands("evaluate.py")
    with mock.patch("xlt.eval.protocols.run_evaluation", evaluation):
        for args in lines:
            proc = run_in_process("evaluate.py", *args, capsys=capsys, data_dir=data_dir)
            assert proc.returncode == 0, (args, proc.stderr[-3000:])
    assert len(ran) == len(lines) and any(cfg.adapt.center and cfg.adapt.rounds == 3 for cfg in ran)


def test_the_adapted_probe_exports_as_a_classifier_that_labels_a_split_as_it_was_scored(run_job, tmp_path, data_dir,
                                                                                        monkeypatch, mlflow_store):
    """``output.export``: the probe, centred per language, as a classifier that ``jobs/predict.py``'s pipeline loads
    from the export and runs over the same test rows: its accuracy in every language is the one the table reports;
    with ``output.export_backend: onnx`` its MLflow model says so and labels on the export's ONNX files, as PyTorch."""
    import mlflow
    import pandas as pd

    from xlt.config import load_config
    from xlt.predict.config import PredictInference
    from xlt.eval.protocols import EvaluateConfig
    from xlt.models import Classifier
    from xlt.predict import InputConfig, ModelRef, PredictConfig, predict, prepare
    from xlt.storage import OutputSettings
    from xlt.tasks import load_task

    proc = run_job("--smoke", "--set", "task.target_langs=[de, zh]", "--set", ADAPTED, "--set", "output.export=true",
                   "--set", "output.export_backend=onnx")
    assert proc.returncode == 0, proc.stderr[-3000:]
    export = tmp_path / "export" / "bert"  # tiny:bert's export
    assert ["export", "bert", str(export)] in [line.split() for line in proc.stdout.splitlines()]
    uri = next(line.split()[-1] for line in proc.stdout.splitlines() if line.split()[:3] == ["mlflow", "model", "bert"])
    classifier = Classifier.from_pretrained(export)
    assert classifier.languages == ["en", "de", "zh"]
    assert "centred on its own mean, 1 round(s) of class-balanced self-training" in (export / "README.md").read_text()
    monkeypatch.setenv("XLT_DATA_DIR", str(data_dir))
    cfg = load_config(EvaluateConfig, tmp_path / "config.yaml")
    gold = {ex.id: ex.label for lang in ("en", "de", "zh")
            for ex in load_task(cfg.task, data_dir).examples("test", lang, cfg.data.max_examples)}
    record = json.loads((tmp_path / "run.json").read_text())  # the evaluation's record names its probe's export
    assert (record["job"], record["default"], record["classifiers"]["bert"]["export"]) == ("evaluate", "bert", "export/bert")
    out = tmp_path / "predicted"
    predict(prepare(PredictConfig(model=ModelRef(str(tmp_path)),  # the evaluation's output, through its record
                                  input=InputConfig(task=cfg.task, split="test", max_rows=cfg.data.max_examples),
                                  output=OutputSettings(str(out)),
                                  inference=PredictInference(num_actors=0, batch_size=4, precision="fp32"))))
    frame = pd.read_parquet(out / "predictions")
    assert sorted(frame["id"]) == sorted(gold)
    reported = {r["lang"]: r["acc"] for r in json.loads((tmp_path / "frozen-linear.json").read_text())["rows"]}
    for lang, rows in frame.groupby("lang"):
        assert (rows["label"] == rows["id"].map(gold)).mean() == pytest.approx(reported[lang]), lang
    mlflow.set_tracking_uri(mlflow_store)
    served = mlflow.pyfunc.load_model(uri)
    assert served.metadata.metadata == {"backend": "onnx"} and (export / "onnx" / "model.onnx").is_file()
    labelled = served.predict(frame[["text", "lang"]])  # the run's MLflow model reads lang too
    assert list(labelled["label"]) == list(frame["label"])
    columns = [f"p_{label}" for label in classifier.labels]
    assert abs(labelled[columns].to_numpy() - frame[columns].to_numpy()).max() < 1e-4


def test_an_encoder_that_cannot_be_exported_is_refused_before_any_is_scored(run_job):
    unexportable = "{source: tiny:xlm-roberta, pooling: avg_first_last}"  # no sentence-transformers form
    proc = run_job("--smoke", "--set", f"models=[{{source: tiny:bert}}, {unexportable}]", "--set", "output.export=true")
    assert proc.returncode != 0 and "output.export: tiny:xlm-roberta cannot be exported" in proc.stderr
    assert "## frozen-linear" not in proc.stdout  # tiny:bert, first, was not scored either
