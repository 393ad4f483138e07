"""The step without Ray: one encoder pass, CE on originals + weighted objectives, loss goes down."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xlt.losses import ObjectiveConfig
from xlt.train.batches import batches_of, flatten_batch
from xlt.train.workload import finetune_training, compute_losses, supervised_ce

from benchmarks.loading import load_benchmark

train_step = load_benchmark("harness").train_step
from xlt.engine import write_state
from xlt.train.checkpoint import load_classifier, read_checkpoint

from .helpers import LABELS, rows_with_views, tiny_config

SCL = ObjectiveConfig("supervised_contrastive_alignment", 1.0, {"temperature": 0.5})


def batch():
    return flatten_batch(batches_of(rows_with_views(), 4)[0], {label: i for i, label in enumerate(LABELS)})


def test_loss_decreases_on_a_repeated_batch():
    torch.manual_seed(0)
    steps = 30
    training = finetune_training(tiny_config((SCL,), lr=5e-3), steps_per_epoch=steps)
    b = batch()
    losses = [train_step(training, b) for _ in range(steps)]
    first = sum(l["loss"] for l in losses[:3]) / 3
    last = sum(l["loss"] for l in losses[-3:]) / 3
    assert last < 0.5 * first, [round(l["loss"], 3) for l in losses]
    assert last < first and losses[-1]["ce"] < losses[0]["ce"]
    assert set(losses[0]) == {"loss", "ce", "supervised_contrastive_alignment"}
    assert training.global_step == steps and training.scheduler.last_epoch == steps


def test_total_is_ce_plus_weighted_objectives_from_one_pass():
    weight = 3.0
    training = finetune_training(tiny_config((ObjectiveConfig("supervised_contrastive_alignment", weight),
                                           ObjectiveConfig("multiview_alignment", 0.5, {"similarity": "kl"}))),
                              steps_per_epoch=1)
    calls = []
    training.classifier.encoder.register_forward_hook(lambda m, i, o: calls.append(o.shape))
    training.model.eval()  # no dropout: the parts are deterministic
    total, parts = compute_losses(training.model, training.objectives, batch())
    assert calls == [(8, 32)]  # all N = 8 texts (originals and views) in one encoder call
    expected = parts["ce"] + weight * parts["supervised_contrastive_alignment"] + 0.5 * parts["multiview_alignment"]
    assert torch.allclose(total, expected)


def test_encoder_pass_rows_splits_the_pass_and_keeps_the_losses():
    objectives = (SCL, ObjectiveConfig("multiview_alignment", 0.5, {"similarity": "kl"}))
    torch.manual_seed(0)
    one = finetune_training(tiny_config(objectives), steps_per_epoch=1)
    torch.manual_seed(0)
    passes = finetune_training(tiny_config(objectives, encoder_pass_rows=3), steps_per_epoch=1)
    calls = []
    passes.classifier.encoder.register_forward_hook(lambda m, i, o: calls.append(o.shape[0]))
    for training in (one, passes):
        training.model.eval()  # no dropout: the parts are deterministic
    (total, parts), (total_p, parts_p) = (compute_losses(t.model, t.objectives, batch()) for t in (one, passes))
    assert calls == [3, 3, 2]  # the N = 8 texts in passes of at most 3
    assert parts.keys() == parts_p.keys()
    assert all(torch.allclose(parts[k], parts_p[k], atol=1e-5) for k in parts)
    assert torch.allclose(total, total_p, atol=1e-5)


def test_ce_only_on_labelled_originals():
    logits = torch.tensor([[2.0, 0.0], [0.0, 9.0], [1.0, 1.0]])
    labels = torch.tensor([0, 0, -1])
    is_anchor = torch.tensor([True, False, True])  # row 1 is a view: no CE; row 2 unlabelled
    assert torch.allclose(supervised_ce(logits, labels, is_anchor),
                          torch.nn.functional.cross_entropy(logits[:1], labels[:1]))
    logits.requires_grad_(True)
    none = supervised_ce(logits, torch.full((3,), -1), is_anchor)  # nothing labelled: 0, not NaN
    none.backward()
    assert none.item() == 0.0 and torch.equal(logits.grad, torch.zeros_like(logits))


@pytest.mark.parametrize("pass_rows", [0, 3])
def test_ce_and_its_gradient_do_not_depend_on_the_views_in_the_batch(pass_rows):
    """Without dropout, a batch with views and the same batch without them give CE the same value and the
    same gradient, in one pass or in length-sorted passes: views reach CE only through the draws
    (dropout masks, batch order), never through its arithmetic (issue 52's PAWS-X control)."""
    torch.manual_seed(0)
    training = finetune_training(tiny_config(encoder_pass_rows=pass_rows), steps_per_epoch=1)
    training.model.eval()
    label_index = {label: i for i, label in enumerate(LABELS)}
    plain_rows = [{k: v for k, v in r.items() if not k.startswith("view")} for r in rows_with_views()]
    results = []
    for rows in (rows_with_views(), plain_rows):
        training.model.zero_grad(set_to_none=True)
        _, parts = compute_losses(training.model, None, flatten_batch(batches_of(rows, 4)[0], label_index))
        parts["ce"].backward()
        results.append((parts["ce"].detach(), [p.grad.clone() for p in training.module.parameters()
                                               if p.grad is not None]))
    (ce_views, grads_views), (ce_plain, grads_plain) = results
    assert torch.allclose(ce_views, ce_plain, atol=1e-6)
    assert len(grads_views) == len(grads_plain) > 0
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(grads_views, grads_plain))


