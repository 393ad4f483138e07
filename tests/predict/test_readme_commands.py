"""The README's predict and export commands, word for word, from a checkout's root (relative paths as printed), on
tiny stand-ins of the runs they name (``results/finetune/sib200-e5-zero-shot``, ``results/cotrain/xnli``) and the
files they read; the pairs go to the local S3 server's ``bucket``. Run in process (``jobs.inprocess``): none starts
Ray."""

from __future__ import annotations

import gzip
import json
import re
import shlex

import pandas as pd
import pyarrow.fs

from conftest import REPO
from jobs.inprocess import run_in_process
from xlt.record import FINISHED, write_record
from xlt.tracking import Tracker
from xlt.train.checkpoint import checkpoint_entry

from .test_predict import checkpoint, finetune_run


# The README's Python blocks (by their first line) that read what the README's predict and export commands wrote.
README_PYTHON = ("from sentence_transformers import SentenceTransformer", "import mlflow")


def readme_commands(*jobs: str) -> list[list[str]]:
    """The ``python jobs/<job> ...`` command lines of ``jobs`` in the README's bash blocks, in the README's order,
    continuation lines joined, comments dropped; each as ``[<job>, *arguments]`` when ``jobs`` are several."""
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True)[1 if len(jobs) > 1 else 2:] for line in lines
            if any(line.startswith(f"python jobs/{job} ") for job in jobs)]


def test_the_readmes_predict_and_export_commands_run_as_typed(tmp_path, monkeypatch, capsys, data_dir, s3_server):
    for key, value in s3_server.items():
        monkeypatch.setenv(key, value)
    store = pyarrow.fs.S3FileSystem(endpoint_override=s3_server["AWS_ENDPOINT_URL"], region="us-east-1",
                                    allow_bucket_creation=True)
    store.create_dir("bucket")
    monkeypatch.chdir(tmp_path)
    finetune_run(tmp_path / "results/finetune/sib200-e5-zero-shot")
    xnli = tmp_path / "results/cotrain/xnli"  # a co-training run's learner, as its record names it
    checkpoint(xnli / "learners/emb/iteration1", paired=True)
    write_record(xnli, "cotrain", {}, FINISHED, default="emb",
                 classifiers={"emb": checkpoint_entry(str(xnli / "learners/emb/iteration1"), str(xnli))})
    (tmp_path / "corpus.jsonl").write_text('{"text": "the rover found water", "lang": "en"}\n'
                                           '{"text": "der rover fand wasser", "lang": "de"}\n', encoding="utf-8")
    (tmp_path / "pairs.csv").write_text("premise,hypothesis\na man plays,someone plays\nit rains,the sun shines\n",
                                        encoding="utf-8")
    (tmp_path / "corpus").mkdir()
    for part, lines in (("a", ['{"text": "un voyage", "lang": "fr"}', "not json"]), ("b", ['{"text": "x", "lang": "en"}'])):
        (tmp_path / "corpus" / f"{part}.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))

    nusax = probe_export(tmp_path / "results/evaluate/nusax/export/multilingual-e5-small")
    (tmp_path / "swahili.txt").write_text("".join(f"habari ya siku {i}\n" for i in range(120)), encoding="utf-8")
    (tmp_path / "configs").symlink_to(REPO / "configs")  # the checkout's task files, as from its root

    commands = readme_commands("predict.py", "export.py")  # in order: an export before the predict that reads it
    assert [job for job, *_ in commands].count("jobs/predict.py") == 6 and len(commands) == 8
    for job, *args in commands:
        ran = run_in_process(job.removeprefix("jobs/"), *args, capsys=capsys, data_dir=data_dir)
        assert ran.returncode == 0, (args, ran.stderr[-3000:])
    assert len(pd.read_parquet(tmp_path / "results/predict/corpus/predictions")) == 2
    with store.open_input_stream("bucket/xlt/predict/pairs/predictions/shard-00000/part-00000.csv") as source:
        assert source.read().decode().count("\n") == 3  # a header and two pairs
    gz = tmp_path / "results/predict/corpus-gz"
    assert sorted(pd.read_parquet(gz / "predictions")["id"]) == ["a.jsonl.gz:1", "b.jsonl.gz:1"]
    assert "a.jsonl.gz" in (gz / "predictions/shard-00000/_rejected.jsonl").read_text()
    assert (tmp_path / "results/export/sib200/head.safetensors").is_file()
    assert (tmp_path / "results/export/sib200-onnx/onnx/model_qint8.onnx").is_file()
    assert json.loads((tmp_path / "results/predict/corpus-int8/results.json").read_text())["backend"] == "onnx-int8"
    labelled = pd.read_parquet(tmp_path / "results/predict/nusax/predictions")
    assert set(labelled["lang"]) == set(nusax.languages) and len(labelled) == 400 * len(nusax.languages)
    swahili = json.loads((tmp_path / "results/predict/swahili/results.json").read_text())
    assert swahili["centred on the input"] == {"sw": 120} and swahili["rows"] == 120

    # The README's Python on what these commands wrote: the exports, and one logged as a job logs its export.
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with Tracker("finetune", "readme", tmp_path / "results/finetune/sib200-e5-zero-shot") as tracker:
        uri = tracker.model(tmp_path / "results/export/sib200")
    for first, body in readme_python(*README_PYTHON):
        namespace: dict = {}
        exec(compile(body.replace('"models:/m-..."', repr(uri)), "README.md", "exec"), namespace)  # noqa: S102
    assert list(namespace["model"].predict(pd.DataFrame({"text": ["x"], "lang": ["en"]})).columns)[:2] == \
        ["label", "confidence"]


def readme_python(*firsts: str) -> list[tuple[str, str]]:
    """The README's ``python`` blocks that begin with one of ``firsts``, in order, as ``(first line, block)``."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    found = [(body.splitlines()[0], body) for body in blocks if body.splitlines()[0] in firsts]
    assert {first for first, _ in found} == set(firsts)
    return found


def probe_export(directory):
    """A tiny stand-in of ``jobs/evaluate.py --config configs/evaluate_nusax.yaml``'s export: a tiny:bert classifier
    over NusaX's labels, centred on a mean for each of its languages."""
    import torch

    from xlt.config import load_config
    from xlt.eval.protocols import EvaluateConfig
    from xlt.models import Classifier, EncoderConfig, load_encoder

    task = load_config(EvaluateConfig, REPO / "configs/evaluate_nusax.yaml").task
    torch.manual_seed(0)
    classifier = Classifier(load_encoder(EncoderConfig(source="tiny:bert")), task.labels, normalize=True,
                            languages=list(task.languages))  # the task file's every language
    classifier.language_means.normal_(0, 0.1)
    classifier.save_pretrained(directory)
    return classifier
