"""Ray Train end to end on 2 CPUs: checkpoints per epoch, resume at the checkpoint's step, DDP."""

from __future__ import annotations

import contextlib
from unittest import mock

import pytest
import torch

from conftest import REPO
from xlt.config import ConfigError
from xlt.engine import run_dir
from xlt.train import build_trainer, load_finetune_config, read_checkpoint, resume_config
from xlt.tasks import load_task
from xlt.train.data import eval_rows
from xlt.train.workload import finetune_training, read_predictions


def config(data_dir, tmp_path, *overrides):
    return load_finetune_config(REPO / "configs" / "finetune_sib200.yaml", [
        "model.source=tiny:bert", "model.max_length=32", f"data.data_dir={data_dir}", "task.target_langs=[de]",
        "data.augment={t_f: 1, t_p: 0, t_c: 1, languages: [fr]}", "data.max_examples=8", "optim.batch_size=2", "optim.epochs=1",
        "optim.eval_batch_size=16", "objectives=[{name: supervised_contrastive_alignment}]",
        "scaling.num_workers=2", "scaling.cpus_per_worker=1", f"output.dir={tmp_path / 'resume'}",
        "data.augment_actors=0", *overrides])  # the views in this process (tests/augment: the actor pool)


def test_resume_continues_at_the_checkpoint_step(ray_cluster, data_dir, tmp_path):
    trainer = build_trainer(config(data_dir, tmp_path))
    cfg = trainer.config
    steps = cfg.steps_per_epoch(2)
    assert steps == 2  # 8 rows, 4 per worker, batches of 2
    first = trainer.fit()
    assert first.metrics["train/global_step"] == steps and first.metrics["train/resumed_from_step"] == 0
    assert {"val/acc/en", "val/acc/de", "val/acc/avg_target", "val/transfer_gap", "test/acc/de", "test/f1/de",
            "val/f1/avg_target", "val/transfer_gap_f1",
            "train/loss", "train/loss/ce", "train/loss/supervised_contrastive_alignment"} <= set(first.metrics)
    saved = read_checkpoint(first.checkpoint.path)
    assert (saved.epoch, saved.global_step) == (1, steps)
    # The checkpoint keeps each evaluated row's prediction: its accuracy is the reported one.
    predictions = read_predictions(first.checkpoint.path)
    assert set(predictions) == {"val", "test"}
    for split, rows in predictions.items():
        expected = eval_rows(load_task(cfg.task, data_dir), {"val": "dev", "test": "test"}[split], 8)
        assert sorted(rows["id"]) == sorted(r["id"] for r in expected)
        gold = {r["id"]: r["label"] for r in expected}
        assert all(gold[i] == label for i, label in zip(rows["id"], rows["label"]))
        for lang in ("en", "de"):
            hits = [p == g for p, g, lg in zip(rows["predicted"], rows["label"], rows["lang"]) if lg == lang]
            assert first.metrics[f"{split}/acc/{lang}"] == pytest.approx(sum(hits) / len(hits))

    # What the loop does on resume: the restored model is the checkpoint's, the optimizer and
    # the schedule continue from its step.
    # The checkpoint leaves out the frozen word embeddings: they are the model source's.
    assert saved.from_source == ("encoder.backbone.embeddings.word_embeddings.weight",)
    assert not set(saved.from_source) & set(saved.model)
    restored = finetune_training(cfg, steps)
    source = restored.classifier.state_dict()[saved.from_source[0]].clone()
    assert restored.restore(saved) == steps
    for name, tensor in restored.classifier.state_dict().items():
        assert torch.equal(tensor, source if name in saved.from_source else saved.model[name]), name

    second = build_trainer(resume_config(run_dir(cfg), ["optim.epochs=2"])).fit()
    assert second.metrics["train/epoch"] == 2
    assert second.metrics["train/resumed_from_step"] == steps  # not 0: it did not start from scratch
    assert second.metrics["train/global_step"] == 2 * steps
    assert list(second.metrics_dataframe["train/epoch"]) == [1, 2]  # the run's history, one report each
    final = read_checkpoint(second.checkpoint.path)
    assert final.global_step == 2 * steps and final.scheduler["last_epoch"] == 2 * steps
    adam_steps = {float(s["step"]) for s in final.optimizer["state"].values()}
    assert adam_steps == {2.0 * steps}  # AdamW's moments were restored, not reset
    assert not torch.equal(final.model["head.weight"], saved.model["head.weight"])

    # Refused before the views are made: nothing is built for a run that cannot start.
    with pytest.raises(ConfigError, match="differs in optim.lr"), \
            mock.patch("xlt.train.data.build_augmented_dataset", side_effect=AssertionError("views made")):
        build_trainer(config(data_dir, tmp_path, "optim.epochs=2", "optim.lr=1e-3"))


def test_an_in_process_run_on_rows_it_holds_steps_exactly_as_on_ray_datasets(ray_cluster, data_dir, tmp_path):
    """An in-process run reads rows it holds (``xlt.engine.rows``), where it read Ray datasets before: the same
    batches, so the same loss at every step (200 blocks and Ray's local shuffle, over two epochs' seeds)."""
    import ray.data

    import xlt.engine.loop as loop
    import xlt.engine.runs as runs
    import xlt.train.trainer as trainer

    def step_losses(name, *patches):
        losses, step = [], loop.accumulation_step
        with mock.patch.object(loop, "accumulation_step",
                               side_effect=lambda *a, **k: losses.append(step(*a, **k)["loss"]) or {"loss": losses[-1]}):
            with contextlib.ExitStack() as stack:
                for patch in patches:
                    stack.enter_context(patch)
                build_trainer(load_finetune_config(REPO / "configs" / "finetune_sib200.yaml", [
                    "model.source=tiny:bert", "model.max_length=32", f"data.data_dir={data_dir}", "task.target_langs=[de]",
                    "data.max_examples=40", "optim.batch_size=8", "optim.shuffle_buffer=16", "optim.epochs=2",
                    "evals=[]", "scaling.num_workers=0", f"output.dir={tmp_path / name}"])).fit()
        return losses

    held = step_losses("held")
    on_ray = step_losses("ray", mock.patch.object(trainer, "run_rows", lambda items, here: ray.data.from_items(list(items))),
                         mock.patch.object(runs, "held_here", lambda datasets: datasets))
    assert len(held) == 10 and held == on_ray  # 40 rows, batches of 8, two epochs