def test_frozen_word_embeddings_are_not_trained():
    training = finetune_training(tiny_config(freeze_word_embeddings=True), steps_per_epoch=2)
    embeddings = training.classifier.encoder.backbone.get_input_embeddings().weight
    before = embeddings.detach().clone()
    train_step(training, batch())
    assert torch.equal(before, embeddings) and not embeddings.requires_grad
    assert all(p is not embeddings for group in training.optimizer.param_groups for p in group["params"])


def test_a_bf16_step_is_a_naive_autocast_step_entered_per_step():
    """``optim.precision: bf16``: each step's forward pass and loss under a fresh bf16 autocast,
    backward, clipping and AdamW in fp32, as a loop written out by hand; not the fp32 steps. The
    reference enters autocast anew each step: one context held across steps would keep computing
    with the first step's bf16 copies of the weights."""
    steps, b = 3, batch()

    def trained(precision: str, naive: bool = False):
        torch.manual_seed(0)
        training = finetune_training(tiny_config((SCL,), lr=5e-3, precision=precision), steps_per_epoch=steps)
        for step in range(steps):
            torch.manual_seed(100 + step)  # the same dropout masks in every run
            if not naive:
                train_step(training, b)
                continue
            training.model.train()
            training.optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                total, _ = compute_losses(training.model, training.objectives, b)
            total.backward()
            torch.nn.utils.clip_grad_norm_([p for p in training.module.parameters() if p.requires_grad], 1.0)
            training.optimizer.step()
            training.scheduler.step()
        return training

    engine, naive, fp32 = trained("bf16"), trained("fp32", naive=True), trained("fp32")
    assert engine.precision == "bf16" and fp32.precision == "fp32"
    weights = [t.module.state_dict() for t in (engine, naive, fp32)]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert all(weights[0][k].dtype == torch.float32 for k in weights[0] if weights[0][k].is_floating_point())
    assert not all(torch.equal(weights[0][k], weights[2][k]) for k in weights[0])


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_half_precision_trains_tiny_bert_with_the_loss_falling_as_under_fp32(precision):
    """The repeated-batch run of ``test_loss_decreases_on_a_repeated_batch`` under autocast: the
    loss falls as far as fp32's (within a tenth of the first loss) and the weights stay fp32."""
    steps, b = 30, batch()

    def losses(precision: str) -> tuple[list[float], object]:
        torch.manual_seed(0)
        training = finetune_training(tiny_config((SCL,), lr=5e-3, precision=precision), steps_per_epoch=steps)
        return [train_step(training, b)["loss"] for _ in range(steps)], training

    (half, training), (full, _) = losses(precision), losses("fp32")
    assert training.precision == precision and (training.scaler is not None) == (precision == "fp16")
    first, last = sum(half[:3]) / 3, sum(half[-3:]) / 3
    assert last < 0.5 * first, [round(x, 3) for x in half]
    assert abs(last - sum(full[-3:]) / 3) < 0.1 * first, ([round(x, 3) for x in half], [round(x, 3) for x in full])
    assert all(p.dtype == torch.float32 for p in training.module.parameters())


