"""``xlt.predict`` and ``jobs/predict.py``: a trained classifier over a user's file or a task's split,
written as resumable shards. Models are tiny:bert checkpoints written without Ray (``write_state``), in runs whose
record (``run.json``) names them as the jobs' records do (the jobs' own records: tests/jobs)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import REPO
from xlt.data import DataError
from xlt.engine import write_state
from xlt.predict import InputConfig, ModelRef, PredictConfig, model_spec, predict, prepare
from xlt.predict.config import PredictInference
from xlt.record import FINISHED, MissingRecord, write_record
from xlt.storage import OutputSettings, read_text
from xlt.train import load_classifier
from xlt.train.batches import batches_of, flatten_batch
from xlt.train.checkpoint import checkpoint_entry
from xlt.train.workload import FINETUNE, finetune_training

from benchmarks.loading import load_benchmark

from train.helpers import LABELS, rows_with_views, tiny_config

train_step = load_benchmark("harness").train_step

TEXTS = {"de": ["der rover fand wasser", "das finale endete zwei zu eins", "eine reise nach rom"],
         "fr": ["le rover a trouvé de l'eau", "la finale s'est terminée", "un voyage à rome", "la science"]}


def checkpoint(directory: Path, paired: bool = False) -> Path:
    """A tiny:bert classifier over ``LABELS``, trained a little (labels that differ row to row), as a
    fine-tuning checkpoint."""
    import torch

    torch.manual_seed(3)
    cfg = tiny_config(paired=paired, lr=5e-3)
    training = finetune_training(cfg, steps_per_epoch=20)
    rows = [{**r, "views": None, "view_kinds": None, "view_langs": None, "view_pairs": None,
             **({"text_pair": r["text"][::-1]} if paired else {})} for r in rows_with_views() if r["label"]]
    batch = flatten_batch(batches_of(rows, 4)[0], {label: i for i, label in enumerate(LABELS)})
    for _ in range(20):
        train_step(training, batch)
    return write_state(directory, training, cfg)


EPOCH = "epoch001"  # the checkpoint of a stand-in fine-tuning run (finetune_run)


def finetune_run(run: Path, paired: bool = False) -> Path:
    """A fine-tuning run's output: a ``checkpoint`` in ``run/epoch001`` and the record the engine writes for it."""
    checkpoint(run / EPOCH, paired=paired)
    cfg = tiny_config(paired=paired)
    write_record(run, FINETUNE.job, cfg, FINISHED, classifiers=FINETUNE.classifiers(cfg, str(run / EPOCH), str(run)),
                 default="model")
    return run


def config(model: Path, out: Path | str, **input_fields) -> PredictConfig:
    return PredictConfig(model=ModelRef(str(model)), input=InputConfig(**input_fields), output=OutputSettings(str(out)),
                         shard_rows=3, inference=PredictInference(num_actors=0, batch_size=2, precision="fp32"))


def read_predictions(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out / "predictions").sort_values("id").reset_index(drop=True)


def assert_same_as_predict(frame: pd.DataFrame, model: Path, items: dict[str, object]) -> None:
    """Every row as ``Classifier.predict`` labels it: identical labels, probabilities within 1e-6."""
    classifier = load_classifier(model)
    expected = classifier.predict([items[i] for i in frame["id"]])
    assert list(frame["label"]) == expected.labels
    probabilities = frame[[f"p_{label}" for label in classifier.labels]].to_numpy()
    assert np.abs(probabilities - expected.probabilities).max() < 1e-6
    assert np.allclose(frame["confidence"], expected.probabilities.max(1), atol=1e-6)


def test_single_texts_of_a_file_in_several_languages_are_predicted_once_each(ray_cluster, tmp_path):
    model = finetune_run(tmp_path / "model")
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"id": f"{lang}{i}", "sentence": text, "language": lang} for lang, texts in TEXTS.items()
            for i, text in enumerate(texts)]
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    cfg = config(model, tmp_path / "out", path=str(corpus), text_field="sentence", lang_field="language")
    written = predict(prepare(cfg))
    frame = read_predictions(tmp_path / "out")
    assert written.rows == len(rows) == len(frame) and sorted(frame["id"]) == sorted(r["id"] for r in rows)
    assert sorted(p.name for p in (tmp_path / "out" / "predictions").iterdir()) == ["shard-00000", "shard-00001",
                                                                                   "shard-00002"]
    assert {(lang, n) for lang, n in frame.groupby("lang").size().items()} == {("de", 3), ("fr", 4)}
    assert sum(written.labels.values()) == len(rows)
    assert frame[f"p_{LABELS[0]}"].nunique() == len(rows)  # each row its own probabilities
    assert_same_as_predict(frame, model / EPOCH, {r["id"]: r["sentence"] for r in rows})


