"""Pseudo-labelling UDF against Classifier.predict; specs round-trip; the actor pool end to end."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch

from xlt import hardware
from xlt.inference.pseudo_label import gpus_or_none
from xlt.inference.labellers import Labellers
from xlt.inference import (
    EXACT,
    OUTPUT_COLUMNS,
    ClassifierSpec,
    PseudoLabelUDF,
    build_classifier,
    prediction_column,
    share_classifier,
)
from xlt.models import Classifier, EncoderConfig

from benchmarks.loading import load_benchmark

pseudo_label = load_benchmark("ray_data_pool").pseudo_label  # Ray Data's pool, which the jobs do not use

MODEL = EncoderConfig(source="tiny:bert", pooling="mean")
LABELS = ("sports", "health", "travel")
TEXTS = ["a", "a much longer sentence than the others", "中文句子", "mid length one", "x y", "Ein Satz."]


def trained_like(seed: int = 1) -> Classifier:
    """A classifier whose head is NOT the fresh one, so a state that fails to arrive is visible."""
    classifier = build_classifier(ClassifierSpec(MODEL, LABELS))
    g = torch.Generator().manual_seed(seed)
    # Tiny-model embeddings share a large mean; centring the head on it makes texts disagree.
    mean = torch.from_numpy(classifier.encoder.encode(TEXTS).mean(0))
    with torch.no_grad():
        classifier.head.weight.copy_(torch.randn(classifier.head.weight.shape, generator=g) * 10)
        classifier.head.bias.copy_(-classifier.head.weight @ mean)
    return classifier


def batch_of(texts: list[str]) -> pa.Table:
    return pa.table({"id": [f"u{i}" for i in range(len(texts))], "text": texts,
                     "lang": ["xx"] * len(texts), "label": pa.nulls(len(texts), pa.string())})


def assert_same_state(a: Classifier, b: Classifier) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for name in sa:
        assert torch.equal(sa[name], sb[name]), name


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return trained_like()


@pytest.fixture(scope="module")
def path_spec(classifier: Classifier, tmp_path_factory: pytest.TempPathFactory) -> ClassifierSpec:
    return share_classifier(classifier, MODEL, path=tmp_path_factory.mktemp("clf") / "nested" / "model.pt")


def test_udf_equals_predict_and_keeps_input_columns(classifier: Classifier, path_spec: ClassifierSpec) -> None:
    expected = classifier.predict(TEXTS, batch_size=4)
    batch = batch_of(TEXTS)
    udf = PseudoLabelUDF(path_spec, replace(EXACT, encode_batch_size=4))
    out = udf(batch)
    assert udf(out).equals(out)  # labelling again replaces the output columns rather than adding more

    assert out.column_names == batch.column_names + list(OUTPUT_COLUMNS)
    assert out.select(batch.column_names).equals(batch)  # input columns untouched, nulls included
    assert out.schema.field("pseudo_label").type == pa.string()
    assert out.schema.field("confidence").type == pa.float32()
    assert out.schema.field("probabilities").type == pa.list_(pa.float32())

    labels = out.column("pseudo_label").to_pylist()
    confidence = out.column("confidence").to_numpy()
    probabilities = np.array(out.column("probabilities").to_pylist())
    assert labels == expected.labels
    assert len(set(labels)) > 1  # the trained-like head separates these texts: the comparison is not vacuous
    assert np.allclose(confidence, expected.confidence, atol=1e-6)
    assert np.allclose(probabilities, expected.probabilities, atol=1e-6)
    assert np.allclose(probabilities.sum(1), 1.0, atol=1e-5)
    assert np.array_equal(confidence, probabilities.max(1).astype(np.float32))
    assert [LABELS[k] for k in probabilities.argmax(1)] == labels  # spec.labels order


def test_sorted_and_unsorted_give_the_same_predictions(path_spec: ClassifierSpec) -> None:
    seen: dict[bool, list[list[str]]] = {}
    outputs = {}
    for sort in (True, False):
        udf = PseudoLabelUDF(path_spec, replace(EXACT, encode_batch_size=2), sort_by_length=sort)
        encoder = udf.classifiers[None].encoder
        calls: list[list[str]] = []
        embed = encoder.embed
        encoder.embed = lambda texts, embed=embed, calls=calls: (calls.append(list(texts)), embed(texts))[1]
        outputs[sort] = udf(batch_of(TEXTS))
        seen[sort] = calls
    # The flag reaches the encoder: unsorted encodes in input order, sorted shortest first.
    assert seen[False][0] == TEXTS[:2]
    assert seen[True][0] == ["a", "x y"]
    assert outputs[True].column("pseudo_label").equals(outputs[False].column("pseudo_label"))
    assert np.allclose(np.array(outputs[True].column("probabilities").to_pylist()),
                       np.array(outputs[False].column("probabilities").to_pylist()), atol=1e-5)


def test_several_classifiers_in_one_pass_each_equal_their_own_udf(path_spec: ClassifierSpec, tmp_path: Path) -> None:
    other = share_classifier(trained_like(seed=2), MODEL, path=tmp_path / "other.pt")
    batch = batch_of(TEXTS)
    out = PseudoLabelUDF({"lm": path_spec, "emb": other}, replace(EXACT, encode_batch_size=4))(batch)
    assert out.column_names == [*batch.column_names, *(prediction_column(c, name) for name in ("lm", "emb")
                                                       for c in ("pseudo_label", "confidence", "probabilities")), "worker", "node", "precision"]
    for name, spec in (("lm", path_spec), ("emb", other)):
        alone = PseudoLabelUDF(spec, replace(EXACT, encode_batch_size=4))(batch)
        for column in ("pseudo_label", "confidence", "probabilities"):
            assert out.column(prediction_column(column, name)).equals(alone.column(column)), (name, column)
    assert out.column("lm_pseudo_label") != out.column("emb_pseudo_label")  # two heads, two predictions
    paired = ClassifierSpec(MODEL, LABELS, path_spec.state, paired=True)
    with pytest.raises(ValueError, match="must all read single texts or all sentence pairs"):
        PseudoLabelUDF({"lm": path_spec, "emb": paired})
    with pytest.raises(TypeError, match="spec 'emb' must be a ClassifierSpec"):
        PseudoLabelUDF({"lm": path_spec, "emb": "model.pt"})


def test_spec_round_trips_by_path_and_object_ref(ray_cluster, classifier: Classifier,
                                                 path_spec: ClassifierSpec) -> None:
    ref_spec = share_classifier(classifier, MODEL)
    assert isinstance(ref_spec.state, ray_cluster.ObjectRef) and Path(path_spec.state).is_file()
    for spec in (path_spec, ref_spec):
        loaded = build_classifier(spec)
        assert loaded.labels == list(LABELS) and not loaded.training
        assert_same_state(loaded, classifier)


def test_fresh_head_is_the_same_everywhere_and_leaves_the_rng_alone() -> None:
    rng = torch.random.get_rng_state()
    a, b = (build_classifier(ClassifierSpec(MODEL, LABELS)) for _ in range(2))
    assert_same_state(a, b)  # every actor of a pool builds the same head
    assert torch.equal(torch.random.get_rng_state(), rng)
    assert not torch.equal(a.head.weight, trained_like().head.weight)


def test_pseudo_label_through_ray(ray_cluster, classifier: Classifier) -> None:
    import ray.data

    texts = [f"{TEXTS[i % len(TEXTS)]} {'word ' * (i % 4)}{i}" for i in range(20)]
    pred = classifier.predict(texts)
    expected = {f"u{i}": (label, p) for i, (label, p) in enumerate(zip(pred.labels, pred.probabilities))}
    assert len({label for label, _ in expected.values()}) > 1
    rows = [{"id": f"u{i}", "text": t, "lang": "xx"} for i, t in enumerate(texts)]
    ds = pseudo_label(ray.data.from_items(rows, override_num_blocks=5), share_classifier(classifier, MODEL),
                      replace(EXACT, batch_size=4, encode_batch_size=3, num_actors=2, num_cpus=0.5, threads=1))
    got = ds.take_all()
    assert len(got) == 20 and sorted(r["id"] for r in got) == sorted(expected)
    for r in got:
        label, probabilities = expected[r["id"]]  # equal only if the state crossed the object store
        assert r["pseudo_label"] == label and np.allclose(r["probabilities"], probabilities, atol=1e-6)
        assert r["text"] == texts[int(r["id"][1:])] and r["lang"] == "xx"
        assert r["confidence"] == pytest.approx(max(r["probabilities"]))

    # In this process, without an actor pool (the labellers of inference.num_actors: 0): the same
    # predictions, in order, and torch's threads as they were before.
    threads = torch.get_num_threads()
    tables = [pa.Table.from_pylist(rows[i:i + 6]) for i in range(0, 20, 6)]
    with Labellers(replace(EXACT, encode_batch_size=3, num_actors=0, threads=threads + 1)) as labellers:
        labellers.load(share_classifier(classifier, MODEL))
        here = list(labellers.in_order(tables))
    assert torch.get_num_threads() == threads
    assert [t.num_rows for t in here] == [6, 6, 6, 2]
    for r in pa.concat_tables(here).to_pylist():
        label, probabilities = expected[r["id"]]
        assert r["pseudo_label"] == label and np.allclose(r["probabilities"], probabilities, atol=1e-6)


def test_missing_text_column_is_named(ray_cluster, path_spec: ClassifierSpec) -> None:
    import ray.data

    udf = PseudoLabelUDF(path_spec)
    with pytest.raises(KeyError, match=r"no text column 'text'; columns: \['id', 'sentence'\]"):
        udf(pa.table({"id": ["a"], "sentence": ["hello"]}))
    ds = ray.data.from_items([{"id": "a", "sentence": "hello"}])
    with pytest.raises(KeyError, match=r"no text column 'text'; columns: \['id', 'sentence'\]"):
        pseudo_label(ds, path_spec)  # caught on the driver when the schema is known
    with pytest.raises(ValueError, match="inference.num_actors=0 is not valid"):
        pseudo_label(ds, path_spec, replace(EXACT, num_actors=0), text_column="sentence")
    out = PseudoLabelUDF(path_spec, text_column="sentence")(pa.table({"id": ["a"], "sentence": ["hello"]}))
    assert out.num_rows == 1 and out.column("pseudo_label")[0].as_py() in LABELS


def test_null_and_empty_batches(path_spec: ClassifierSpec) -> None:
    udf = PseudoLabelUDF(path_spec)
    with pytest.raises(ValueError, match="1 of 2 rows have a null 'text'"):
        udf(pa.table({"text": ["hello", None]}))
    out = udf(batch_of(TEXTS).slice(0, 0))  # Ray Data may hand a UDF an empty batch
    assert out.num_rows == 0 and out.column_names == ["id", "text", "lang", "label", *OUTPUT_COLUMNS]
    assert out.schema.field("probabilities").type == pa.list_(pa.float32())


def test_spec_validation_and_mismatched_state(path_spec: ClassifierSpec, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least two distinct strings"):
        ClassifierSpec(MODEL, ("a", "a"))
    with pytest.raises(TypeError, match="path \\(str\\), a ray.ObjectRef"):
        ClassifierSpec(MODEL, LABELS, state={"head.weight": torch.zeros(1)})
    coerced = ClassifierSpec(MODEL, ["a", "b"], tmp_path / "x.pt")  # list -> tuple, Path -> str
    expected = ClassifierSpec(MODEL, ("a", "b"), str(tmp_path / "x.pt"))
    assert coerced == expected and hash(coerced) == hash(expected)
    with pytest.raises(FileNotFoundError, match="readable wherever an actor runs"):
        build_classifier(ClassifierSpec(MODEL, LABELS, str(tmp_path / "missing.pt")))
    with pytest.raises(ValueError, match="does not fit a Classifier over 'tiny:bert' with 4 labels"):
        build_classifier(ClassifierSpec(MODEL, LABELS + ("news",), path_spec.state))


def test_bf16_autocast_keeps_the_labels_and_bad_precision_is_refused(classifier: Classifier,
                                                                     path_spec: ClassifierSpec, monkeypatch) -> None:
    # Forced bf16 (emulated where the CPU lacks it: slow, but the same arithmetic; the flags say it
    # has it, or the actor would label at auto) against fp32, the default: the labels of these
    # well-separated rows agree, the probabilities to bf16's precision.
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    exact = PseudoLabelUDF(path_spec)(batch_of(TEXTS))
    bf16 = PseudoLabelUDF(path_spec, replace(EXACT, precision="bf16"))(batch_of(TEXTS))
    assert bf16.column("pseudo_label").equals(exact.column("pseudo_label"))
    # Each row says what it was computed in, the driver's configuration being no guide to an actor's machine
    assert set(exact.column("precision").to_pylist()) == {"fp32"} and set(bf16.column("precision").to_pylist()) == {"bf16"}
    a, b = (np.asarray(t.column("probabilities").to_pylist()) for t in (exact, bf16))
    assert 0 < np.abs(a - b).max() < 0.05  # bf16 did run (not bit-equal), and kept its 8 bits of mantissa
    with pytest.raises(Exception, match="precision='fp8' is not valid: expected auto or fp32 or bf16 or fp16"):
        PseudoLabelUDF(path_spec, replace(EXACT, precision="fp8"))


def test_a_precision_the_actors_device_lacks_labels_at_auto_with_a_warning(path_spec: ClassifierSpec, monkeypatch,
                                                                          caplog) -> None:
    """An fp16 GPU preset whose actor landed on a CPU without fp16 (no GPU in the cluster): it labels
    at auto (here fp32), the labels fp32's, and says so once."""
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    with caplog.at_level("WARNING", logger="xlt.inference.pseudo_label"):
        udf = PseudoLabelUDF(path_spec, replace(EXACT, precision="fp16"))
    assert udf.device == "cpu" and udf.precision == "fp32"
    assert [r.getMessage() for r in caplog.records] == [
        "inference.precision fp16: not something the cpu this actor runs on computes in; labelling at auto"]
    labelled = udf(batch_of(TEXTS))
    assert labelled.column("pseudo_label").equals(PseudoLabelUDF(path_spec)(batch_of(TEXTS)).column("pseudo_label"))
    assert set(labelled.column("precision").to_pylist()) == {"fp32"}  # what it ran at, not the fp16 asked for


