"""Gradient accumulation (mean of micro-batch gradients, one DDP sync per step), epochs, Tatoeba metrics."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch
from torch import nn

from xlt.pretrain.batches import PretrainBatcher, keep_row, tokenization_of
from xlt.engine import accumulation_step, grouped, run_epoch
from xlt.pretrain.workload import PRETRAIN, build_pretraining

from .conftest import pair
from .helpers import annotated, tiny_config, with_rows


def micro_batches(cfg, training, k):
    rows = [r for r in annotated(cfg) if keep_row(r)]
    batcher = PretrainBatcher(tokenization_of(cfg.model), training.module.requires, cfg.batch.features,
                              cfg.batch.mlm_input)
    return [batcher(rows[i % len(rows):][:2], generator=torch.Generator().manual_seed(i)) for i in range(k)]


def step(training, batches, **kwargs):
    """One optimizer step over ``batches`` with pretraining's loss (the model's own total and parts)."""
    return accumulation_step(training, lambda model, batch: PRETRAIN.loss(training, model, batch), batches, **kwargs)


def gradients(module):
    return {name: p.grad.clone() for name, p in module.named_parameters() if p.grad is not None}


def test_accumulated_gradient_is_the_mean_over_micro_batches():
    cfg = with_rows(tiny_config("veco2"), 6)
    training = build_pretraining(cfg, steps_per_epoch=1)
    batches = micro_batches(cfg, training, 3)
    before = copy.deepcopy(training.module.state_dict())
    seen = {}
    training.optimizer.register_step_pre_hook(lambda *_: seen.update(gradients(training.module)))
    torch.manual_seed(1)  # the same dropout masks for both computations
    losses = step(training, batches, max_grad_norm=0.0)
    assert training.global_step == 1 and training.scheduler.last_epoch == 1
    training.module.load_state_dict(before)
    training.module.zero_grad(set_to_none=True)
    torch.manual_seed(1)
    parts = [training.module(b) for b in batches]
    (sum(total for total, _ in parts) / 3).backward()
    want = gradients(training.module)
    assert seen.keys() == want.keys() and len(want) > 10
    for name in want:
        assert torch.allclose(seen[name], want[name], atol=1e-6), name
    assert losses["loss"] == pytest.approx(float(sum(t.detach() for t, _ in parts)) / 3, rel=1e-5)
    assert losses["mlm"] == pytest.approx(float(sum(p["mlm"].detach() for _, p in parts)) / 3, rel=1e-5)


class Syncing(nn.Module):
    """A DDP stand-in that records when gradients would be all-reduced."""

    def __init__(self, module):
        super().__init__()
        self.module, self.synced, self.skipped = module, 0, 0
        self.syncing = True

    @contextlib.contextmanager
    def no_sync(self):
        self.syncing = False
        yield
        self.syncing = True

    def forward(self, batch):
        if self.syncing:
            self.synced += 1
        else:
            self.skipped += 1
        return self.module(batch)


def test_ddp_syncs_on_the_last_micro_batch_only():
    cfg = with_rows(tiny_config("ml-ctl"), 4)
    training = build_pretraining(cfg, steps_per_epoch=2, wrap=Syncing)
    step(training, micro_batches(cfg, training, 4))
    assert (training.model.synced, training.model.skipped) == (1, 3)
    step(training, micro_batches(cfg, training, 1))
    assert (training.model.synced, training.model.skipped) == (2, 3)


def test_an_epoch_groups_micro_batches_into_steps():
    assert [len(g) for g in grouped(range(5), 2)] == [2, 2, 1]
    cfg = with_rows(tiny_config("veco2", grad_accum_steps=2, batch_size=1), 5)
    assert cfg.steps_per_epoch(1) == 3  # 5 micro-batches of one pair, 2 per step
    training = build_pretraining(cfg, cfg.steps_per_epoch(1))
    rows = annotated(cfg, [pair(f"The cat {i}.", f"Die Katze {i}.", id=str(i)) for i in range(5)])
    stats, _ = run_epoch(training, PRETRAIN, [[r] for r in rows], cfg, epoch=0)
    assert (stats.steps, stats.examples, training.global_step) == (3, 5, 3)
    assert set(stats.sums) == {"loss", "parallel_info_nce", "token_alignment", "mlm"}