def test_an_fp16_step_is_a_naive_scaled_autocast_step():
    """``optim.precision: fp16``: forward pass and loss under float16 autocast, the loss scaled
    before backward, the gradients unscaled before clipping, the step and the scale's update by a
    ``GradScaler``, as a loop written out by hand."""
    steps, b = 3, batch()

    def trained(naive: bool):
        torch.manual_seed(0)
        training = finetune_training(tiny_config((SCL,), lr=5e-3, precision="fp16"), steps_per_epoch=steps)
        scaler = torch.amp.GradScaler("cpu")
        for step in range(steps):
            torch.manual_seed(100 + step)
            if not naive:
                train_step(training, b)
                continue
            training.model.train()
            training.optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.float16):
                total, _ = compute_losses(training.model, training.objectives, b)
            scaler.scale(total).backward()
            scaler.unscale_(training.optimizer)
            torch.nn.utils.clip_grad_norm_([p for p in training.module.parameters() if p.requires_grad], 1.0)
            scaler.step(training.optimizer)
            scaler.update()
            training.scheduler.step()
        return training, scaler

    (engine, _), (naive, scaler) = trained(False), trained(True)
    assert engine.scaler.state_dict() == scaler.state_dict()
    weights = [t.module.state_dict() for t in (engine, naive)]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_the_fp16_scaler_state_survives_a_checkpoint_and_resume(tmp_path):
    """A resumed fp16 run continues its scale and growth tracker, and so takes the step the
    uninterrupted run takes; a fresh scaler would start at 65536 with a tracker of 0."""
    cfg = tiny_config((SCL,), lr=5e-3, precision="fp16", epochs=2)
    training = finetune_training(cfg, steps_per_epoch=3)
    training.scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)  # it moves within 3 steps
    for _ in range(3):
        train_step(training, batch())
    training.epoch = 1
    write_state(tmp_path, training, cfg)
    saved = training.scaler.state_dict()
    assert saved["scale"] != 2.0 ** 10 or saved["_growth_tracker"] != 0

    state = read_checkpoint(tmp_path)
    assert state.scaler == saved
    fresh = finetune_training(cfg, steps_per_epoch=3)
    assert fresh.scaler.state_dict() != saved
    fresh.restore(state)
    assert fresh.scaler.state_dict() == saved
    torch.manual_seed(1)
    train_step(training, batch())
    torch.manual_seed(1)
    train_step(fresh, batch())
    assert fresh.scaler.state_dict() == training.scaler.state_dict()
    assert torch.equal(training.classifier.head.weight, fresh.classifier.head.weight)


def test_checkpoint_round_trip_restores_weights_optimizer_and_schedule(tmp_path):
    cfg = tiny_config((SCL,))
    training = finetune_training(cfg, steps_per_epoch=3)
    for _ in range(2):
        train_step(training, batch())
    training.epoch = 1
    write_state(tmp_path, training, cfg)

    state = read_checkpoint(tmp_path)
    assert (state.epoch, state.global_step, state.config) == (1, 2, cfg)
    fresh = finetune_training(cfg, steps_per_epoch=3)
    fresh.classifier.head.weight.data.add_(1.0)  # make sure restoring overwrites
    assert fresh.restore(state) == 2
    for (name, a), b in zip(training.classifier.state_dict().items(), fresh.classifier.state_dict().values()):
        assert torch.equal(a, b), name
    assert fresh.scheduler.get_last_lr() == training.scheduler.get_last_lr()
    # The next step is the same step in both: optimizer moments and schedule came back too.
    torch.manual_seed(1)
    a = train_step(training, batch())
    torch.manual_seed(1)
    b = train_step(fresh, batch())
    assert a == pytest.approx(b)
    assert torch.equal(training.classifier.head.weight, fresh.classifier.head.weight)


def test_load_classifier_gives_the_checkpointed_model(tmp_path):
    cfg = tiny_config()
    training = finetune_training(cfg, steps_per_epoch=1)
    train_step(training, batch())
    write_state(tmp_path, training, cfg)
    texts = [r["text"] for r in rows_with_views()]
    expected = training.classifier.predict(texts)
    loaded = load_classifier(tmp_path)
    assert loaded.labels == list(LABELS) and not loaded.training
    assert np.allclose(loaded.predict(texts).probabilities, expected.probabilities, atol=1e-6)


