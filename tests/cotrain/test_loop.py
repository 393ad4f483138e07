"""The co-training loop on a 2-CPU Ray with tiny models: resume after a stop between iterations
gives the state of an uninterrupted run, and so does an iteration whose learner lost its Ray Train
worker mid-fit; a changed config is refused; a learner's fit on Ray Train; the cache of a frozen
encoder."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import torch

from conftest import REPO
from xlt.config import ConfigError
from xlt.hardware import resolve_precision
from xlt.cotrain import LEARNERS, load_cotrain_config, prepare, run_cotraining
from xlt.cotrain.learner import fit, learner_service
from xlt.cotrain.classifier import members
from xlt.cotrain.loop import PRECISION_KEY
from xlt.cotrain.state import LoopState
from xlt.models.encoder import CachedEncoder, TextEncoder
from xlt.storage import OutputSettings
from xlt.train.workload import read_predictions

SMOKE = REPO / "configs" / "cotrain_smoke.yaml"


def config(data_dir: Path, out: Path, *overrides: str):
    return load_cotrain_config(REPO / "configs" / "cotrain_sib200.yaml",
                               [f"data.data_dir={data_dir}", f"output.dir={out}", "task.target_langs=[de, zh]",
                                *overrides], smoke=SMOKE)


def assert_same_history(history: list[dict], reference: list[dict]) -> None:
    """The same records, metrics to float tolerance; text (``placement/…``: where each thing ran,
    this one node in both runs) exactly."""
    for a, b in zip(history, reference, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == b[key] if isinstance(a[key], str) else a[key] == pytest.approx(b[key], nan_ok=True), key


# One configuration for the three tests below, so that one uninterrupted iteration 0 serves them all:
# the LM learner on a Ray Train worker of 1.5 CPUs, which with the pseudo-labelling actor's 0.5
# reserves the whole 2-CPU machine, and the embedding learner in the driver (the smoke preset's
# num_workers 0: a job may mix the two). The LM fit has enough epochs to be still training after its
# first checkpoint is registered (Ray Train's controller polls its workers every 2 s), with one
# restart allowed. One exchange round keeps the runs short.
# The classifier keeps its best iteration on English dev, so each fit's model is kept (the export test).
SHARED = ("iterations=1", "lm.scaling.num_workers=1", "lm.scaling.cpus_per_worker=1.5", "lm.optim.epochs=6",
          "lm.scaling.max_failures=1", "inference.num_actors=1", "classifier.keep=best-dev")


@dataclasses.dataclass(frozen=True)
class Stopped:
    out: Path
    state: LoopState  # after iteration 0


@pytest.fixture(scope="module")
def iteration0(ray_cluster, data_dir, tmp_path_factory) -> Stopped:
    """``SHARED`` stopped after iteration 0, uninterrupted: the run that resuming continues, the state a
    run whose worker was killed in iteration 0 must end in, and an iteration done with every CPU reserved."""
    out = tmp_path_factory.mktemp("cotrain-loop") / "split"
    return Stopped(out, run_cotraining(config(data_dir, out, *SHARED), stop_after=0))


def kill_training_workers_after_a_checkpoint(run: Path, killed: list[int]) -> None:
    """SIGKILL the Ray Train workers alive once the LM learner's run controller has registered a
    checkpoint (so Ray Train restores from it). Ray's state API needs the dashboard, which the
    test cluster does not start; the GCS actor table it reads from has the pids."""
    import ray

    snapshot = run / "checkpoint_manager_snapshot.json"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not killed:
        if snapshot.is_file() and "epoch" in snapshot.read_text():
            for actor in ray._private.state.actors().values():
                if actor["ActorClassName"] == "RayTrainWorker" and actor["State"] == "ALIVE":
                    os.kill(actor["Pid"], signal.SIGKILL)
                    killed.append(actor["Pid"])
        time.sleep(0.1)


@pytest.fixture(scope="module")
def killed(iteration0, data_dir, tmp_path_factory) -> Stopped:
    """``SHARED`` run to its end while the LM learner's Ray Train worker is killed in iteration 0,
    after its first checkpoint. Its iteration 0 must equal ``iteration0``'s (the kill's test asserts
    it), so it is also the uninterrupted run that a stopped and resumed run must equal."""
    out = tmp_path_factory.mktemp("cotrain-loop") / "killed"
    pids: list[int] = []
    killer = threading.Thread(target=kill_training_workers_after_a_checkpoint, args=(out / "learners" / "lm", pids))
    killer.start()
    state = run_cotraining(config(data_dir, out, *SHARED))
    killer.join()
    assert pids, "no Ray Train worker was alive after the LM learner's first checkpoint"
    return Stopped(out, state)


@pytest.mark.timeout(300)
def test_an_iteration_completes_with_every_cpu_reserved(iteration0, data_dir):
    # Pseudo-labelling must not need a Ray Data task beyond the actor pool.
    state = iteration0.state
    assert state.iteration == 1 and all(state.received[name] for name in LEARNERS)
    # What the pass computed in, as the actor resolved the preset's inference.precision on this machine.
    resolved = resolve_precision(config(data_dir, iteration0.out).inference.precision, "cpu")
    assert [h[PRECISION_KEY] for h in state.history if h["iteration"] == 0 and h["learner"] in LEARNERS] == \
        [resolved] * len(LEARNERS)


def test_resume_after_a_stop_equals_an_uninterrupted_run(iteration0, killed, data_dir):
    # The resumed run re-fits iteration 1 on the pseudo-labels that iteration 0 saved. The run it
    # must equal is ``killed``: its worker's loss in iteration 0 changed nothing (the next test).
    whole = killed.state
    # each iteration: both learners' records, then the job's classifier's
    assert whole.iteration == 2 and [(h["iteration"], h["learner"]) for h in whole.history] == \
        [(i, name) for i in (0, 1) for name in (*LEARNERS, "classifier")]

    first = iteration0.state
    assert first.iteration == 1 and len(first.history) == 3
    resumed = run_cotraining(config(data_dir, iteration0.out, *SHARED))
    assert resumed.received == whole.received  # no pseudo-label lost or doubled, so the same pools
    assert_same_history(resumed.history, whole.history)
    received = {name: [r["id"] for r in resumed.received[name]] for name in LEARNERS}
    assert all(len(ids) == len(set(ids)) > 0 for ids in received.values())
    # A finished run is not run again.
    assert run_cotraining(config(data_dir, iteration0.out, *SHARED)).history == resumed.history

    with pytest.raises(ConfigError, match="differs in selection.threshold"):
        run_cotraining(config(data_dir, iteration0.out, *SHARED, "selection.threshold=0.5"))


@pytest.mark.timeout(600)
def test_a_learner_worker_killed_mid_fit_is_restored_and_the_state_equals_an_uninterrupted_run(iteration0, killed):
    # Iteration 0 of the killed run is the uninterrupted one's: the same pseudo-labels (so the same
    # pools; with one exchange round nothing is received after it) and the same records.
    whole = iteration0.state
    assert killed.state.received == whole.received
    assert_same_history(killed.state.history[:len(whole.history)], whole.history)


def test_the_declared_recipe_exports_the_jobs_classifier_as_it_scored(killed, data_dir, tmp_path):
    """The declared recipe's run (a probe learner; the job's classifier lm × emb or either learner alone, chosen on
    English dev), keeping its best iteration on dev, exported as the job's ``output.export`` does: the classifier is
    the candidate of the best dev accuracy and its export predicts the probabilities the run recorded for the
    iteration it keeps, an earlier one too. Resumed with the product declared, the finished run's classifier is
    scored again from the recorded predictions (no training), its export is the combination, and
    ``jobs/predict.py``'s ``model.learner=classifier`` labels as the export."""
    import json

    import numpy as np
    import pandas as pd

    from xlt.cotrain.classifier import kept_iteration
    from xlt.predict.config import PredictInference
    from xlt.models import CombinedClassifier, load_pretrained
    from xlt.predict import InputConfig, ModelRef, PredictConfig, PredictData, predict, prepare as prepare_predict
    from xlt.cotrain.finish import export_cotrain
    from xlt.cotrain.record import write_cotrain_record
    from xlt.record import FINISHED
    from xlt.storage import OutputSettings
    from xlt.tasks import load_task

    cfg = config(data_dir, killed.out, *SHARED)
    assert cfg.classifier.choose == "dev" and cfg.classifier.keep == "best-dev"
    task = load_task(cfg.task, cfg.data.data_dir)
    rows = {r["id"]: r for r in task.rows("test", task.langs, cfg.data.max_examples)}
    assert (killed.out / "learners" / "emb" / "probe-iteration1.pt").is_file()  # a probe learner keeps each fit's probe
    for i in (0, 1):  # a fine-tuned one each fit's model, without the optimizer's state
        kept = killed.out / "learners" / "lm" / "fits" / f"iteration{i}"
        assert (kept / "model.pt").is_file() and not (kept / "train_state.pt").exists()

    def exported_as_recorded(out: Path, history: list[dict]) -> tuple[str, ...]:
        """Export the run in ``out``; the classifier's learners, after checking that its export predicts the test
        probabilities recorded for the iteration it keeps."""
        at = kept_iteration(history, "best-dev", "en")
        recorded = json.loads((out / "predictions" / f"iteration{at}.json").read_text())
        assert set(recorded) == {"lm", "emb", "classifier"} and set(recorded["classifier"]) == {"test", "val"}
        cfg = config(data_dir, out, *SHARED)
        write_cotrain_record(cfg, task, history, FINISHED)  # the record of this history (one edited, below)
        export_cotrain(cfg)
        exported = load_pretrained(out / "export" / "classifier")
        chosen = members([h for h in history if h["learner"] == "classifier"][at])
        assert isinstance(exported, CombinedClassifier) == (len(chosen) == 2)
        test = recorded["classifier"]["test"]
        got = exported.predict([rows[i]["text"] for i in test["id"]], langs=test["lang"]).probabilities
        assert np.asarray(got) == pytest.approx(np.asarray(test["probabilities"]), abs=2e-3)
        return chosen

    at = kept_iteration(killed.state.history, "best-dev", "en")
    recorded = json.loads((killed.out / "predictions" / f"iteration{at}.json").read_text())
    dev = {learners: accuracy(recorded, learners, "val", "en") for learners in (("lm", "emb"), ("lm",), ("emb",))}
    chosen = exported_as_recorded(killed.out, killed.state.history)
    assert chosen == max(dev, key=dev.get)  # the first of equals: the declared product
    assert [h for h in killed.state.history if h["learner"] == "classifier"][at]["val/acc/en"] == \
        pytest.approx(max(dev.values()))
    # Whichever iteration dev kept, each is exported as it scored: a history whose dev puts the other first.
    other = [dict(h, **{"val/acc/en": 2.0}) if h["learner"] == "classifier" and h["iteration"] != at else h
             for h in killed.state.history]
    exported_as_recorded(killed.out, other)

    declared = tmp_path / "declared"
    shutil.copytree(killed.out, declared)
    history = run_cotraining(config(data_dir, declared, *SHARED, "classifier.choose=declared")).history
    assert [h for h in history if h["learner"] != "classifier"] == \
        [h for h in killed.state.history if h["learner"] != "classifier"]
    assert {h["combines"] for h in history if h["learner"] == "classifier"} == {"lm × emb"}
    assert exported_as_recorded(declared, history) == ("lm", "emb")
    assert "CombinedClassifier.from_pretrained(DIR).predict(texts, langs=langs)" in \
        (declared / "export" / "classifier" / "README.md").read_text()
    # Learners that selected by the job's classifier cannot have it changed under them.
    selected_by = tmp_path / "selected-by-the-classifier"
    shutil.copytree(killed.out, selected_by)
    saved = (selected_by / "config.yaml").read_text()
    assert saved.count("confidence: own") == 1
    (selected_by / "config.yaml").write_text(saved.replace("confidence: own", "confidence: classifier"))
    with pytest.raises(ConfigError, match="selected by the job's classifier"):
        run_cotraining(config(data_dir, selected_by, *SHARED, "selection.confidence=classifier",
                              "classifier.choose=declared"))

    for name, model in (("run", ModelRef(str(declared), learner="classifier")),
                        ("export", ModelRef(str(declared / "export" / "classifier")))):
        predict(prepare_predict(PredictConfig(
            model=model, input=InputConfig(task=cfg.task, split="test", max_rows=4),
            output=OutputSettings(str(tmp_path / name)), data=PredictData(data_dir=cfg.data.data_dir),
            inference=PredictInference(num_actors=0, batch_size=8, precision="fp32"))))
    by_run, by_export = (pd.read_parquet(tmp_path / name / "predictions").sort_values("id") for name in ("run", "export"))
    assert list(by_run["label"]) == list(by_export["label"]) and len(by_run) == 4 * len(task.langs)
    columns = [f"p_{label}" for label in task.labels]
    assert np.abs(by_run[columns].to_numpy() - by_export[columns].to_numpy()).max() < 1e-5