def test_pairs_of_a_csv_from_a_runs_named_classifier(tmp_path):
    """A run whose record names several classifiers (a co-training run's learners): the one ``learner`` names,
    found through the record; without a name, the record's default."""
    run = tmp_path / "cotrain"
    for name, paired in (("lm", True), ("emb", True)):
        checkpoint(run / "learners" / name / "iteration1", paired=paired)
    entries = {name: checkpoint_entry(str(run / "learners" / name / "iteration1"), str(run)) for name in ("lm", "emb")}
    write_record(run, "cotrain", {"task": {"name": "tiny"}}, FINISHED, classifiers=entries, default="lm")
    assert entries["emb"]["spec"]["state"] == "learners/emb/iteration1/model.pt"  # relative: the run moves whole
    assert model_spec(run, "emb")[0] == str(run / "learners" / "emb" / "iteration1" / "model.pt")
    assert model_spec(run)[0] == str(run / "learners" / "lm" / "iteration1" / "model.pt")
    corpus = tmp_path / "pairs.csv"
    pairs = [("a man plays", "someone plays"), ("it rains", "the sun shines"), ("two dogs", "animals")]
    corpus.write_text("premise,hypothesis\n" + "".join(f"{a},{b}\n" for a, b in pairs), encoding="utf-8")
    cfg = PredictConfig(model=ModelRef(str(run), learner="emb"),
                        input=InputConfig(path=str(corpus), text_field="premise", pair_field="hypothesis", lang="de"),
                        output=OutputSettings(str(tmp_path / "out")), format="csv",
                        inference=PredictInference(num_actors=0, batch_size=2, precision="fp32"))
    predict(prepare(cfg))
    frame = pd.concat(pd.read_csv(p) for p in sorted((tmp_path / "out" / "predictions").glob("shard-*/*.csv")))
    assert list(frame.columns) == ["id", "lang", "text", "text_pair", "label", "confidence",
                                   *(f"p_{label}" for label in LABELS)]
    assert sorted(frame["id"]) == ["pairs.csv:2", "pairs.csv:3", "pairs.csv:4"]  # rows without an id: file:line
    assert_same_as_predict(frame.sort_values("id"), run / "learners" / "emb" / "iteration1",
                           {f"pairs.csv:{i + 2}": pair for i, pair in enumerate(pairs)})


def test_a_sweeps_record_points_at_its_best_trials_run_and_the_learner_it_scored_with(tmp_path):
    """A sweep's record (as ``xlt.sweep.finish`` writes it) points at its best trial's run and the learner it
    scored with; another learner is looked up in that run's record. A name no record holds, and a directory
    without a record, are refused in one line. (A real sweep's: tests/jobs/test_sweep.py.)"""
    sweep = tmp_path / "sweep"
    run = sweep / "trial_b" / "cotrain"
    for learner in ("lm", "emb"):
        checkpoint(run / "learners" / learner / "iteration1")
    write_record(run, "cotrain", {}, FINISHED, default="lm", classifiers={
        name: checkpoint_entry(str(run / "learners" / name / "iteration1"), str(run)) for name in ("lm", "emb")})
    write_record(sweep, "sweep", {}, FINISHED, classifiers={"best": {"run": "trial_b/cotrain", "classifier": "emb"}},
                 default="best")
    assert Path(model_spec(sweep)[0]).parent == run / "learners" / "emb" / "iteration1"
    assert Path(model_spec(sweep, "lm")[0]).parent == run / "learners" / "lm" / "iteration1"
    finetune = finetune_run(tmp_path / "finetune")
    assert Path(model_spec(finetune)[0]).parent == finetune / EPOCH
    with pytest.raises(LookupError, match=r"model.learner='emb': the finetune run in .*finetune records no such "
                                          r"classifier; it records: model"):
        model_spec(finetune, "emb")
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "results.json").write_text(json.dumps({"command": "python jobs/finetune.py --set output.dir=bare"}))
    with pytest.raises(MissingRecord, match=r"bare holds no run.json, .*run its own command again, which writes it "
                                            r"without training: python jobs/finetune.py --set output.dir=bare$"):
        model_spec(bare)