def test_a_projection_head_trains_with_the_step_resumes_from_train_state_and_stays_out_of_the_classifier(tmp_path):
    """SCL on g(Φ) (``xlt.losses.projection``): g is in the step module and the optimizer, its
    weights move; the checkpoint's model.pt (and so load_classifier and exports) holds the classifier
    alone, train_state.pt holds g, and a resumed run takes the step the uninterrupted one takes."""
    scl = ObjectiveConfig("supervised_contrastive_alignment", 1.0, {"temperature": 0.5, "projection": {"dims": [16, 8]}})
    cfg = tiny_config((scl,), lr=5e-3, epochs=2)
    torch.manual_seed(0)
    training = finetune_training(cfg, steps_per_epoch=3)
    g = training.loss_modules["supervised_contrastive_alignment"]
    before = [p.detach().clone() for p in g.parameters()]
    training.model.eval()  # no dropout: the loss on g(Φ) is what the objective gives on the projected features
    features, _, projected = training.model(batch().texts)
    assert torch.allclose(projected["projected/supervised_contrastive_alignment"], g(features))
    for _ in range(3):
        train_step(training, batch())
    assert all(not torch.equal(a, b) for a, b in zip(before, g.parameters()))
    training.epoch = 1
    write_state(tmp_path, training, cfg)
    assert not any("projection" in name or name.startswith("projections") for name in torch.load(tmp_path / "model.pt"))
    assert set(load_classifier(tmp_path).state_dict()) == set(training.classifier.state_dict())

    fresh = finetune_training(cfg, steps_per_epoch=3)
    fresh.restore(read_checkpoint(tmp_path))
    assert all(torch.equal(a, b) for a, b in zip(g.parameters(), fresh.loss_modules.parameters()))
    torch.manual_seed(1)
    train_step(training, batch())
    torch.manual_seed(1)
    train_step(fresh, batch())
    assert torch.equal(training.classifier.head.weight, fresh.classifier.head.weight)
    assert all(torch.equal(a, b) for a, b in zip(g.parameters(), fresh.loss_modules.parameters()))


def test_an_objective_with_a_start_epoch_joins_ce_from_that_epoch():
    """``start_epoch: 1``: the first epoch's steps are CE's alone (the term logged as 0), the next add it."""
    late = ObjectiveConfig("supervised_contrastive_alignment", 1.0, {"temperature": 0.5}, start_epoch=1)
    training = finetune_training(tiny_config((late,)), steps_per_epoch=1)
    training.model.eval()
    total, parts = compute_losses(training.model, training.objectives, batch(), epoch=0)
    assert float(parts["supervised_contrastive_alignment"]) == 0.0 and torch.equal(total, parts["ce"])
    total, parts = compute_losses(training.model, training.objectives, batch(), epoch=1)
    assert float(parts["supervised_contrastive_alignment"]) > 0
    assert torch.allclose(total, parts["ce"] + parts["supervised_contrastive_alignment"])


def naive_adamw(module, lr: float, head_lr: float) -> torch.optim.AdamW:
    """AdamW over groups written out by hand: by parameter name, weight decay 0.01 on matrices only."""
    named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if n.startswith("head.") == head and (p.ndim >= 2) == decayed],
               "weight_decay": 0.01 if decayed else 0.0, "lr": head_lr if head else lr}
              for head in (False, True) for decayed in (True, False)]
    return torch.optim.AdamW(groups, lr=lr)


def test_head_lr_trains_the_head_at_its_own_rate_as_naive_adamw_groups_do():
    """``optim.head_lr``: the head's weights step at that rate and the encoder's at ``lr``, both on the one linear
    schedule, as AdamW over groups written out by hand (by parameter name, decay on matrices only) does."""
    steps, b = 2, batch()

    def trained(naive: bool):
        torch.manual_seed(0)
        training = finetune_training(tiny_config(lr=1e-3, head_lr=5e-2), steps_per_epoch=steps)
        if naive:
            training.optimizer = naive_adamw(training.module, lr=1e-3, head_lr=5e-2)
            training.scheduler = torch.optim.lr_scheduler.LambdaLR(training.optimizer, lambda s: 1 - s / steps)
        for step in range(steps):
            torch.manual_seed(100 + step)
            train_step(training, b)
        return training

    ours, naive = trained(False), trained(True)
    assert [g["lr"] for g in ours.optimizer.param_groups] == pytest.approx([0.0] * 4)  # the schedule's end
    for (name, a), (_, r) in zip(ours.module.named_parameters(), naive.module.named_parameters()):
        assert torch.allclose(a, r, atol=1e-6), name