def accuracy(recorded: dict, learners: tuple[str, ...], split: str, lang: str) -> float:
    """The accuracy on ``lang``'s rows of ``split`` of the product of ``learners``' recorded probabilities, written out."""
    import numpy as np

    first = recorded[learners[0]][split]
    right = []
    for i, row_lang in enumerate(first["lang"]):
        if row_lang == lang:
            product = np.prod([recorded[name][split]["probabilities"][i] for name in learners], axis=0)
            right.append(first["labels"][int(np.argmax(product))] == first["label"][i])
    return sum(right) / len(right)


def test_a_learners_run_serves_fits_that_evaluate_and_hand_on_their_weights(ray_cluster, data_dir, tmp_path):
    cfg = config(data_dir, tmp_path)
    data = prepare(cfg)
    # Evaluated on the English rows it is fitted on, and the target languages' evaluation rows.
    evaluation = data.labeled + [r for r in data.evaluation_rows if r["lang"] != "en"]
    losses, fits = {}, {}
    output = OutputSettings(str(tmp_path), num_to_keep=1)  # as co-training's own output
    with learner_service("lm", cfg.lm, data.task, len(data.labeled), evaluation, "test", output) as service:
        for epochs in (1, 40):  # two fits served by one worker group
            learner = dataclasses.replace(cfg.lm, optim=dataclasses.replace(cfg.lm.optim, epochs=epochs, lr=1e-3))
            fits[epochs] = fit(service, "lm", learner, data.task, data.labeled, epochs, output, "test")
            losses[epochs] = fits[epochs].metrics["train/loss"]
    assert losses[40] < 0.8 * losses[1]  # each fit starts afresh: more epochs, lower loss
    metrics = fits[40].metrics
    assert metrics["train/rows"] == len(data.labeled)
    assert {"test/acc/en", "test/f1/de", "test/acc/avg_target", "test/transfer_gap"} <= metrics.keys()
    assert metrics["test/acc/en"] > 1 / 7  # above chance on the rows it was fitted on (7 topics)
    state = ray_cluster.get(fits[40].state)
    assert all(t.device.type == "cpu" for t in state.values()) and "head.weight" in state
    [kept] = (tmp_path / "learners" / "lm").glob("lm-iteration*")  # one checkpoint kept: the last fit's last epoch
    assert kept.name.startswith("lm-iteration40-epoch040-")
    assert set(read_predictions(kept)) == {"test"}  # the split evaluated, by its own name
    with pytest.raises(ValueError, match="no labelled rows"):
        fit(service, "lm", cfg.lm, data.task, [], 41, output, "test")


