"""ONNX for CPU workers (``xlt.models.onnx_backbone``): ``jobs/export.py --onnx`` writes the encoder beside its
weights, and ``jobs/predict.py --set model.backend=onnx`` (or ``onnx-int8``) labels with it what PyTorch labels:
a fine-tuned classifier from its export or from its run (exported by the job itself, once), sentence pairs, a
centred probe and a combination; what has no ONNX form, and a missing extra, are one line. On tiny:bert, run in
process (``jobs.inprocess``)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest

from jobs.inprocess import assert_one_error_line, run_in_process
from xlt.models import Classifier, CombinedClassifier, load_pretrained

from .test_predict import TEXTS, centred_probe, finetune_run

ROWS = [{"text": text, "lang": lang} for lang, texts in TEXTS.items() for text in texts] + \
    [{"text": "a sentence " * n, "lang": "fr"} for n in (1, 7, 30)]  # batches of other lengths than the export's


@pytest.fixture
def run_predict(tmp_path, capsys, data_dir):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("premise,hypothesis\na man plays,someone plays\nit rains,the sun shines\nyes,no\n", encoding="utf-8")

    def run(model, out, *args, job="predict.py"):
        if job == "export.py":
            return run_in_process(job, str(model), str(out), *args, capsys=capsys, data_dir=data_dir)
        where = ("--set", f"input.path={pairs}", "--set", "input.text_field=premise", "--set",
                 "input.pair_field=hypothesis", "--set", "input.lang=de") if out.name.startswith("pairs") else \
            ("--set", f"input.path={corpus}", "--set", "input.lang_field=lang")
        return run_in_process(job, "--set", f"model.path={model}", *where, "--set", f"output.dir={out}",
                              "--set", "inference.encode_batch_size=4", *args, capsys=capsys, data_dir=data_dir)
    return run


def predictions(out) -> pd.DataFrame:
    return pd.read_parquet(out / "predictions").sort_values("id").reset_index(drop=True)


def assert_same_labels(onnx: pd.DataFrame, torch: pd.DataFrame, tolerance: float = 1e-5) -> None:
    columns = [c for c in torch.columns if c.startswith("p_")]
    assert list(onnx["label"]) == list(torch["label"])
    assert np.abs(onnx[columns].to_numpy() - torch[columns].to_numpy()).max() < tolerance


def test_an_export_with_onnx_and_a_run_label_as_pytorch_does(run_predict, tmp_path):
    run = finetune_run(tmp_path / "run")
    export = tmp_path / "export"
    exported = run_predict(run, export, "--onnx", job="export.py")
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert sorted(p.name for p in (export / "onnx").iterdir()) == ["model.onnx", "model_qint8.onnx"]

    assert run_predict(run, tmp_path / "torch").returncode == 0
    torch = predictions(tmp_path / "torch")
    ran = run_predict(export, tmp_path / "onnx", "--set", "model.backend=onnx")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "on onnx (onnxruntime)" in ran.stdout and not (tmp_path / "onnx" / "onnx").exists()  # the export's own
    assert json.loads((tmp_path / "onnx" / "results.json").read_text())["backend"] == "onnx"
    assert_same_labels(predictions(tmp_path / "onnx"), torch)
    assert run_predict(export, tmp_path / "int8", "--set", "model.backend=onnx-int8").returncode == 0
    assert len(predictions(tmp_path / "int8")) == len(ROWS)

    # A run, not an export: the job writes its encoder as ONNX once, and a rerun reads it.
    from_run = tmp_path / "from-run"
    assert run_predict(run, from_run, "--set", "model.backend=onnx").returncode == 0
    written = from_run / "onnx" / "model" / "onnx" / "model.onnx"
    assert_same_labels(predictions(from_run), torch)
    stamp = written.stat().st_mtime_ns
    assert run_predict(run, from_run, "--set", "model.backend=onnx").returncode == 0
    assert written.stat().st_mtime_ns == stamp


def test_pairs_a_centred_probe_and_a_combination_label_on_onnx_as_on_pytorch(run_predict, tmp_path):
    paired = finetune_run(tmp_path / "paired", paired=True)
    probe = centred_probe(tmp_path / "probe")
    combination = tmp_path / "combination"
    CombinedClassifier({"lm": Classifier.from_pretrained(tmp_path / "probe"), "emb": load_pretrained(
        tmp_path / "probe")}).save_pretrained(combination)
    new = ("--set", "inference.new_languages=centre-on-input", "--set", "inference.new_language_rows=3")
    for name, model, extra in (("pairs", paired, ()), ("probe", tmp_path / "probe", new),
                               ("combination", combination, new)):
        assert run_predict(model, tmp_path / f"{name}-torch", *extra).returncode == 0
        ran = run_predict(model, tmp_path / f"{name}-onnx", "--set", "model.backend=onnx", *extra)
        assert ran.returncode == 0, (name, ran.stderr[-3000:])
        # A centred row is its embedding minus a mean close to it, renormalised: it magnifies the backends' 1e-7.
        assert_same_labels(predictions(tmp_path / f"{name}-onnx"), predictions(tmp_path / f"{name}-torch"),
                           tolerance=1e-5 if name == "pairs" else 1e-4)
    assert probe.languages == ["en", "fr"]  # de was centred on the input, on either backend
    members = sorted(p.name for p in (tmp_path / "combination-onnx" / "onnx").iterdir())
    assert members == ["emb", "lm"]


def test_what_has_no_onnx_form_a_bad_setting_and_a_missing_extra_are_one_line(run_predict, tmp_path, monkeypatch):
    from xlt.models import EncoderConfig, load_encoder
    from xlt.models.onnx_backbone import BACKENDS, export_onnx
    from xlt.storage import EXPORT_BACKENDS

    assert EXPORT_BACKENDS == BACKENDS  # output.export_backend takes what model.backend takes

    with pytest.raises(ValueError, match="only a transformer encoder pooled by cls or mean of its last layer"):
        export_onnx(load_encoder(EncoderConfig(source="tiny:bert", pooling="avg_first_last")), tmp_path / "x")
    run = finetune_run(tmp_path / "run")
    assert_one_error_line(run_predict(run, tmp_path / "bf16", "--set", "model.backend=onnx", "--set",
                                      "inference.precision=bf16"),
                          "inference.precision='bf16' is not valid: expected fp32 with model.backend=onnx")
    assert_one_error_line(run_predict(run, tmp_path / "x", "--set", "model.backend=tensorrt"),
                          "model.backend='tensorrt' is not valid: expected torch or onnx or onnx-int8")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if xlt[onnx] were not installed
    assert_one_error_line(run_predict(run, tmp_path / "missing", "--set", "model.backend=onnx"),
                          "model.backend=onnx needs onnxruntime, which is not installed: pip install 'xlt[onnx]'")
    assert_one_error_line(run_predict(run, tmp_path / "export", "--onnx", job="export.py"),
                          "an ONNX export needs onnxruntime, which is not installed: pip install 'xlt[onnx]'")
    assert not (tmp_path / "export").exists()
