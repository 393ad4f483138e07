"""How a trained classifier labels rows: ``InferenceSettings``, the one object every labelling path takes
(``PseudoLabelUDF``, ``labellers.Labellers``), co-training's ``inference`` section and
prediction's (``xlt.predict.config.PredictInference``, its own defaults)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import check
from ..hardware import PRECISIONS, resolve_precision, usable_cores
from ..resume import fixed, free


@dataclass(frozen=True)
class InferenceSettings:
    """The pseudo-labelling actors (``xlt.inference.labellers``, one pool for the job): rows per batch,
    texts per encoder batch, actors, what each reserves and its torch ``threads`` (0 =
    ``max(1, num_cpus)``; the learners' fits have ended when a pass runs, so an actor may use their
    cores). ``num_actors: 0`` labels in the driver's process instead, block by block, reserving nothing,
    on ``threads`` threads (0 = every core the process may use: nothing else runs meanwhile): for a pool
    too small to pay for an actor's start-up (the smoke presets), or a machine the job has to itself.
    ``precision``: ``auto`` (bf16 autocast on a CPU with native bf16, else fp32: ``xlt.hardware``),
    ``fp32``, ``bf16`` or ``fp16``. ``tokens_per_batch``
    > 0 caps each encoder batch's padded tokens too (``xlt.models.encoder.batch_bounds``): on a GPU,
    set it and raise ``encode_batch_size``. ``num_gpus``: per actor, a fraction to share a GPU; a
    cluster without a GPU labels on CPUs instead, with a warning."""

    batch_size: int = free(256)
    encode_batch_size: int = free(64)
    num_actors: int = free(1)
    num_cpus: float = free(1.0)
    num_gpus: float = free(0.0)
    threads: int = free(0)
    precision: str = fixed("auto")  # how later iterations label: a resumed run keeps it
    tokens_per_batch: int = free(0)  # 0 = encode_batch_size rows whatever their length

    def __post_init__(self) -> None:
        check(self.batch_size >= 1, "inference.batch_size", self.batch_size, "an integer >= 1")
        check(self.tokens_per_batch >= 0, "inference.tokens_per_batch", self.tokens_per_batch,
              "an integer >= 0 (0 = encode_batch_size rows whatever their length)")
        check(self.num_gpus >= 0, "inference.num_gpus", self.num_gpus, "a number >= 0 (a fraction shares a GPU)")
        check(self.encode_batch_size >= 1, "inference.encode_batch_size", self.encode_batch_size, "an integer >= 1")
        check(self.num_actors >= 0, "inference.num_actors", self.num_actors,
              "an integer >= 0 (0 = in the driver's process)")
        check(self.threads >= 0, "inference.threads", self.threads, "an integer >= 0 (0 = from num_cpus)")
        check(self.precision in PRECISIONS, "inference.precision", self.precision, " or ".join(PRECISIONS))
        # auto resolved here, so that the config records it: as the actors' device would (a GPU
        # actor's is fp32); an actor on a node that cannot compute in it falls back to auto there,
        # and each pass records what its actors computed in (pseudo-label/precision).
        object.__setattr__(self, "precision", resolve_precision(self.precision, "cuda" if self.num_gpus else "cpu"))

    @property
    def torch_threads(self) -> int:
        if self.threads:
            return self.threads
        return usable_cores() if self.num_actors == 0 else max(1, int(self.num_cpus))


EXACT = InferenceSettings(precision="fp32")  # what a caller of its own gets: Classifier.predict's labels
