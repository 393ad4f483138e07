"""What this machine's processor is (``cpu_model``) and can do, read rather than assumed, and the precision inference and
training run at because of it (``inference.precision``, ``optim.precision``).

``native_bf16``: whether the CPU multiplies bf16 natively (AVX-512 BF16 or AMX in ``/proc/cpuinfo``);
without either, torch emulates bf16 matrix products through fp32 at a fraction of fp32's speed.

``autocast(precision, device)``: the context a forward pass of inference, or a training step's
forward pass and loss, runs in. ``fp32`` is none;
``bf16`` is ``torch.autocast`` with bfloat16 (matrix products in bf16, reductions, softmax and layer
norms in fp32); ``auto`` is ``bf16`` on a CPU with native bf16 where a bf16 matrix product also
runs faster than an fp32 one (``bf16_pays``: timed once per process, some 20 ms; the issue's first
look on an Intel kind listing avx512_bf16 had its bf16 GEMM at 90 GFLOP/s against fp32's 251), and
``fp32`` everywhere else. On the
2-core AMD EPYC with avx512_bf16, e5-small's pseudo-labels under bf16 autocast agreed with fp32's on
99.5-100 % of SIB-200 test rows in each of 10 languages, at 1.90x the rows/s
(``benchmarks/inference_precision.md``); GPUs are left at fp32 until measured the same way.
"""

from __future__ import annotations

import contextlib
import functools
import platform
import time
from pathlib import Path
from typing import ContextManager

NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
PRECISIONS = ("auto", "fp32", "bf16")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what the ``platform`` module reports: what a
    benchmark's result names beside its figures, since absolute times differ between CPU kinds."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The first CPU's feature flags from ``/proc/cpuinfo`` (empty where there is none), read once
    per process: ``auto`` is resolved wherever inference or training starts."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def native_bf16(flags: frozenset[str] | set[str] | None = None) -> bool:
    """Whether the CPU computes bf16 dot products natively (AVX-512 BF16 or AMX)."""
    return bool((cpu_flags() if flags is None else flags) & set(NATIVE_BF16_FLAGS))


@functools.lru_cache(maxsize=None)
def bf16_pays(n: int = 512, repeats: int = 3) -> bool:
    """Whether an ``n × n`` bf16 matrix product runs faster than the fp32 one here, on torch's
    current threads: best of ``repeats`` after a warm-up each. Flags say what the CPU can do, not
    whether torch's kernels make it pay."""
    import torch

    def best(dtype: torch.dtype) -> float:
        a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
        torch.mm(a, b)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            torch.mm(a, b)
            times.append(time.perf_counter() - start)
        return min(times)

    return best(torch.bfloat16) < best(torch.float32)


def resolve_precision(precision: str, device: str = "cpu") -> str:
    """``fp32`` or ``bf16``: what ``precision`` (one of ``PRECISIONS``) means on ``device`` here."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "auto":
        return "bf16" if device == "cpu" and native_bf16() and bf16_pays() else "fp32"
    return precision


def autocast(precision: str, device: str = "cpu") -> ContextManager:
    """The context to run a forward pass in at ``precision`` on ``device`` (module docstring). Enter
    it per step: autocast caches bf16 copies of the weights until the outermost context exits."""
    import torch

    if resolve_precision(precision, device) == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device, dtype=torch.bfloat16)
