"""What this machine's processor is (``cpu_model``) and can do, read rather than assumed, and the precision inference and
training run at because of it (``inference.precision``, ``optim.precision``).

``native_bf16``: whether the CPU multiplies bf16 natively (AVX-512 BF16 or AMX in ``/proc/cpuinfo``);
without either, torch emulates bf16 matrix products through fp32 at a fraction of fp32's speed.

``autocast(precision, device)``: the context a forward pass of inference, or a training step's
forward pass and loss, runs in. ``fp32`` is none;
``bf16`` is ``torch.autocast`` with bfloat16 (matrix products in bf16, reductions, softmax and layer
norms in fp32); ``fp16`` the same with float16, whose narrow range needs a gradient scaler in
training (``engine.training``); ``auto`` is ``bf16`` on a CPU with native bf16 and ``fp32``
everywhere else (GPUs are left at fp32 until measured as below).

``auto`` is decided by the CPU's flags alone, the same on every start of every machine of a kind,
never by timing: a matrix product timed at start-up lets the machine's load at that instant choose
the precision of a whole run. Where the flags are, bf16 pays: pseudo-labels under bf16 autocast
agree with fp32's on nearly every row at a higher rate (``benchmarks/inference_precision.md``), and a
training step is faster with the same accuracy (``benchmarks/train_precision.md``). A job's config
records what ``auto`` became where it was made (``engine.settings.resolve_auto``).

``precisions(device)``: what ``device`` can run. A CUDA GPU: fp32 and fp16, and bf16 from compute
capability 8.0 (Ampere: A10G, A100, H100; not a T4 or V100). A CPU: fp32, and bf16 or fp16 only
where it multiplies them natively (``avx512_bf16``/``amx_bf16``, ``avx512_fp16``/``amx_fp16``):
torch emulates them elsewhere, through fp32 at a fraction of its speed, which is no reason to ask
for them. ``check_precision`` turns anything else into one line naming the device and what it can
do; a job calls it before Ray starts (``engine.settings.check_device``), and a Ray Train worker
again on the GPU it was given, which the driver of a cluster may not have.
"""

from __future__ import annotations

import contextlib
import functools
import platform
from pathlib import Path
from typing import ContextManager

NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
NATIVE_FP16_FLAGS = ("avx512_fp16", "amx_fp16")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}  # the torch dtype autocast computes in


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


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a container's or ``taskset``'s limit, not the host's)."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


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


def native_fp16(flags: frozenset[str] | set[str] | None = None) -> bool:
    """Whether the CPU computes fp16 dot products natively (AVX-512 FP16 or AMX-FP16)."""
    return bool((cpu_flags() if flags is None else flags) & set(NATIVE_FP16_FLAGS))


def device_name(device: str = "cpu") -> str:
    """What to call ``device`` in a message: the CPU's model, or the first GPU's name."""
    if device == "cpu":
        return f"this CPU ({cpu_model()})"
    import torch

    return f"this GPU ({torch.cuda.get_device_name(0)})" if gpu_visible() else "a CUDA GPU"


def gpu_visible() -> bool:
    """Whether this process sees a CUDA GPU (Ray shows a worker the GPUs it reserved)."""
    import torch

    return torch.cuda.is_available()


def inference_device() -> str:
    """Where inference in this process runs: ``cuda`` if it sees a GPU, else ``cpu`` (pseudo-labelling
    actors that reserved one, ``jobs/evaluate.py``'s encoders, a GPU node's driver)."""
    return "cuda" if gpu_visible() else "cpu"


def precisions(device: str = "cpu") -> tuple[str, ...]:
    """The precisions ``device`` (``cpu`` or ``cuda``) can compute in (module docstring), ``fp32`` first."""
    if device == "cpu":
        return ("fp32",) + (("bf16",) if native_bf16() else ()) + (("fp16",) if native_fp16() else ())
    import torch

    bf16 = gpu_visible() and torch.cuda.get_device_capability(0) >= (8, 0)
    return ("fp32", "fp16") + (("bf16",) if bf16 else ())


def check_precision(precision: str, device: str, key: str) -> None:
    """Raise a ``ValueError`` of one line if ``device`` cannot compute in ``precision`` (the setting
    ``key``, e.g. ``optim.precision``); ``auto`` resolves to something every device can."""
    if precision not in PRECISIONS:
        raise ValueError(f"{key} must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    can = precisions(device)
    if precision != "auto" and precision not in can:
        raise ValueError(f"{key}: {precision} is not something {device_name(device)} computes in; "
                         f"it can do {', '.join(can)} (or auto)")


def resolve_precision(precision: str, device: str = "cpu") -> str:
    """``fp32``, ``bf16`` or ``fp16``: what ``precision`` (one of ``PRECISIONS``) means on ``device`` here."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "auto":
        return "bf16" if device == "cpu" and native_bf16() else "fp32"
    return precision


def autocast(precision: str, device: str = "cpu") -> ContextManager:
    """The context to run a forward pass in at ``precision`` on ``device`` (module docstring). Enter
    it per step: autocast caches bf16 copies of the weights until the outermost context exits."""
    import torch

    resolved = resolve_precision(precision, device)
    if resolved == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device, dtype=getattr(torch, DTYPES[resolved]))