class Counting(TextEncoder):
    trainable, dim = False, 3

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed_texts(self, texts):
        self.seen.extend(texts)
        return torch.tensor([[len(t), 1.0, 0.0] for t in texts])


def test_cached_encoder_embeds_each_text_once():
    inner = Counting()
    cached = CachedEncoder(inner)
    first = cached.embed(["a", "bb", "a"])
    second = cached.embed(["bb", "ccc"])
    assert inner.seen == ["a", "bb", "ccc"]
    assert torch.equal(first, torch.tensor([[1.0, 1, 0], [2, 1, 0], [1, 1, 0]])) and second[1, 0] == 3
    with_weights = Counting()
    with_weights.scale = torch.nn.Parameter(torch.ones(1), requires_grad=False)
    with pytest.raises(ValueError, match="Counting has parameters"):
        CachedEncoder(with_weights)


def test_a_fraction_of_the_labels_is_a_stratified_draw_over_the_same_pool(data_dir, tmp_path):
    full = prepare(config(data_dir, tmp_path))
    part = prepare(config(data_dir, tmp_path, "data.labeled_fraction=0.25"))
    n = round(0.25 * len(full.labeled))
    drawn = full.task.examples("train", "en", n)
    assert [r["id"] for r in part.labeled] == [ex.id for ex in drawn] and len(drawn) == n
    assert sorted(Counter(r["label"] for r in part.labeled).values())[-1] < n / 2  # every topic, not a stride's
    assert part.pool_counts == full.pool_counts and part.pool_size > 0
    with pytest.raises(ConfigError, match=r"data\.labeled_fraction=0\.0 is not valid: expected a number in \(0, 1\]"):
        config(data_dir, tmp_path, "data.labeled_fraction=0.0")
