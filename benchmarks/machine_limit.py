"""The machine's limit: dense GEMM throughput per dtype, and an encoder's FLOPs per token.

Every throughput in ``benchmarks/`` is then also a fraction of this limit: rows/s × tokens per row ×
FLOPs per token ÷ the GEMM FLOP/s of the same threads (``fraction_of_limit``). A transformer
encoder's forward pass is GEMMs plus a little softmax and layer norm, so the fp32 GEMM rate is the
ceiling a bare encode loop can approach and a well-fed pipeline should reach a large part of.

- **GEMM**: ``torch.mm`` of two ``n × n`` matrices, best of ``repeats`` timings after a warm-up,
  ``2 n³`` FLOPs each, on ``--threads`` torch threads; fp32 always, bf16 only where the CPU says it
  has native bf16 (``avx512_bf16`` or ``amx_bf16`` in ``/proc/cpuinfo``: detected, not assumed).
  A CPU without them emulates bf16 GEMM through fp32 at a fraction of its speed; that figure is
  measured too with ``--all-dtypes``, labelled as emulated.
- **FLOPs per token** of an encoder (forward; training ≈ 3× that): ``2 × N`` for its ``N``
  non-embedding weights (each multiply-add of a token through a linear layer), plus the attention
  scores and their weighted sum, ``4 × layers × S × hidden`` at sequence length ``S`` (Kaplan et
  al. 2020, Table 1). Word and position embeddings are look-ups, not FLOPs.

    python benchmarks/machine_limit.py --threads 2 --out benchmarks/machine_limit.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from xlt.hardware import cpu_model
from xlt.hardware import NATIVE_BF16_FLAGS, cpu_flags, native_bf16


HERE = Path(__file__).resolve().parent


def gemm_gflops(dtype: str, n: int = 1024, repeats: int = 5, threads: int | None = None) -> float:
    """Best-of-``repeats`` GFLOP/s of an ``n × n`` by ``n × n`` ``torch.mm`` in ``dtype``."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    kind = getattr(torch, dtype)
    a, b = (torch.randn(n, n).to(kind) for _ in range(2))
    torch.mm(a, b)  # warm-up: the first call picks kernels and touches the memory
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def encoder_flops_per_token(source: str, seq_len: int) -> dict[str, float]:
    """Forward FLOPs per token of ``source``'s transformer at sequence length ``seq_len`` (module
    docstring), with the counts they come from."""
    from xlt.models import EncoderConfig, load_encoder

    encoder = load_encoder(EncoderConfig(source=source))
    backbone = encoder.backbone
    config = backbone.config
    embedding = {id(p) for module in backbone.modules() if module.__class__.__name__.endswith("Embedding")
                 for p in module.parameters(recurse=False)}
    weights = sum(p.numel() for p in backbone.parameters() if id(p) not in embedding)
    attention = 4 * config.num_hidden_layers * seq_len * config.hidden_size
    return {"non_embedding_weights": float(weights), "layers": float(config.num_hidden_layers),
            "hidden": float(config.hidden_size), "seq_len": float(seq_len),
            "forward_flops_per_token": float(2 * weights + attention)}


def fraction_of_limit(rows_per_s: float, tokens_per_row: float, flops_per_token: float, gflops: float) -> float:
    """The share of the machine's GEMM rate that ``rows_per_s`` rows of ``tokens_per_row`` tokens use."""
    return rows_per_s * tokens_per_row * flops_per_token / (gflops * 1e9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads (default: every core)")
    parser.add_argument("--size", type=int, default=1024, help="GEMM matrix size n")
    parser.add_argument("--model", default="bundled:multilingual-e5-small", help="the encoder whose FLOPs are counted")
    parser.add_argument("--seq-len", type=int, default=64, help="sequence length of the attention term")
    parser.add_argument("--all-dtypes", action="store_true", help="also time bf16 where the CPU has no native bf16")
    parser.add_argument("--out", type=Path, default=HERE / "machine_limit.json")
    args = parser.parse_args(argv)

    flags = cpu_flags()
    bf16 = native_bf16(flags)
    gemm = {"float32": gemm_gflops("float32", args.size, threads=args.threads)}
    if bf16 or args.all_dtypes:
        gemm["bfloat16"] = gemm_gflops("bfloat16", args.size, threads=args.threads)
    model = encoder_flops_per_token(args.model, args.seq_len)
    load = os.getloadavg()[0]
    result = {"command": " ".join(["python", "benchmarks/machine_limit.py", *(argv or sys.argv[1:])]),
              "cpu": cpu_model(), "load_1min_at_start": load, "threads": args.threads, "gemm_size": args.size,
              "native_bf16": bf16, "bf16_flags": sorted(flags & set(NATIVE_BF16_FLAGS)),
              "gemm_gflops": gemm, "model": args.model, **model}
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['cpu']}, {args.threads} threads, load {load:.2f}")
    for dtype, value in gemm.items():
        native = "" if dtype == "float32" else (" (native)" if bf16 else " (emulated: no avx512_bf16/amx_bf16)")
        print(f"  {dtype} GEMM {args.size}: {value:.1f} GFLOP/s{native}")
    print(f"  {args.model}: {model['forward_flops_per_token'] / 1e6:.1f} MFLOP per token forward at S={args.seq_len} "
          f"({model['non_embedding_weights'] / 1e6:.1f} M non-embedding weights)")
    ceiling = gemm["float32"] * 1e9 / model["forward_flops_per_token"]
    print(f"  ceiling: {ceiling:,.0f} tokens/s forward in fp32 ({ceiling / args.seq_len:,.0f} rows/s of {args.seq_len} tokens)")
    print(f"  wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