def test_probe_epochs_step_the_head_alone_then_every_weight_as_naive_per_group_schedules_do():
    """``optim.probe_epochs``: LP-FT. In the probe's epochs only the head moves (the encoder's learning rate is 0);
    then the encoder trains on a linear schedule of its own over the epochs left, as AdamW over groups written out by
    hand with a hand-written factor per group does, and the weights match step for step."""
    steps, epochs, b = 2, 3, batch()

    def linear(start):  # the encoder waits ``start`` steps, then decays from 1 to 0 at the end
        return lambda s: 0.0 if s < start else (steps * epochs - s) / (steps * epochs - start)

    def trained(naive: bool, upto: int):
        torch.manual_seed(0)
        training = finetune_training(tiny_config(lr=1e-3, head_lr=5e-2, epochs=epochs, probe_epochs=1),
                                     steps_per_epoch=steps)
        if naive:
            training.optimizer = naive_adamw(training.module, lr=1e-3, head_lr=5e-2)
            training.scheduler = torch.optim.lr_scheduler.LambdaLR(
                training.optimizer, [linear(steps), linear(steps), linear(0), linear(0)])
        for step in range(upto):
            torch.manual_seed(100 + step)
            train_step(training, b)
        return training

    start = {n: p.detach().clone() for n, p in trained(False, 0).module.named_parameters()}
    probed = dict(trained(False, steps).module.named_parameters())
    moved = {n for n, p in probed.items() if not torch.equal(p, start[n])}
    assert moved == {"head.weight", "head.bias"}
    ours, naive = trained(False, steps * epochs), trained(True, steps * epochs)
    encoder_moved = [n for n, p in ours.module.named_parameters() if n.startswith("encoder.") and p.requires_grad
                     and not torch.equal(p, start[n])]
    assert encoder_moved
    for (name, a), (_, r) in zip(ours.module.named_parameters(), naive.module.named_parameters()):
        assert torch.allclose(a, r, atol=1e-6), name


def test_wise_alpha_mixes_the_probe_into_the_fine_tuned_weights_as_written_by_hand(tmp_path):
    """``optim.wise_alpha``: WiSE-FT. After the last epoch every trained weight is (1 − α)·θ₀ + α·θ₁, θ₀ the weights as
    the probe's epochs ended and θ₁ those the same run ends with at α = 1, computed here weight by weight; frozen
    weights stay. The probe's weights travel with a checkpoint: a run resumed after the probe ends at the same mix."""
    from xlt.engine.training import end_epoch
    from xlt.train.workload import FINETUNE

    steps, epochs, alpha, b = 2, 3, 0.3, batch()

    def config(wise: float):
        return tiny_config(lr=1e-3, head_lr=5e-2, epochs=epochs, probe_epochs=1, wise_alpha=wise)

    def trained(wise: float, upto_epoch: int = epochs, training=None):
        if training is None:
            torch.manual_seed(0)
            training = finetune_training(config(wise), steps_per_epoch=steps)
        for epoch in range(training.epoch, upto_epoch):
            for step in range(steps):
                torch.manual_seed(100 + epoch * steps + step)
                train_step(training, b)
            end_epoch(training)
            FINETUNE.epoch_ended(config(wise), training)  # WiSE-FT, as every worker does after each epoch
        return training

    theta0 = {n: p.detach().clone() for n, p in trained(1.0, upto_epoch=1).module.named_parameters()}
    theta1 = dict(trained(1.0).module.named_parameters())
    mixed = trained(alpha)
    assert mixed.epoch == epochs
    for name, p in mixed.module.named_parameters():
        expected = (1 - alpha) * theta0[name] + alpha * theta1[name] if p.requires_grad else theta1[name]
        assert torch.allclose(p, expected, atol=1e-6), name
    assert not torch.allclose(mixed.module.head.weight, theta1["head.weight"])

    after_probe = trained(alpha, upto_epoch=1)
    write_state(tmp_path, after_probe, config(alpha))
    torch.manual_seed(0)
    resumed = finetune_training(config(alpha), steps_per_epoch=steps)
    resumed.restore(read_checkpoint(tmp_path))
    assert resumed.anchor.keys() == after_probe.anchor.keys()
    trained(alpha, training=resumed)
    for (name, a), (_, r) in zip(resumed.module.named_parameters(), mixed.module.named_parameters()):
        assert torch.equal(a, r), name


