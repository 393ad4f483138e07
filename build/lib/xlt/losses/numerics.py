"""Numerical hygiene shared by every objective: the temperature check and full-precision similarities."""

from __future__ import annotations

import math
import numbers

import torch


def check_temperature(temperature: float) -> float:
    """``temperature`` as a float, or a ``ValueError`` naming it: τ must be a finite number > 0."""
    if (
        not isinstance(temperature, numbers.Real)
        or isinstance(temperature, bool)
        or not math.isfinite(temperature)
        or temperature <= 0
    ):
        raise ValueError(f"temperature={temperature!r} is invalid; τ must be a finite number > 0 (e.g. 0.1)")
    return float(temperature)


def upcast(x: torch.Tensor) -> torch.Tensor:
    """``x`` in at least float32: a bf16 cosine has ~3 significant digits, and exp(cos/τ) of fp16
    overflows at small τ, so similarities and their exponentials are never taken in half precision."""
    return x if x.dtype in (torch.float32, torch.float64) else x.float()


def full_precision(x: torch.Tensor) -> torch.autocast:
    """A context that turns autocast off on ``x``'s device.

    Under ``torch.autocast`` a float32 matmul still runs in fp16/bf16; cosines of 3 significant
    digits divided by τ = 0.07 are too coarse for a loss near 0 (the failure Chen et al. (2022, §3) describe).
    """
    return torch.autocast(device_type=x.device.type, enabled=False)
