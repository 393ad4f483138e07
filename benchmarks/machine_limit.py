"""The machine's limit: dense GEMM throughput per dtype, and an encoder's FLOPs per token.

    python benchmarks/machine_limit.py --threads 2 --out benchmarks/machine_limit.json

``fraction_of_limit`` sets a throughput against it. GEMM: best timed ``torch.mm`` of ``n × n`` matrices (``2 n³``
FLOPs), fp32, and bf16 where native (``--all-dtypes``: emulated too). Forward FLOPs per token: ``2 N`` for the ``N``
non-embedding weights plus attention's ``4 × layers × S × hidden`` (Kaplan et al. 2020, Table 1)."""

from __future__ import annotations

import os

import torch

import harness
from xlt.hardware import NATIVE_BF16_FLAGS, cpu_flags, native_bf16
from xlt.models import EncoderConfig, load_encoder


def gemm_gflops(dtype: str, n: int = 1024, repeats: int = 5, threads: int | None = None) -> float:
    """Best-of-``repeats`` GFLOP/s of an ``n × n`` by ``n × n`` ``torch.mm`` in ``dtype``."""
    if threads:
        torch.set_num_threads(threads)
    a, b = (torch.randn(n, n).to(getattr(torch, dtype)) for _ in range(2))
    torch.mm(a, b)  # warm-up: the first call picks kernels and touches the memory
    return 2 * n**3 / min(harness.timed(lambda: torch.mm(a, b))[0] for _ in range(repeats)) / 1e9


def encoder_flops_per_token(source: str, seq_len: int) -> dict[str, float]:
    """Forward FLOPs per token of ``source``'s transformer at ``seq_len``, with the counts they come from."""
    backbone = load_encoder(EncoderConfig(source=source)).backbone
    layers, hidden = backbone.config.num_hidden_layers, backbone.config.hidden_size
    embedding = {id(p) for module in backbone.modules() if module.__class__.__name__.endswith("Embedding")
                 for p in module.parameters(recurse=False)}
    weights = sum(p.numel() for p in backbone.parameters() if id(p) not in embedding)
    return {"non_embedding_weights": float(weights), "layers": float(layers), "hidden": float(hidden),
            "seq_len": float(seq_len), "forward_flops_per_token": float(2 * weights + 4 * layers * seq_len * hidden)}


def fraction_of_limit(rows_per_s: float, tokens_per_row: float, flops_per_token: float, gflops: float) -> float:
    """The share of the machine's GEMM rate that ``rows_per_s`` rows of ``tokens_per_row`` tokens use."""
    return rows_per_s * tokens_per_row * flops_per_token / (gflops * 1e9)


def main() -> None:
    parser = harness.parser(__doc__, "machine_limit.json")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads (default: every core)")
    parser.add_argument("--size", type=int, default=1024, help="GEMM matrix size n")
    parser.add_argument("--model", default="bundled:multilingual-e5-small", help="the encoder whose FLOPs are counted")
    parser.add_argument("--seq-len", type=int, default=64, help="sequence length of the attention term")
    parser.add_argument("--all-dtypes", action="store_true", help="also time bf16 where the CPU has no native bf16")
    args = parser.parse_args()
    machine, flags = harness.Machine(), cpu_flags()
    bf16 = native_bf16(flags)
    dtypes = ("float32", "bfloat16") if bf16 or args.all_dtypes else ("float32",)
    gemm = {dtype: gemm_gflops(dtype, args.size, threads=args.threads) for dtype in dtypes}
    model = encoder_flops_per_token(args.model, args.seq_len)
    native = {"float32": "", "bfloat16": " (native)" if bf16 else " (emulated: no avx512_bf16/amx_bf16)"}
    print(machine.line(), *(f"  {d} GEMM {args.size}: {v:.1f} GFLOP/s{native[d]}" for d, v in gemm.items()), sep="\n")
    ceiling = gemm["float32"] * 1e9 / model["forward_flops_per_token"]
    print(f"  {args.model}: {model['forward_flops_per_token'] / 1e6:.1f} MFLOP per token forward at S={args.seq_len} "
          f"({model['non_embedding_weights'] / 1e6:.1f} M non-embedding weights)\n  ceiling: {ceiling:,.0f} tokens/s "
          f"forward in fp32 ({ceiling / args.seq_len:,.0f} rows/s of {args.seq_len} tokens)")
    harness.write(args.out, {**machine.fields(), "threads": args.threads, "gemm_size": args.size, "native_bf16": bf16,
                             "bf16_flags": sorted(flags & set(NATIVE_BF16_FLAGS)), "gemm_gflops": gemm,
                             "model": args.model, **model})


if __name__ == "__main__":
    main()
