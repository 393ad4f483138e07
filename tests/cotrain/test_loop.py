"""The co-training loop on a 2-CPU Ray with tiny models: resume after a stop between iterations
gives the state of an uninterrupted run; a changed config is refused; the Learner and its cache."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from conftest import REPO
from xlt.config import ConfigError
from xlt.cotrain import LEARNERS, Learner, load_cotrain_config, run_cotraining
from xlt.models.encoder import CachedEncoder, TextEncoder
from xlt.tasks import TaskConfig

SMOKE = REPO / "configs" / "cotrain_smoke.yaml"


def config(data_dir: Path, out: Path, *overrides: str):
    return load_cotrain_config(REPO / "configs" / "cotrain_sib200.yaml",
                               [f"data.data_dir={data_dir}", f"output_dir={out}", "task.target_langs=[de, zh]",
                                *overrides], smoke=SMOKE)


def test_resume_after_a_stop_equals_an_uninterrupted_run(ray_cluster, data_dir, tmp_path):
    # One exchange round keeps the test short: the resumed run re-fits iteration 1 on the
    # pseudo-labels that iteration 0 saved.
    whole = run_cotraining(config(data_dir, tmp_path / "whole", "iterations=1"))
    assert whole.iteration == 2 and [h["iteration"] for h in whole.history] == [0, 0, 1, 1]

    first = run_cotraining(config(data_dir, tmp_path / "split", "iterations=1"), stop_after=0)
    assert first.iteration == 1 and len(first.history) == 2
    resumed = run_cotraining(config(data_dir, tmp_path / "split", "iterations=1"))
    assert resumed.received == whole.received and resumed.pool == whole.pool  # no pseudo-label lost or doubled
    for a, b in zip(resumed.history, whole.history):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == pytest.approx(b[key], nan_ok=True), key
    received = {name: [r["id"] for r in resumed.received[name]] for name in LEARNERS}
    assert all(len(ids) == len(set(ids)) > 0 for ids in received.values())
    # A finished run is not run again.
    assert run_cotraining(config(data_dir, tmp_path / "split", "iterations=1")).history == resumed.history

    with pytest.raises(ConfigError, match="differs in selection.threshold"):
        run_cotraining(config(data_dir, tmp_path / "split", "iterations=1", "selection.threshold=0.5"))


@pytest.mark.timeout(300)
def test_an_iteration_completes_with_every_cpu_reserved(ray_cluster, data_dir, tmp_path):
    # configs/cotrain_sib200.yaml reserves the whole 2-CPU machine (learners 1 + 0.5, inference
    # 0.5): pseudo-labelling must not need a Ray Data task beyond the actor pool.
    state = run_cotraining(config(data_dir, tmp_path, "iterations=1", "lm.num_cpus=1"), stop_after=0)
    assert state.iteration == 1 and all(state.received[name] for name in LEARNERS)


def test_learner_fits_evaluates_and_exports_its_state(data_dir):
    smoke = load_cotrain_config(REPO / "configs" / "cotrain_sib200.yaml", [f"data.data_dir={data_dir}"], smoke=SMOKE).lm
    rows = [{"id": str(i), "text": f"{'good good good' if i % 2 else 'bad bad bad'} {i}", "label": "ab"[i % 2],
             "lang": "en"} for i in range(16)]
    evaluation = {"text": [r["text"] for r in rows], "label": [r["label"] for r in rows],
                  "lang": ["en"] * 8 + ["de"] * 8}
    losses = {}
    for epochs in (1, 20):
        cfg = dataclasses.replace(smoke, optim=dataclasses.replace(smoke.optim, epochs=epochs, lr=1e-3, batch_size=4))
        learner = Learner("lm", cfg, TaskConfig(type="files", name="toy", path="unused/{lang}.tsv", labels=("a", "b"),
                                                target_langs=("de",)))
        losses[epochs] = learner.fit(rows)["train/loss"]
    assert losses[20] < 0.5 * losses[1]  # each fit starts afresh: more epochs, lower loss
    metrics = learner.evaluate(evaluation, "test")
    assert {"test/acc/en", "test/acc/de", "test/acc/avg_target"} <= metrics.keys()
    assert metrics["test/acc/avg_target"] == 1.0  # learnt the separable toy task
    state = learner.state()
    assert all(t.device.type == "cpu" for t in state.values()) and "head.weight" in state


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
