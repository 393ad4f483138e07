"""Fine-tuning's workload for the engine: encoder → head, loss = CE + Σ λ_k·aux_k, evaluation per language.

Pieces, each usable without Ray (tests, ``benchmarks/train_overhead.py``):

- ``FeaturesAndLogits``: one encoder call over the N texts of a view batch (in length-sorted
  passes with ``optim.encoder_pass_rows``), returning the sentence features (N, D) the alignment
  objectives read, the head's logits (N, C) and the features through each objective's projection
  head, if it has one (``xlt.losses.projection``).
- ``compute_losses``: CE on the labelled originals (``is_anchor``; in translate-train the
  translations are originals too) plus ``WeightedObjectives`` over the batch outputs; the step
  never asks which objectives are configured.
- ``finetune_training``: classifier, AdamW over the groups fine-tuning declares (``optimizer_groups``: the head's
  own rate, LP-FT's probe epochs), linear schedule (``xlt.engine``); with ``optim.head_init: probe`` the head starts
  as the probe fitted on the training rows (``xlt.train.probe_head``); WiSE-FT after the last epoch (``wise_ft``).
- evaluation: the config's evaluators (``xlt.eval.evaluators``: accuracy and macro-F1 per language,
  averages over targets, transfer gaps); every checkpoint keeps the prediction of each classified
  row (``predictions.json``: ``read_predictions``), for paired comparisons of two runs item by item
  (``xlt.eval.stats``).

``FINETUNE`` (a ``Finetuning`` workload) plugs them into the engine's per-worker loop
(``xlt.engine.train_workload``: resume, sharded epochs, reporting and checkpoints).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import json
import logging
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..engine import EvalRows, Evaluation, Workload, Training, start_training
from ..engine.training import device_of, param_groups
from ..engine import build_training as build_engine_training
from ..engine.loop import Batcher
from ..eval.evaluators import EvalContext, evaluate_all
from ..metrics import ACC, AVG_TARGET, F1, gap_name, metric_name
from ..losses import WeightedObjectives, build_objectives
from ..losses.projection import Projection, ProjectionHead, projected_key
from ..models import Classifier, TransformerEncoder, load_encoder
from ..models.classifier import build_classifier_over
from ..models.encoder import CachedEncoder, Item, Tokens
from ..storage import join, names
from .batches import UNKNOWN_LABEL, ViewBatch, flatten_batch, items_of
from .config import FinetuneConfig, FinetuneOptim
from .checkpoint import checkpoint_entry
from .probe_head import init_head_from_probe

logger = logging.getLogger(__name__)

CE = "ce"  # the loss part train/loss/ce
PREDICTIONS_FILE = "predictions.json"  # in a checkpoint: {split: {id, lang, label, predicted}} of its evaluation


class FeaturesAndLogits(nn.Module):
    """``Classifier.forward`` that also returns the features: ``items -> (features (N, D), logits (N, C),
    {projected/<objective>: (N, P)})``.

    The alignment objectives need the sentence embeddings that the head reads, from the same
    forward pass (one encoder call per step), and DDP must see that pass through its own
    ``forward`` to synchronise gradients: hence a module rather than a second call. For the same
    reason the objectives' projection heads (``projections``: name -> ``Projection``) live here,
    beside the classifier and outside it. ``pass_rows`` > 0 splits the encoder call into
    length-sorted passes (``optim.encoder_pass_rows``).
    """

    def __init__(self, classifier: Classifier, pass_rows: int = 0,
                 projections: Mapping[str, Projection] | None = None) -> None:
        super().__init__()
        self.classifier, self.pass_rows = classifier, pass_rows
        dim = classifier.head.in_features
        self.projections = nn.ModuleDict({name: ProjectionHead(dim, p) for name, p in (projections or {}).items()})

    def forward(self, texts: list[Item], tokens: Tokens | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """``tokens``: ``texts`` tokenised ahead of the step (``ViewBatch.tokens``), embedded as they are."""
        encoder, head = self.classifier.encoder, self.classifier.head
        with torch.set_grad_enabled(torch.is_grad_enabled() and encoder.trainable):
            if tokens is not None:
                features = encoder.embed_tokens(tokens)  # (N, D)
            elif self.pass_rows:
                features = encoder.embed_by_length(texts, self.pass_rows)
            else:
                features = encoder.embed(texts)
        features = features.to(head.weight.device)
        logits = head(self.classifier.dropout(features))  # (N, C)
        # g(Φ) of each objective that contrasts a projection (no dropout: Φ as the encoder gives it)
        projected = {projected_key(name): g(features) for name, g in self.projections.items()}  # (N, P)
        return features, logits, projected


def supervised_ce(logits: torch.Tensor, labels: torch.Tensor, is_anchor: torch.Tensor) -> torch.Tensor:
    """Mean CE over the labelled originals; views carry no CE (Wang et al. 2022, §3: CE on the training
    data, the views enter through the alignment term). Zero (with gradient) if none is labelled."""
    mask = is_anchor & (labels != UNKNOWN_LABEL)  # (N,)
    if not bool(mask.any()):
        return logits.sum() * 0
    return F.cross_entropy(logits[mask].float(), labels[mask])


def compute_losses(model: nn.Module, objectives: WeightedObjectives | None, batch: ViewBatch,
                   epoch: int = 0) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``loss = CE + Σ λ_k·aux_k`` over one view batch in an epoch after ``epoch`` completed ones (an
    objective's ``start_epoch``); returns the total and the unweighted parts."""
    features, logits, projected = model(batch.texts, batch.tokens)
    outputs = batch.outputs(features, logits) | projected
    ce = supervised_ce(logits, outputs["labels"], outputs["is_anchor"])
    parts = {CE: ce}
    total = ce
    if objectives is not None:
        aux, aux_parts = objectives(outputs, epoch)
        total = total + aux
        parts.update(aux_parts)
    return total, parts


