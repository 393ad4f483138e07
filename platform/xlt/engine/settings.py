"""The settings every training run on the engine shares: optimiser, workers, where the run lives.

``OptimSettings`` (AdamW + linear schedule, Yu & Joty 2021, §4.2, with gradient accumulation),
``ScalingSettings`` (Ray Train workers) and ``xlt.storage.OutputSettings`` (the run directory) are
sections of fine-tuning's, pretraining's and co-training's configs alike; ``steps_per_epoch`` is how the
engine counts the optimizer steps a linear schedule spans; ``incompatible_changes`` decides
whether a run directory may be resumed under a changed config.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..config import check
from ..hardware import PRECISIONS, check_precision, gpu_visible, resolve_precision
from ..resume import fixed, free, length


KEEPS = ("last", "best-dev")


@dataclass(frozen=True)
class OptimSettings:
    """AdamW + linear schedule (Yu & Joty 2021, §4.2). ``warmup_ratio`` of all steps warm up linearly.

    ``grad_accum_steps`` micro-batches of ``batch_size`` make one optimizer step. Accumulation
    enlarges the batch the gradient averages over (Li et al. 2021, §3.1 simulates a batch of 512
    this way), not the set of in-batch negatives: each micro-batch contrasts within itself.
    """

    lr: float = fixed(5e-5)
    weight_decay: float = fixed(0.01)  # not applied to biases and LayerNorm weights (the usual BERT workload)
    batch_size: int = fixed(16)  # original examples (or pairs) per micro-batch and worker; their views come on top
    epochs: int = length(3)
    warmup_ratio: float = fixed(0.0)  # Yu & Joty (2021) state a linear schedule and no warmup
    max_grad_norm: float = fixed(1.0)  # 0 = no clipping
    # Which epoch's weights the run ends with (HF Trainer's ``load_best_model_at_end``): "last"; or "best-dev", the
    # epoch of the best source-language dev score the workload reports after every epoch (``Workload.dev_metric``),
    # ties to the earliest, restored before the final evaluation, checkpoint and export (the last report's scores are
    # the kept weights', ``train/kept_epoch`` names their epoch). ``patience`` > 0 (with best-dev): stop once that many
    # epochs in a row did not beat it (HF's ``EarlyStoppingCallback``); 0 = every epoch.
    keep: str = fixed("last")
    patience: int = fixed(0)
    grad_accum_steps: int = fixed(1)
    seed: int = fixed(0)
    # The word embeddings of the bundled e5 are 96M of its 118M parameters; freezing them makes
    # a CPU step much cheaper and keeps the embeddings of languages never seen in fine-tuning
    # where pretraining put them.
    freeze_word_embeddings: bool = fixed(False)
    shuffle_buffer: int = fixed(256)  # rows of the local shuffle buffer per worker; 0 = data order
    # > 0: micro-batches of rows of similar length, drawn from mega-batches of this many
    # micro-batches (as Hugging Face's Trainer(group_by_length=True), which takes 50); a batch
    # pads to its longest row, and random batches of sentences pad ~+80% tokens. 0 = off.
    group_by_length: int = fixed(0)
    # > 0: fine-tuning's encoder reads a step's texts (examples and their views) in length-sorted
    # passes of at most this many (``TextEncoder.embed_by_length``): the same features, less padding.
    # 0 = one pass. Pretraining reads its batches in one pass.
    encoder_pass_rows: int = free(0)
    eval_batch_size: int = free(64)
    log_every_steps: int = free(0)  # a log line every n steps on rank 0 besides its progress bar; 0 = per epoch only
    # Micro-batches whose input (rows read, texts tokenised, pinned for a GPU) is prepared ahead of the step in a thread
    # of its own (``xlt.engine.ahead``), where the workload's batcher prepares the whole input; the same batches either
    # way. 0 = in the step's thread. A GPU then waits for no input; on 2 CPU cores it neither helps nor costs
    # measurably (``benchmarks/step_vs_hf_trainer.md``, its diagnosis lines), so every device runs this one path.
    input_ahead: int = free(2)
    # The forward pass and loss of each training step: fp32; bf16 (torch.autocast: matrix products in
    # bf16, weights, gradients and AdamW in fp32); fp16 (the same in float16, with a gradient scaler
    # whose state checkpoints keep: GPUs without bf16); or auto, bf16 where the CPU has native bf16
    # (xlt.hardware), resolved when the config is made (resolve_auto). Evaluation and checkpoints
    # stay fp32 either way. A precision the run's device cannot compute in fails before Ray starts
    # (check_device).
    precision: str = fixed("fp32")

    def __post_init__(self) -> None:
        check(self.lr > 0, "optim.lr", self.lr, "a positive number")
        check(self.weight_decay >= 0, "optim.weight_decay", self.weight_decay, "a number >= 0")
        check(self.batch_size >= 1, "optim.batch_size", self.batch_size, "an integer >= 1")
        check(self.epochs >= 1, "optim.epochs", self.epochs, "an integer >= 1")
        check(0 <= self.warmup_ratio < 1, "optim.warmup_ratio", self.warmup_ratio, "a fraction in [0, 1)")
        check(self.max_grad_norm >= 0, "optim.max_grad_norm", self.max_grad_norm, "a number >= 0 (0 = off)")
        check(self.keep in KEEPS, "optim.keep", self.keep, " or ".join(KEEPS))
        check(self.patience >= 0, "optim.patience", self.patience, "an integer >= 0 (0 = train every epoch)")
        check(self.patience == 0 or self.keep == "best-dev", "optim.patience", self.patience,
              "0 unless optim.keep is best-dev: patience counts epochs without a better dev score")
        check(self.grad_accum_steps >= 1, "optim.grad_accum_steps", self.grad_accum_steps, "an integer >= 1")
        check(self.shuffle_buffer == 0 or self.shuffle_buffer >= self.batch_size, "optim.shuffle_buffer",
              self.shuffle_buffer, f"0 (no shuffling) or at least the batch size {self.batch_size}")
        check(self.group_by_length >= 0, "optim.group_by_length", self.group_by_length,
              "an integer >= 0 (micro-batches per mega-batch; 0 = off)")
        check(self.encoder_pass_rows >= 0, "optim.encoder_pass_rows", self.encoder_pass_rows,
              "an integer >= 0 (texts per encoder pass; 0 = one pass)")
        check(self.eval_batch_size >= 1, "optim.eval_batch_size", self.eval_batch_size, "an integer >= 1")
        check(self.input_ahead >= 0, "optim.input_ahead", self.input_ahead,
              "an integer >= 0 (micro-batches prepared ahead of the step; 0 = in the step's thread)")
        check(self.log_every_steps >= 0, "optim.log_every_steps", self.log_every_steps, "an integer >= 0")
        check(self.precision in PRECISIONS, "optim.precision", self.precision, "one of " + ", ".join(PRECISIONS))


@dataclass(frozen=True)
class ScalingSettings:
    """Ray Train workers: ``num_workers`` data-parallel copies (DDP over gloo on CPU, NCCL on GPU);
    0 trains in the job's own process instead (``xlt.engine.context``: one rank, no worker restarts,
    nothing reserved from Ray: for small models, where a worker group's start-up is most of a fit).

    ``cpus_per_worker`` is what each worker reserves (a fraction lets two small runs share a
    core, as co-training's learners do on a laptop); ``threads`` its torch threads (0 = the
    reserved CPUs, at least one). ``resources``: custom Ray resources each worker reserves too,
    which puts the workers on the nodes that offer them (a node type's resource in cluster.yaml,
    ``accelerator_type:A10G: 0.001``, ...).
    """

    num_workers: int = fixed(1)
    use_gpu: bool = free(False)
    cpus_per_worker: float = free(1)
    threads: int = free(0)
    max_failures: int = free(0)  # worker-group restarts, each resuming from the latest checkpoint
    resources: dict[str, float] = free(factory=dict)

    def __post_init__(self) -> None:
        check(self.num_workers >= 0, "scaling.num_workers", self.num_workers,
              "an integer >= 0 (0 = in the job's own process)")
        check(self.cpus_per_worker > 0, "scaling.cpus_per_worker", self.cpus_per_worker, "a number > 0")
        check(self.threads >= 0, "scaling.threads", self.threads, "an integer >= 0 (0 = from cpus_per_worker)")
        check(self.max_failures >= -1, "scaling.max_failures", self.max_failures, "-1 (unlimited) or >= 0")
        for name, amount in self.resources.items():
            check(name not in ("CPU", "GPU") and isinstance(amount, (int, float)) and amount > 0,
                  f"resources.{name}", amount, "a number > 0 of a custom resource (CPU and GPU have "
                  "cpus_per_worker and use_gpu)")

    def worker_resources(self) -> dict[str, float]:
        """What each worker reserves."""
        return {"CPU": self.cpus_per_worker, **({"GPU": 1} if self.use_gpu else {}), **self.resources}

    def footprint(self) -> dict[str, float]:
        """What the run occupies: its worker group's reservation, or, in process, one worker's worth
        of the driver's (``driver_share``)."""
        return {name: amount * max(self.num_workers, 1) for name, amount in self.worker_resources().items()}

    def driver_share(self) -> dict[str, float]:
        """What the run takes of its driver's process: one worker's resources in process, else
        nothing (a sweep trial's bundle must hold it: ``xlt.sweep.trainables``)."""
        return self.worker_resources() if self.num_workers == 0 else {}

    @property
    def torch_threads(self) -> int:
        return self.threads or max(1, int(self.cpus_per_worker))