def test_a_token_budget_gives_the_same_predictions_in_smaller_batches(path_spec: ClassifierSpec) -> None:
    sizes = {}
    outputs = {}
    for budget in (0, 6):
        udf = PseudoLabelUDF(path_spec, replace(EXACT, encode_batch_size=8, tokens_per_batch=budget))
        encoder = udf.classifiers[None].encoder
        calls: list[int] = []
        embed = encoder.embed
        encoder.embed = lambda texts, embed=embed, calls=calls: (calls.append(len(texts)), embed(texts))[1]
        outputs[budget] = udf(batch_of(TEXTS))
        sizes[budget] = calls
    assert len(sizes[6]) > len(sizes[0]) and sum(sizes[6]) == sum(sizes[0]) == len(TEXTS)
    assert outputs[6].column("pseudo_label").equals(outputs[0].column("pseudo_label"))
    assert np.allclose(np.array(outputs[6].column("probabilities").to_pylist()),
                       np.array(outputs[0].column("probabilities").to_pylist()), atol=1e-5)


def test_gpu_actors_in_a_cluster_without_gpus_label_on_cpus(ray_cluster, monkeypatch, caplog) -> None:
    from ray._private.state import state

    with caplog.at_level("WARNING", logger="xlt.inference.pseudo_label"):
        assert gpus_or_none(0.0) == 0.0 and not caplog.records
        assert gpus_or_none(0.5) == 0.0  # the session's cluster: CPUs only, no autoscaler
    assert [r.getMessage() for r in caplog.records] == [
        "inference.num_gpus 0.5: this Ray cluster has no GPU and cannot start one; labelling on CPUs"]
    # An autoscaler that can start GPU nodes: the actors wait for one.
    monkeypatch.setattr(state, "get_max_resources_from_cluster_config", lambda: {"CPU": 32, "GPU": 4})
    assert gpus_or_none(0.5) == 0.5