@dataclass
class FinetuneTraining(Training):
    """The engine's ``Training`` of a classifier (``module``), with the objectives the step adds
    to CE and the label index that turns the task's labels into class ids."""

    objectives: WeightedObjectives | None = None
    label_index: dict[str, int] = field(default_factory=dict)
    # optim.wise_alpha < 1: the trained weights as the probe's epochs ended (by parameter name), mixed in after the last.
    anchor: dict[str, torch.Tensor] | None = None

    @property
    def classifier(self) -> Classifier:
        return self.module  # type: ignore[return-value]

    def extra_state(self) -> dict[str, Any] | None:
        return None if self.anchor is None else {"anchor": {k: v.cpu() for k, v in self.anchor.items()}}

    def load_extra_state(self, state: dict[str, Any] | None) -> None:
        device = next(self.module.parameters()).device
        self.anchor = None if not state else {k: v.to(device) for k, v in state["anchor"].items()}


def optimizer_groups(cfg: FinetuneConfig, classifier: nn.Module, loss_modules: nn.Module | None,
                     steps_per_epoch: int) -> tuple[list[dict[str, Any]], list[int]]:
    """AdamW's parameter groups of a fine-tuning run and the step each one's schedule starts at: the engine's
    (weight decay on matrices only), the head in groups of its own at ``optim.head_lr`` (0: ``optim.lr``) where it
    has its own rate or trains alone first; under ``optim.probe_epochs`` the rest wait that many epochs (linear
    probing, then fine-tuning: LP-FT, Kumar et al. 2022, §4), the head starting at once."""
    optim = cfg.optim
    head = (classifier.head, optim.head_lr or optim.lr) if optim.head_lr or optim.probe_epochs else None
    groups = param_groups(optim.weight_decay, classifier, loss_modules, own_lr=head)
    probe = steps_per_epoch * optim.probe_epochs
    # param_groups puts the head's groups last: the rest wait for the probe's epochs to end.
    return groups, [0 if head is not None and i >= len(groups) - 2 else probe for i in range(len(groups))]


def keep_probe(training: FinetuneTraining, optim: FinetuneOptim) -> None:
    """WiSE-FT's θ₀ (``training.anchor``), kept once the probe is fitted, after ``optim.probe_epochs`` epochs (0: at
    the start, the head fitted by ``optim.head_init: probe``): the trained weights then, the pretrained encoder (its
    rate was 0) and the probe. Reading: the paper mixes a zero-shot model with its fine-tuned self; an encoder with
    a head drawn at random has no zero-shot classifier, so LP-FT's probe (Kumar et al. 2022) stands in for it."""
    if optim.wise_alpha < 1 and training.epoch == optim.probe_epochs:
        training.anchor = {name: p.detach().clone() for name, p in training.module.named_parameters()
                           if p.requires_grad}