def test_a_stopped_job_rerun_writes_each_row_once(tmp_path):
    model = finetune_run(tmp_path / "model")
    corpus = tmp_path / "corpus.txt"
    texts = [f"sentence number {i}" for i in range(8)]
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    cfg = config(model, tmp_path / "out", path=str(corpus), lang="de")
    prepared = prepare(cfg)

    def stop_after_the_first_shard(n):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict(prepared, done=stop_after_the_first_shard)
    (tmp_path / "out" / "predictions" / "shard-00001").mkdir()  # a shard a stopped run had begun writing
    (tmp_path / "out" / "predictions" / "shard-00001" / "partial.parquet").write_bytes(b"half a file")
    written = predict(prepared)
    assert written.skipped == 1 and written.rows == 8
    frame = read_predictions(tmp_path / "out")
    assert sorted(frame["id"]) == sorted(f"corpus.txt:{i + 1}" for i in range(8))  # each once
    assert_same_as_predict(frame, model / EPOCH, {f"corpus.txt:{i + 1}": t for i, t in enumerate(texts)})


@pytest.mark.parametrize("content, fields, message", [
    ("id,sentence\n1,hello\n", {}, r"corpus.csv:1: missing column 'text'; columns present: 'id', 'sentence'"),
    ("text\nhello\n\"\"\n", {}, r"corpus.csv:3: .*empty"),
    ("text,lang\nhello,de\nhi,\n", {"lang_field": "lang", "lang": None}, r"corpus.csv:3: empty text in column 'lang'"),
    ("text,lang\nhello,deu_Latn\nhi,not-a-language-zz\n", {"lang_field": "lang", "lang": None},
     r"corpus.csv:3: column 'lang': unknown language code 'not-a-language-zz'"),
    ("text,id\nhello,a\nhi,a\n", {}, r"corpus.csv: duplicate id 'a' in one shard"),
])
def test_bad_input_is_one_line_naming_file_and_line(tmp_path, content, fields, message):
    model = finetune_run(tmp_path / "model")
    (tmp_path / "corpus.csv").write_text(content, encoding="utf-8")
    cfg = config(model, tmp_path / "out", **{"path": str(tmp_path / "corpus.csv"), "lang": "de", **fields})
    with pytest.raises(DataError, match=message):
        predict(prepare(cfg))
    assert not (tmp_path / "out" / "predictions").exists()  # the bad row's shard (the only one) is not written


def test_languages_are_normalised_as_the_task_layer_does(tmp_path):
    """``deu_Latn`` and ``deu`` are ``de``, as in a task; a file's ``input.lang`` that names no language is one error."""
    from xlt.config import ConfigError
    from xlt.predict.inputs import file_rows, open_input

    path = tmp_path / "corpus.csv"
    path.write_text("text,lang\nhallo,deu_Latn\nhi,deu\nsalut,fr\n", encoding="utf-8")
    rows = list(file_rows(InputConfig(path=str(path), lang_field="lang"), str(path), path.name))
    assert [r["lang"] for r in rows] == ["de", "de", "fr"]
    assert [r["lang"] for r in file_rows(InputConfig(path=str(path), lang="fra"), str(path), path.name)] == ["fr"] * 3
    with pytest.raises(ConfigError, match="input.lang: unknown language code 'xx-zz'"):
        open_input(InputConfig(path=str(path), lang="xx-zz"))


