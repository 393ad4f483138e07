"""``jobs/export.py`` / ``xlt.export``: a fine-tuning run's classifier, found through the run's record, exported with
its model card; the export loads in sentence-transformers and as the classifier, predicting what the checkpoint
did."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from conftest import REPO
from xlt.models import Classifier
from xlt.train import load_classifier

from .test_predict import EPOCH, finetune_run

TEXTS = ["der rover fand wasser", "la finale s'est terminée", "a trip to rome"]


def test_the_export_job_writes_a_loadable_classifier_with_its_card(tmp_path):
    from sentence_transformers import SentenceTransformer

    model = finetune_run(tmp_path / "model")
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "export.py"), "--smoke", str(model)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "results" / "smoke" / "export"
    assert f"exported {model} to results/smoke/export" in proc.stdout
    import yaml

    card = (out / "README.md").read_text()
    _, front, body = card.split("---\n", 2)  # the metadata block a model hub reads, then the card
    metadata = yaml.safe_load(front)
    assert metadata["library_name"] == "sentence-transformers" and metadata["pipeline_tag"] == "text-classification"
    assert metadata["language"][0] == "en" and len(metadata["language"]) > 1 and "accuracy" in metadata["metrics"]
    assert body.lstrip().startswith("# tiny: a cross-lingual classifier trained with xlt")
    assert f"(pooling `{original_pooling(model)}`" in card
    assert "Labels: science, sports, travel" in card and "tiny:bert" in card and "```yaml" in card
    assert f"`model` of the finetune run in `{model}` (fine-tuned)" in card
    original, exported = load_classifier(model / EPOCH), Classifier.from_pretrained(out)
    expected, got = original.predict(TEXTS), exported.predict(TEXTS)
    assert got.labels == expected.labels and np.abs(got.probabilities - expected.probabilities).max() < 1e-6
    theirs = SentenceTransformer(str(out), device="cpu").encode(TEXTS, normalize_embeddings=True)
    assert (theirs * original.encoder.encode(TEXTS, normalize=True)).sum(1).min() >= 0.9999


def original_pooling(model) -> str:
    return load_classifier(model / EPOCH).encoder.pooling


def test_export_names_a_directory_that_is_not_a_model(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "export.py"), str(tmp_path), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    (last,) = proc.stderr.strip().splitlines()[-1:]
    assert proc.returncode == 2 and last.startswith(f"error: {tmp_path} holds no run.json")


def test_predict_reads_an_export_as_it_reads_the_checkpoint(tmp_path):
    from xlt.export import export_model
    from xlt.predict import predict, prepare

    from .test_predict import assert_same_as_predict, config, read_predictions

    model = finetune_run(tmp_path / "model")
    export_model(model, tmp_path / "export")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    prepared = prepare(config(tmp_path / "export", tmp_path / "out", path=str(corpus), lang="de"))
    assert prepared.spec.state.endswith("head.safetensors") and prepared.spec.model.source.startswith("local:")
    predict(prepared)
    assert_same_as_predict(read_predictions(tmp_path / "out"), model / EPOCH, {f"corpus.txt:{i + 1}": t for i, t in enumerate(TEXTS)})
