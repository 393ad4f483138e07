"""What the benchmark scripts share (they import it as ``harness``: ``benchmarks/`` is a folder of scripts, run from
anywhere with their own folder first on the path; tests load it with ``tests/benchmarks/loading.py``)."""

from __future__ import annotations

from typing import Any


def train_step(training: Any, batch: Any, max_grad_norm: float = 1.0) -> dict[str, float]:
    """One optimizer step of a fine-tuning ``training`` (``xlt.train.workload.finetune_training``) on one ``batch``
    (``xlt.train.ViewBatch``), as the engine's loop takes it; ``{"loss": total, "ce": ..., <objective>: ...}``."""
    from xlt.engine import accumulation_step
    from xlt.train.workload import FINETUNE

    return accumulation_step(training, lambda model, b: FINETUNE.loss(training, model, b), [batch], max_grad_norm)