def corpus_directory(root: Path) -> dict[str, str]:
    """A corpus as users have it: JSON Lines gzipped, CSV, text zstd-compressed in a subdirectory, and files that
    are not data (``_SUCCESS``, hidden); returns the texts by the id each row gets."""
    import gzip

    import pyarrow as pa

    (root / "more").mkdir(parents=True)
    jsonl = [{"sentence": t, "language": "deu_Latn"} for t in TEXTS["de"]]
    (root / "a.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in jsonl).encode()))
    (root / "b.csv").write_text("sentence,language,id\n" + "".join(f"{t},fr,fr-{i}\n" for i, t in
                                                                    enumerate(TEXTS["fr"])), encoding="utf-8")
    with pa.CompressedOutputStream(str(root / "more" / "c.jsonl.zst"), "zstd") as sink:
        sink.write(json.dumps({"sentence": "ein letzter satz", "language": "de"}).encode() + b"\n")
    (root / "_SUCCESS").write_text("not data")
    (root / ".hidden.jsonl").write_text("not data")
    return {**{f"a.jsonl.gz:{i + 1}": t for i, t in enumerate(TEXTS["de"])},
            **{f"fr-{i}": t for i, t in enumerate(TEXTS["fr"])}, "more/c.jsonl.zst:1": "ein letzter satz"}


def test_a_directory_of_compressed_files_streams_through_one_pool_of_actors(ray_cluster, tmp_path):
    """A directory of files in three formats, two of them compressed, labelled by two actors (the job's one pool
    for all its shards: tests/inference/test_labellers.py): every row once, ids from the file and line where the row
    has none, predictions as ``Classifier.predict``'s; a glob picks its files."""
    model = finetune_run(tmp_path / "model")
    texts = corpus_directory(tmp_path / "corpus")
    cfg = dataclasses.replace(config(model, tmp_path / "out", path=str(tmp_path / "corpus"), text_field="sentence",
                                     lang_field="language"),
                              inference=PredictInference(num_actors=2, num_cpus=0.5, batch_size=2, precision="fp32"))
    written = predict(prepare(cfg))
    frame = read_predictions(tmp_path / "out")
    assert written.rows == len(texts) == len(frame) == 8 and sorted(frame["id"]) == sorted(texts)
    assert len(list((tmp_path / "out" / "predictions").iterdir())) == 3  # shards of 3 rows
    assert dict(frame.groupby("lang").size()) == {"de": 4, "fr": 4}
    assert_same_as_predict(frame, model / EPOCH, texts)
    globbed = dataclasses.replace(cfg, input=dataclasses.replace(cfg.input, path=str(tmp_path / "corpus" / "*.csv")),
                                  output=OutputSettings(str(tmp_path / "globbed")))
    assert predict(prepare(globbed)).rows == len(TEXTS["fr"])


def test_a_corpus_on_the_s3_server(tmp_path, s3):
    """The same corpus read from the local S3 server, written back to it."""
    from xlt.storage import upload

    model = finetune_run(tmp_path / "model")
    texts = corpus_directory(tmp_path / "corpus")
    upload(tmp_path / "corpus", f"{s3}/corpus")
    cfg = config(model, f"{s3}/out", path=f"{s3}/corpus/", text_field="sentence", lang_field="language")
    written = predict(prepare(cfg))
    assert written.rows == len(texts)
    import pyarrow.dataset

    frame = pyarrow.dataset.dataset(f"{s3.removeprefix('s3://')}/out/predictions", format="parquet",
                                    filesystem=s3_filesystem()).to_table().to_pandas()
    assert sorted(frame["id"]) == sorted(texts)


def s3_filesystem():
    import pyarrow.fs

    return pyarrow.fs.S3FileSystem(endpoint_override=os.environ["AWS_ENDPOINT_URL"], region="us-east-1")


def test_a_bad_row_in_a_large_file_stops_before_its_shard_or_is_skipped_into_its_rejects(tmp_path):
    """Line 25 of 40 is not JSON: under ``fail`` the shards before it are written and its own is not (a rerun
    after the fix writes the rest); under ``skip`` every other row is written once and the bad one is in its
    shard's rejects, with its file, line and reason."""
    model = finetune_run(tmp_path / "model")
    corpus = tmp_path / "big.jsonl"
    lines = [json.dumps({"text": f"sentence {i}"}) for i in range(40)]
    lines[24] = '{"text": "broken'
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = dataclasses.replace(config(model, tmp_path / "out", path=str(corpus), lang="de"), shard_rows=10)
    with pytest.raises(DataError, match=r"big.jsonl:25: not valid JSON"):
        predict(prepare(cfg))
    shards = tmp_path / "out" / "predictions"
    assert sorted(p.name for p in shards.iterdir()) == ["shard-00000", "shard-00001"]
    assert all((p / "_SUCCESS").is_file() for p in shards.iterdir())
    skip = dataclasses.replace(cfg, input=dataclasses.replace(cfg.input, on_bad_row="skip"))
    written = predict(prepare(skip))
    assert (written.rows, written.rejected, written.skipped) == (39, 1, 2)
    frame = read_predictions(tmp_path / "out")
    assert sorted(frame["id"]) == sorted(f"big.jsonl:{i + 1}" for i in range(40) if i != 24)
    (rejected,) = [json.loads(line) for line in (shards / "shard-00002" / "_rejected.jsonl").read_text().splitlines()]
    assert rejected["file"].endswith("big.jsonl") and rejected["position"] == 25 and "not valid JSON" in rejected["reason"]


def test_a_model_that_is_not_a_classifier_or_reads_other_items_is_refused(tmp_path):
    (tmp_path / "corpus.txt").write_text("hello\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"empty holds no run.json, the record every xlt job writes into its "
                                                r"output: run the job that wrote it again"):
        prepare(config(tmp_path / "empty", tmp_path / "out", path=str(tmp_path / "corpus.txt"), lang="de"))
    paired = finetune_run(tmp_path / "paired", paired=True)
    with pytest.raises(ValueError, match=r"reads sentence pairs; input .*corpus.txt holds single texts"):
        prepare(config(paired, tmp_path / "out", path=str(tmp_path / "corpus.txt"), lang="de"))


def centred_probe(directory: Path):
    """A tiny:bert probe export centred on a mean for en and fr (an adapted probe's: ``xlt.eval.adaptation``)."""
    import torch

    from xlt.models import Classifier, EncoderConfig, load_encoder

    torch.manual_seed(5)
    classifier = Classifier(load_encoder(EncoderConfig(source="tiny:bert")), LABELS, normalize=True,
                            languages=["en", "fr"])
    classifier.language_means.normal_(0, 0.2)
    classifier.head.weight.data.normal_(0, 3.0)  # labels that differ from row to row
    classifier.save_pretrained(directory)
    return classifier


def test_a_language_a_centred_classifier_has_no_mean_for_is_refused_before_any_row_is_read(tmp_path):
    export = tmp_path / "probe"
    centred_probe(export)
    (tmp_path / "corpus.txt").write_text("hallo\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"has none for \['de'\], which input .*corpus.txt holds; it knows en, fr "
                                         r"\(inference.new_languages: centre-on-input centres a new one"):
        prepare(config(export, tmp_path / "out", path=str(tmp_path / "corpus.txt"), lang="de"))
    assert prepare(config(export, tmp_path / "out", path=str(tmp_path / "corpus.txt"), lang="fr")).spec.languages == \
        ("en", "fr")


NEW = {"de": ["der rover fand wasser", "das finale endete", "eine reise nach rom", "die wahl", "ein neues album"],
       "sw": ["rover ilipata maji", "fainali iliisha", "safari ya roma", "uchaguzi mkuu", "albamu mpya", "afya njema"]}


def test_new_languages_are_centred_on_their_rows_in_the_input_once_and_reused_by_a_rerun(tmp_path, capsys, data_dir):
    """``inference.new_languages: centre-on-input`` through the job: a probe centred on en and fr labels a corpus
    that holds fr and two languages it has no mean for; each new one is centred on the mean of its own rows'
    normalised embeddings (the naive reference below), fr on its own mean, the head unchanged; the means are saved,
    and a rerun after a stop reads them; fewer rows than ``inference.new_language_rows`` is one error line."""
    from jobs.inprocess import run_in_process
    from xlt.models import Classifier

    probe = centred_probe(tmp_path / "probe")
    rows = [{"text": t, "lang": lang} for lang, texts in {**NEW, "fr": TEXTS["fr"]}.items() for t in texts]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    args = ("--set", f"model.path={tmp_path / 'probe'}", "--set", f"input.path={corpus}", "--set",
            "input.lang_field=lang", "--set", f"output.dir={out}", "--set", "shard_rows=4", "--set",
            "inference.new_languages=centre-on-input", "--set", "inference.new_language_rows=5")
    ran = run_in_process("predict.py", *args, capsys=capsys, data_dir=data_dir)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "(inference.new_languages: centre-on-input): de (5 rows), sw (6 rows); means in input_means.json" in ran.stdout
    assert json.loads((out / "results.json").read_text())["centred on the input"] == {"de": 5, "sw": 6}

    reference = Classifier.from_pretrained(tmp_path / "probe")  # naive: each new language's mean by hand
    means = {}
    for lang, texts in NEW.items():
        x = reference.encoder.encode(texts)
        means[lang] = (x / np.linalg.norm(x, axis=1, keepdims=True)).mean(axis=0)
    reference.add_languages(means)
    frame = pd.read_parquet(out / "predictions")
    expected = reference.predict(list(frame["text"]), langs=list(frame["lang"]))
    assert list(frame["label"]) == expected.labels and len(set(expected.labels)) > 1
    # The job encodes the mean pass's rows in batches of their own (shard_rows), padded otherwise than here.
    assert np.abs(frame[[f"p_{label}" for label in probe.labels]].to_numpy() - expected.probabilities).max() < 1e-4
    saved = json.loads((out / "input_means.json").read_text())
    assert [(m["lang"], m["rows"]) for m in saved["means"]] == [("de", 5), ("sw", 6)]
    assert all(np.abs(np.asarray(m["mean"]) - means[m["lang"]]).max() < 1e-5 for m in saved["means"])
    assert reference.languages == ["en", "fr", "de", "sw"] and torch_equal(reference.head.weight, probe.head.weight)

    for shard in (out / "predictions").iterdir():  # a stop before the last shards: the rerun writes them again
        if shard.name >= "shard-00002":
            (shard / "_SUCCESS").unlink()
    rerun = run_in_process("predict.py", *args, capsys=capsys, data_dir=data_dir)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "sw (6 rows); the means an earlier run wrote to input_means.json" in rerun.stdout
    assert json.loads((out / "input_means.json").read_text()) == saved
    assert pd.read_parquet(out / "predictions").equals(frame)

    few = run_in_process("predict.py", *args, "--set", f"output.dir={tmp_path / 'few'}", "--set",
                         "inference.new_language_rows=6", capsys=capsys, data_dir=data_dir)
    assert few.returncode == 2 and few.stderr.strip().splitlines()[-1].startswith(
        f"error: input {corpus}: too few rows to centre de (5) on (inference.new_language_rows: 6)")
    assert not (tmp_path / "few" / "predictions").exists()


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


def test_the_smoke_job_writes_a_task_split_to_the_s3_server(job_env, tmp_path, s3):
    """``jobs/predict.py --smoke`` end to end (attached to the session's Ray), the SIB-200 test rows of every
    language, onto the local S3 server."""
    import pyarrow.dataset

    model = finetune_run(tmp_path / "model")
    out = f"{s3}/predict"
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "predict.py"), "--smoke", "--set", f"model.path={model}",
                           "--set", f"output.dir={out}"], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=job_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = pyarrow.dataset.dataset(f"{out.removeprefix('s3://')}/predictions", format="parquet",
                                    filesystem=pyarrow.fs.S3FileSystem(endpoint_override=os.environ["AWS_ENDPOINT_URL"])).to_table()
    assert table.num_rows == 8 * 10 and len(table.column("id").unique()) == 80  # 8 rows of each of 10 languages
    assert f"{out}/results.json" in proc.stdout and "80 rows labelled" in proc.stdout
    assert json.loads(read_text(f"{out}/results.json"))["precision"] == "fp32"  # what it computed in


def test_a_task_splits_rows_of_a_label_the_task_lacks_are_dropped_and_counted(tmp_path, capsys, data_dir):
    """``task.unknown_labels: drop`` on a task's split: SIB-200 read as if it had no ``geography`` class; the rows
    that hold it are left out of the prediction and counted per split and language in the ending and results."""
    from jobs.inprocess import run_in_process

    six = "input.task.labels=[science/technology, travel, politics, sports, health, entertainment]"
    ran = run_in_process("predict.py", "--smoke", "--set", f"model.path={finetune_run(tmp_path / 'model')}",
                         "--set", f"output.dir={tmp_path / 'out'}", "--set", "input.task.target_langs=[de]",
                         "--set", six, "--set", "input.task.unknown_labels=drop", capsys=capsys, data_dir=data_dir)
    assert ran.returncode == 0, ran.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert set(results["dropped rows"]) == {"test/en", "test/de"} and all(n > 0 for n in results["dropped rows"].values())
    assert f"(task.unknown_labels: drop): test/de {results['dropped rows']['test/de']}, test/en" in ran.stdout
    assert results["rows"] == 16  # the draw of 8 rows a language, from the rows kept