def check_device(optim: OptimSettings, scaling: ScalingSettings, section: str = "") -> None:
    """Refuse, in one line, an ``optim.precision`` the run's device cannot compute in (``section``:
    the config's prefix, e.g. ``lm.``). Called on the driver before Ray starts; a GPU run whose
    driver sees no GPU (a cluster's CPU head) is checked by its workers instead, on the GPU they
    were given (``engine.training.build_training``)."""
    device = "cuda" if scaling.use_gpu else "cpu"
    if device == "cuda" and scaling.num_workers == 0 and not gpu_visible():
        raise ValueError(f"{section}scaling.use_gpu: the run trains in this process ({section}scaling.num_workers: 0), "
                         "which sees no GPU; give it Ray Train workers on GPU nodes (num_workers >= 1) or set use_gpu: false")
    if device == "cpu" or gpu_visible():
        check_precision(optim.precision, device, f"{section}optim.precision")


def resolve_auto(optim: OptimSettings, scaling: ScalingSettings) -> OptimSettings:
    """``optim`` with ``precision: auto`` replaced by what it computes in on the run's device
    (``xlt.hardware``: bf16 on a CPU with native bf16, else fp32; fp32 on a GPU). A training config
    resolves it when it is made, so that the config a run saves, reports and tracks (results,
    MLflow parameters, checkpoints, the model card) names the precision its steps ran in."""
    if optim.precision != "auto":
        return optim
    return dataclasses.replace(optim, precision=resolve_precision("auto", "cuda" if scaling.use_gpu else "cpu"))


def steps_per_epoch(train_rows: int, num_workers: int, optim: OptimSettings) -> int:
    """Optimizer steps per epoch on every worker (``num_workers`` 0: in process, one): Ray gives each worker an equal shard of
    ``train_rows // num_workers`` rows (``streaming_split(equal=True)``), in micro-batches of
    ``batch_size`` (the last one smaller) grouped by ``grad_accum_steps`` (the last group may be shorter)."""
    check(train_rows > 0, "data.train_rows", train_rows,
          "the train dataset size (resolve the config with the job's resolve/prepare first)")
    num_workers = max(num_workers, 1)
    rows = train_rows // num_workers
    check(rows >= 1, "scaling.num_workers", num_workers, f"at most the number of train rows ({train_rows})")
    micro_batches = -(-rows // optim.batch_size)
    return -(-micro_batches // optim.grad_accum_steps)