def wise_ft(training: FinetuneTraining, optim: FinetuneOptim) -> None:
    """After a counted epoch, under WiSE-FT (``optim.wise_alpha`` = α < 1; Wortsman et al. 2022, Eq. 1): keep the
    probe's weights as its epochs end (``keep_probe``), and after the last epoch set every trained weight θ₁ to
    (1 − α)·θ₀ + α·θ₁, in place: what is evaluated, saved and exported is the mix. A finished run resumed with more
    epochs trains on from the mix and mixes again after its new last epoch."""
    if optim.wise_alpha == 1:
        return
    keep_probe(training, optim)
    if training.epoch == optim.epochs:
        with torch.no_grad():
            for name, p in training.module.named_parameters():
                if name in training.anchor:
                    p.lerp_(training.anchor[name], 1 - optim.wise_alpha)  # p + (1 − α)(θ₀ − p)


def trainable_classifier(cfg: FinetuneConfig) -> Classifier:
    """A classifier to fine-tune: encoder + a head drawn from torch's generator as the run seeded it
    (``xlt.engine.start_training``), over the task's labels (pairs if the task has them), word
    embeddings frozen if configured. A classifier described by a spec (trained weights, an export) is
    ``xlt.inference.build_classifier``'s."""
    if not cfg.task.labels:
        raise ValueError("cfg.task.labels is empty: resolve the config first (xlt.train.trainer.prepare)")
    encoder = load_encoder(cfg.model)
    if cfg.optim.freeze_word_embeddings:
        if not isinstance(encoder, TransformerEncoder):
            raise ValueError(f"optim.freeze_word_embeddings: {cfg.model.source} has no word embeddings to freeze")
        encoder.backbone.get_input_embeddings().weight.requires_grad_(False)
    return build_classifier_over(encoder, cfg.task.labels, paired=cfg.task.paired)


def finetune_training(cfg: FinetuneConfig, steps_per_epoch: int,
                   wrap: Callable[[nn.Module], nn.Module] = lambda m: m) -> FinetuneTraining:
    """Classifier, its step module (through ``wrap``, e.g. ``ray.train.torch.prepare_model``),
    the objectives, AdamW and the linear schedule (``xlt.engine.start_training`` with ``FINETUNE``)."""
    return start_training(FINETUNE, cfg, steps_per_epoch, wrap)  # type: ignore[return-value]


def read_predictions(checkpoint: str | Path) -> dict[str, dict[str, list]]:
    """A checkpoint's ``PREDICTIONS_FILE``: per evaluated split, the rows' ``id``, ``lang``, gold
    ``label`` and ``predicted`` label, in one order."""
    path = Path(checkpoint) / PREDICTIONS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: only checkpoints of an epoch that evaluated hold "
                                "predictions")
    return json.loads(path.read_text(encoding="utf-8"))