def test_wise_alpha_needs_the_probe_epochs():
    from xlt.train.config import FinetuneOptim

    with pytest.raises(ValueError, match="optim.wise_alpha=0.5 .*optim.probe_epochs or optim.head_init"):
        FinetuneOptim(wise_alpha=0.5)
    with pytest.raises(ValueError, match="optim.wise_alpha=0 .*in \\(0, 1\\]"):
        FinetuneOptim(wise_alpha=0, probe_epochs=1)


def test_linear_factor_is_transformers_linear_schedule_shifted_to_its_start():
    from transformers import get_linear_schedule_with_warmup

    from xlt.engine.training import linear_factor

    for warmup, total in ((0, 10), (3, 10), (1, 1)):
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
        reference = get_linear_schedule_with_warmup(optimizer, warmup, total).lr_lambdas[0]
        assert [linear_factor(s, 0, warmup, total) for s in range(total + 2)] == \
            [reference(s) for s in range(total + 2)]
        assert [linear_factor(s + 4, 4, warmup, total + 4) for s in range(-4, total + 2)] == \
            [0.0] * 4 + [reference(s) for s in range(total + 2)]


def test_probe_epochs_leave_epochs_to_fine_tune():
    from xlt.train.config import FinetuneOptim

    with pytest.raises(ValueError, match="optim.probe_epochs"):
        FinetuneOptim(epochs=2, probe_epochs=2)


def test_the_engine_knows_no_fine_tuning_recipe():
    """The head's rate, linear probing and WiSE-FT are fine-tuning's settings, not the engine's, whose runs
    (pretraining) have no head."""
    import dataclasses

    from xlt.engine.settings import OptimSettings
    from xlt.train.config import FinetuneOptim

    recipes = {"head_lr", "probe_epochs", "head_init", "probe_c", "wise_alpha"}
    assert not recipes & {f.name for f in dataclasses.fields(OptimSettings)}
    assert recipes <= {f.name for f in dataclasses.fields(FinetuneOptim)}


class _Rows:
    """Rows behind Ray Data's ``iter_batches``, as a fit's ``data`` (no Ray)."""

    def __init__(self, rows):
        self.rows = rows

    def iter_batches(self, batch_size, batch_format="numpy", **_):
        return batches_of(self.rows, batch_size)


@pytest.mark.parametrize("labels", [3, 2])
def test_fit_probe_gives_the_head_scikit_learns_probabilities(labels):
    """``optim.head_init: probe``'s head, as a softmax over the head's logits, gives scikit-learn's logistic
    regression's probabilities (multinomial; a binary fit's sigmoid); a label the rows lack keeps its row."""
    from sklearn.linear_model import LogisticRegression

    from xlt.train.probe_head import fit_head, set_head

    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 5))
    y = rng.integers(0, labels, size=40) * 2  # labels 0, 2 (and 4): 1 and 3 absent
    head = torch.nn.Linear(5, 5)
    before = head.weight.detach().clone()
    set_head(head, *fit_head(x, y, c=0.5))
    reference = LogisticRegression(C=0.5, max_iter=1000).fit(x, y).predict_proba(x)
    present = sorted(set(y.tolist()))
    logits = head(torch.as_tensor(x, dtype=torch.float32)).detach()[:, present]
    assert np.allclose(torch.softmax(logits, dim=1).numpy(), reference, atol=1e-5)
    assert torch.equal(head.weight[1], before[1]) and torch.equal(head.weight[3], before[3])
    with pytest.raises(ValueError, match="at least two labels"):
        fit_head(x, np.zeros(40, dtype=int), c=1.0)


