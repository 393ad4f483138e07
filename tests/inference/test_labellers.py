"""Labellers that load once: a UDF given new weights predicts what one built anew from them predicts, keeping its
encoder; the pool labels tables in order and streams them, in this process and over actors that survive being
lost (a pass that loses its actor's node: tests/cluster/test_node_failure.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from xlt.inference import InferenceSettings
from xlt.inference import ClassifierSpec, PseudoLabelUDF, share_classifier
from xlt.inference.labellers import Labellers
from xlt.predict.inputs import Shard
from xlt.predict.writer import write_shards

from .test_pseudo_label import LABELS, MODEL, TEXTS, batch_of, trained_like


def spec_of(seed: int, tmp_path) -> ClassifierSpec:
    return share_classifier(trained_like(seed), MODEL, path=tmp_path / f"state-{seed}.pt")


def test_new_weights_into_a_built_udf_predict_as_a_udf_built_from_them(tmp_path):
    first, second = spec_of(1, tmp_path), spec_of(2, tmp_path)
    udf = PseudoLabelUDF({"a": first, "b": first})
    encoder = udf.classifiers["a"].encoder
    before = udf(batch_of(TEXTS))
    udf.load({"a": second, "b": first})
    reloaded, fresh = udf(batch_of(TEXTS)), PseudoLabelUDF({"a": second, "b": first})(batch_of(TEXTS))
    assert udf.classifiers["a"].encoder is encoder  # the weights moved in, the model was not built again
    for column in ("a_pseudo_label", "a_probabilities", "b_probabilities"):
        assert reloaded.column(column).to_pylist() == fresh.column(column).to_pylist(), column
    assert before.column("a_probabilities").to_pylist() != reloaded.column("a_probabilities").to_pylist()
    other = ClassifierSpec(MODEL, LABELS[:2])  # other labels: built anew
    udf.load({"a": other})
    assert list(udf.classifiers) == ["a"] and udf.classifiers["a"].labels == list(LABELS[:2])


def test_the_pool_in_this_process_labels_in_order_and_streams(tmp_path):
    # fp32 as the references: auto is bf16 on a CPU with native bf16, and this test is of order, not precision.
    inference = InferenceSettings(num_actors=0, batch_size=4, threads=1, precision="fp32")
    texts = TEXTS * 2
    with Labellers(inference) as labellers:
        with pytest.raises(RuntimeError, match="load"):
            labellers(batch_of(texts))
        labellers.load(spec_of(1, tmp_path))
        whole = labellers(batch_of(texts))  # batches of 4 rows, back in order
        reference = PseudoLabelUDF(spec_of(1, tmp_path))(batch_of(texts))
        assert whole.column("probabilities").to_pylist() == reference.column("probabilities").to_pylist()
        labellers.load(spec_of(2, tmp_path))
        streamed = list(labellers.stream([batch_of(TEXTS), batch_of(TEXTS[:2])]))
        assert [t.num_rows for t in streamed] == [len(TEXTS), 2] and labellers.loads == 2
        expected = PseudoLabelUDF(spec_of(2, tmp_path))(batch_of(TEXTS)).column("confidence").to_numpy()
        assert np.array_equal(streamed[0].column("confidence").to_numpy(), expected)


def test_torch_threads_default_to_every_core_in_the_driver_and_to_the_reservation_on_an_actor():
    import os

    assert InferenceSettings(num_actors=0).torch_threads == len(os.sched_getaffinity(0))  # it labels alone
    assert InferenceSettings(num_actors=2, num_cpus=3).torch_threads == 3
    assert InferenceSettings(num_actors=1, num_cpus=0.5).torch_threads == 1
    assert InferenceSettings(num_actors=0, threads=5).torch_threads == InferenceSettings(threads=5).torch_threads == 5


def test_one_pool_of_actors_labels_every_table_and_survives_losing_an_actor(ray_cluster, tmp_path):
    """The same two actors label every table given to them (one pool for a job); given new weights, then killed
    (as losing its node), an actor is restarted empty by Ray, and its next table, which names the latest load, has
    it load the second classifier (not the first it was built with, nor nothing) before labelling."""
    import os

    import ray

    def pid(actor) -> int:
        return ray.get(actor.__ray_call__.remote(lambda self: os.getpid()))

    inference = InferenceSettings(num_actors=2, num_cpus=0.5, batch_size=2, threads=1, precision="fp32")  # as `expected`
    with Labellers(inference) as labellers:
        labellers.load(spec_of(1, tmp_path))
        workers = [set(labellers(batch_of(TEXTS)).column("worker").to_pylist()) for _ in range(3)]
        assert len(set().union(*workers)) == 2 and all(len(w) == 2 for w in workers)
        labellers.load(spec_of(2, tmp_path))
        first = pid(labellers.actors[0])
        ray.kill(labellers.actors[0], no_restart=False)  # Ray starts it again, empty
        after = labellers(batch_of(TEXTS))
        assert pid(labellers.actors[0]) != first and len(set(after.column("worker").to_pylist())) == 2
        # A stream of tables, each in order, the next ones' batches handed out while one finishes; a table of None
        # passes through.
        tables = [batch_of(TEXTS[:3]), None, batch_of(TEXTS), batch_of(TEXTS[1:2])]
        streamed = list(labellers.in_order(iter(tables)))
        # A predict job's shards: a bad row met while reading ahead stops the job after the shards before it.
        out = tmp_path / "out"
        with pytest.raises(ValueError, match="bad row"):
            write_shards(shards_then_a_bad_row(), labellers, LABELS, False, str(out), "jsonl")
        # A centred classifier's new languages (xlt.predict.centring): the actors' sums are this process's.
        labellers.load(centred_spec(tmp_path))
        over_actors = labellers.language_sums(languages_tables())
    with Labellers(InferenceSettings(num_actors=0, batch_size=2, threads=1, precision="fp32")) as here:
        here.load(centred_spec(tmp_path))
        in_process = here.language_sums(languages_tables())
    assert {lang: n for lang, (_, n) in over_actors[None].items()} == {"de": 3, "xx": 4}
    assert all(np.array_equal(over_actors[None][lang][0], in_process[None][lang][0]) for lang in ("de", "xx"))
    expected = PseudoLabelUDF(spec_of(2, tmp_path))(batch_of(TEXTS)).column("probabilities").to_pylist()
    assert after.column("probabilities").to_pylist() == expected
    assert streamed[1] is None and [t.column("text").to_pylist() for t in (streamed[0], *streamed[2:])] == \
        [TEXTS[:3], TEXTS, TEXTS[1:2]]
    assert streamed[2].column("probabilities").to_pylist() == expected
    assert sorted(p.name for p in (out / "predictions").iterdir()) == ["shard-00000", "shard-00001"]
    assert all((out / "predictions" / name / "_SUCCESS").is_file() for name in ("shard-00000", "shard-00001"))


def centred_spec(tmp_path) -> ClassifierSpec:
    """``trained_like(1)`` reading normalised features centred on an (``en``) mean: new languages to it are any other."""
    from xlt.models import Classifier

    trained = trained_like(1)
    centred = Classifier(trained.encoder, LABELS, normalize=True, languages=["en"])
    return share_classifier(centred, MODEL, path=tmp_path / "centred.pt")


def languages_tables() -> list:
    """Tables of rows in ``en`` (a centred language) and two others, ``de`` and ``xx``, across tables."""
    first, second = batch_of(TEXTS[:4]), batch_of(TEXTS[3:])
    return [first.set_column(2, "lang", pa.array(["en", "de", "xx", "de"])),
            second.set_column(2, "lang", pa.array(["xx", "xx", "de"])), batch_of(TEXTS[:1])]


def shards_then_a_bad_row():
    rows = [{"id": f"r{i}", "lang": "xx", "text": text} for i, text in enumerate(TEXTS)]
    yield Shard(0, rows[:3])
    yield Shard(1, rows[3:])
    raise ValueError("corpus.jsonl:9: a bad row")


def test_a_pool_started_inside_a_placement_group_of_no_cpu_reserves_its_own(ray_cluster, tmp_path):
    """A study's Tune trial runs the job's driver in a bundle of no CPU, which captures what the driver starts; the
    pool's actors (0.5 CPU each) reserve theirs outside it and label as in the driver."""
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    @ray.remote(num_cpus=0)
    def label(spec, table) -> list:  # what it reads comes with it: a worker cannot import the tests' modules
        from xlt.inference import InferenceSettings
        from xlt.inference.labellers import Labellers

        inference = InferenceSettings(num_actors=1, num_cpus=0.5, batch_size=4, threads=1, precision="fp32")
        with Labellers(inference) as labellers:
            labellers.load(spec)
            return labellers(table).column("probabilities").to_pylist()

    group = placement_group([{"memory": 1}])  # what a study's trial reserves
    ray.get(group.ready(), timeout=60)
    try:
        inside = PlacementGroupSchedulingStrategy(group, placement_group_capture_child_tasks=True)
        got = ray.get(label.options(scheduling_strategy=inside).remote(spec_of(1, tmp_path), batch_of(TEXTS)), timeout=180)
    finally:
        remove_placement_group(group)
    assert got == PseudoLabelUDF(spec_of(1, tmp_path))(batch_of(TEXTS)).column("probabilities").to_pylist()