class Finetuning(Workload):
    """Fine-tuning on the engine: encoder + head, ``flatten_batch`` of each micro-batch of rows with
    their views, ``compute_losses``; rank 0 runs the config's evaluators (``evals``), each on the
    dataset it names when the run was given it (a co-training learner gets the one it reports).
    A frozen, parameter-free encoder (USE) is wrapped in ``CachedEncoder``: each text is embedded
    once per run, not once per epoch."""

    config_class = FinetuneConfig
    job = "finetune"

    def classifiers(self, cfg: FinetuneConfig, checkpoint: str, directory: str) -> dict[str, dict[str, Any]]:
        """The one classifier of a run: its last checkpoint's (under ``optim.keep: best-dev``, the kept epoch's)."""
        return {"model": checkpoint_entry(checkpoint, directory, what="fine-tuned")}

    def outputs(self, cfg: FinetuneConfig, checkpoint: str) -> dict[str, str]:
        """The rows' predictions of the checkpoint's evaluation (``PREDICTIONS_FILE``), where it wrote them."""
        return {"predictions": join(checkpoint, PREDICTIONS_FILE)} if PREDICTIONS_FILE in names(checkpoint) else {}

    def build(self, cfg: FinetuneConfig, steps_per_epoch: int,
              wrap: Callable[[nn.Module], nn.Module]) -> FinetuneTraining:
        classifier = trainable_classifier(cfg)
        if CachedEncoder.accepts(classifier.encoder):  # a frozen USE: only the head learns
            classifier.encoder = CachedEncoder(classifier.encoder)
        objectives = build_objectives(cfg.objectives) if cfg.objectives else None
        step = FeaturesAndLogits(classifier, cfg.optim.encoder_pass_rows, objectives and objectives.projections)
        loss_modules = step.projections if len(step.projections) else None
        groups, starts = optimizer_groups(cfg, classifier, loss_modules, steps_per_epoch)
        return build_engine_training(  # type: ignore[return-value]
            classifier, cfg.optim, steps_per_epoch, wrap, step_module=step, loss_modules=loss_modules,
            training_class=FinetuneTraining, groups=groups, starts=starts, objectives=objectives,
            label_index={label: i for i, label in enumerate(cfg.task.labels)})

    def batcher(self, cfg: FinetuneConfig, training: FinetuneTraining, epoch: int, rank: int) -> Batcher:
        """``flatten_batch`` of the rows and, where the step embeds the batch in one pass, its texts tokenised
        (``ViewBatch.tokens``; pinned for a GPU to copy while the host goes on): the step's whole input."""
        encoder = training.classifier.encoder
        tokenize = self.prepares_input(cfg)
        pin = device_of(training.module).type == "cuda"

        def batch(rows: Mapping[str, Any]) -> tuple[ViewBatch, int]:
            view_batch = flatten_batch(rows, training.label_index)
            tokens = encoder.tokens(view_batch.texts) if tokenize else None
            if tokens is not None and pin:
                tokens = tokens.pinned()
            return replace(view_batch, tokens=tokens), view_batch.num_examples
        return batch

    def prepares_input(self, cfg: FinetuneConfig) -> bool:
        """Unless the step embeds its batch in length-sorted passes (``optim.encoder_pass_rows``), which it
        tokenises itself."""
        return not cfg.optim.encoder_pass_rows

    def begin(self, cfg: FinetuneConfig, training: FinetuneTraining, data: Any) -> None:
        """``optim.head_init: probe``: the head fitted on the frozen features of the training rows
        (``xlt.train.probe_head``), before the first step; WiSE-FT's θ₀ kept if the probe is fitted now."""
        if cfg.optim.head_init == "probe":
            optim = cfg.optim
            rows = data.iter_batches(batch_size=optim.eval_batch_size, batch_format=self.batch_format)
            n = init_head_from_probe(training.classifier, rows, training.label_index, optim.probe_c,
                                     optim.eval_batch_size, optim.seed)
            logger.info(f"{cfg.output.name}: the head starts as the probe fitted on {n} labelled rows "
                        f"(C = {optim.probe_c})")
        keep_probe(training, cfg.optim)

    def epoch_ended(self, cfg: FinetuneConfig, training: FinetuneTraining) -> None:
        wise_ft(training, cfg.optim)

    def unused_parameters(self, cfg: FinetuneConfig) -> bool:
        return cfg.model.layer != -1  # pooling an intermediate layer leaves the layers above it without gradient

    def loss(self, training: FinetuneTraining, model: nn.Module,
             inputs: ViewBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return compute_losses(model, training.objectives, inputs, training.epoch)

    def evaluate(self, cfg: FinetuneConfig, training: FinetuneTraining, last: bool, rows: EvalRows) -> Evaluation:
        """The config's evaluators; the outputs are each evaluated row's prediction, by split."""
        done = evaluate_all(cfg.evals, {"classifier": training.classifier, "encoder": training.classifier.encoder},
                            rows, last=last,
                            context=EvalContext(cfg.task.source_lang, cfg.optim.eval_batch_size, cfg.output.name))
        return Evaluation(done.metrics, done.predictions)

    def dev_metric(self, cfg: FinetuneConfig) -> str:
        """The source language's dev accuracy (zero-shot: the one language with labels)."""
        return metric_name("val", ACC, cfg.task.source_lang)

    def write(self, directory: Path, training: FinetuneTraining, cfg: FinetuneConfig, evaluation: Evaluation) -> None:
        """The predictions of this epoch's evaluation, if it evaluated (``PREDICTIONS_FILE``)."""
        if evaluation.outputs:
            (Path(directory) / PREDICTIONS_FILE).write_text(json.dumps(evaluation.outputs, ensure_ascii=False),
                                                            encoding="utf-8")

    def lengths(self, training: FinetuneTraining, batch: Mapping[str, Any]) -> list[int]:
        """Tokens of each row's original (its views are not counted), as the encoder pads them."""
        return training.classifier.encoder.lengths(items_of(batch))

    def summary(self, metrics: Mapping[str, float]) -> list[str]:
        """The transfer metrics of each evaluated split."""
        parts = []
        for split in ("val", "test"):
            acc, f1 = metric_name(split, ACC, AVG_TARGET), metric_name(split, F1, AVG_TARGET)
            if acc in metrics:
                parts.append(f"{split} avg_target acc {metrics[acc]:.3f} f1 {metrics[f1]:.3f} "
                             f"gap {metrics[gap_name(split)]:.3f}")
        return parts


FINETUNE = Finetuning()