def test_head_init_probe_is_a_logistic_regression_on_the_frozen_features_of_the_labelled_originals():
    """The workload's ``begin``: the head a logistic regression fitted by hand on the encoder's features (one text
    at a time, inference mode) of the labelled originals, views left out; rows in another order give the same
    head, bit for bit; a run's WiSE-FT θ₀ is then the pretrained encoder and that head."""
    from sklearn.linear_model import LogisticRegression

    from xlt.train.workload import FINETUNE

    rows = rows_with_views() + [{"text": "the match was a draw", "label": "sports", "lang": "en"},
                                {"text": "a night train to vienna", "label": "travel", "lang": "en"}]
    cfg = tiny_config(head_init="probe", probe_c=2.0, wise_alpha=0.5, eval_batch_size=4)

    def begun(order):
        torch.manual_seed(0)
        training = finetune_training(cfg, steps_per_epoch=1)
        FINETUNE.begin(cfg, training, _Rows([rows[i] for i in order]))  # the probe, and WiSE-FT's θ₀ with it
        return training

    training = begun(range(len(rows)))
    encoder = training.classifier.encoder.eval()
    with torch.no_grad():
        x = np.concatenate([encoder.embed([r["text"]]).numpy() for r in rows])
    y = np.array([LABELS.index(r["label"]) for r in rows])
    reference = LogisticRegression(C=2.0, max_iter=1000).fit(x, y).predict_proba(x)
    with torch.no_grad():
        ours = torch.softmax(training.classifier.head(torch.as_tensor(x)), dim=1).numpy()
    assert np.allclose(ours, reference, atol=1e-4)
    reversed_ = begun(reversed(range(len(rows))))
    assert torch.equal(reversed_.classifier.head.weight, training.classifier.head.weight)
    assert torch.equal(training.anchor["head.weight"], training.classifier.head.weight)
    torch.manual_seed(0)
    pretrained = finetune_training(cfg, steps_per_epoch=1).module.state_dict()
    assert all(torch.equal(v, pretrained[k]) for k, v in training.anchor.items() if k.startswith("encoder."))


def test_head_init_settings():
    from xlt.train.config import FinetuneOptim

    with pytest.raises(ValueError, match="optim.head_init='linear'"):
        FinetuneOptim(head_init="linear")
    with pytest.raises(ValueError, match="optim.probe_c=0"):
        FinetuneOptim(probe_c=0)
    assert FinetuneOptim(head_init="probe", wise_alpha=0.5).wise_alpha == 0.5  # the probe is θ₀


@pytest.mark.parametrize("objectives", [(), (SCL,)], ids=["ce", "ce+scl"])
def test_an_epoch_prepared_ahead_of_its_steps_trains_as_one_prepared_in_them(objectives, monkeypatch):
    """The batcher tokenises in a thread of its own, ahead of the step (``xlt.engine.ahead``); dropout on. The same
    weights and losses as the batcher run in the step's thread, and as texts tokenised by the step itself."""
    import threading

    from xlt.engine import run_epoch
    from xlt.engine.loop import input_depth
    from xlt.train.workload import FINETUNE, Finetuning

    rows = batches_of(rows_with_views() * 3, 2)

    def epoch(depth: int, prepared: bool):
        cfg = tiny_config(objectives, batch_size=2, input_ahead=depth)
        monkeypatch.setattr(Finetuning, "prepares_input", lambda self, cfg: prepared)
        assert input_depth(FINETUNE, cfg) == (depth if prepared else 0)
        training = finetune_training(cfg, steps_per_epoch=len(rows))
        threads, batcher = set(), FINETUNE.batcher

        def recording(*args):
            inner = batcher(*args)
            return lambda batch: (threads.add(threading.current_thread().name), inner(batch))[1]
        monkeypatch.setattr(FINETUNE, "batcher", recording)
        torch.manual_seed(7)  # dropout
        stats, _ = run_epoch(training, FINETUNE, rows, cfg, epoch=0)
        monkeypatch.undo()
        return stats, {k: v.detach().clone() for k, v in training.module.state_dict().items()}, threads

    ahead, ahead_weights, ahead_threads = epoch(2, True)
    here, here_weights, here_threads = epoch(2, False)
    tokenised_here, tokenised_here_weights, _ = epoch(0, True)
    assert ahead_threads == {"xlt-input-ahead"} and here_threads == {threading.current_thread().name}
    assert ahead.steps == here.steps == len(rows)
    for stats, weights in ((here, here_weights), (tokenised_here, tokenised_here_weights)):
        assert stats.sums == ahead.sums
        assert all(torch.equal(weights[k], ahead_weights[k]) for k in ahead_weights)


def test_input_is_prepared_ahead_unless_the_step_tokenises_its_own_passes():
    from xlt.engine.loop import input_depth
    from xlt.train.workload import FINETUNE

    assert input_depth(FINETUNE, tiny_config()) == 2
    assert input_depth(FINETUNE, tiny_config(encoder_pass_rows=4, input_ahead=3)) == 0
    with pytest.raises(ValueError, match="optim.input_ahead"):
        tiny_config(input_ahead=-1)
