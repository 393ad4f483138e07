"""AdamW's step on CPU: the for-each implementation (torch's default) against the fused kernel.

The LM learner's optimizer step updates the trainable weights of e5-small (word embeddings frozen:
~22 M parameters) once per batch. ``torch.optim.AdamW(fused=True)`` does it in one fused kernel
per parameter group on CPU (torch ≥ 2.4) instead of a chain of for-each tensor operations. Both
are timed on the same parameters and gradients, ``--steps`` steps each after a warm-up step, in
turns, and their results compared: the same update up to float rounding.

    python benchmarks/adamw_step.py --threads 2 --out benchmarks/adamw_step.json
"""

from __future__ import annotations

import os
import time

import harness


def trainable_parameters(source: str):
    """The parameters the LM learner trains (word embeddings frozen), as fresh leaf tensors."""
    import torch

    from xlt.models import EncoderConfig, load_encoder

    backbone = load_encoder(EncoderConfig(source=source)).backbone
    backbone.get_input_embeddings().weight.requires_grad_(False)
    return [torch.nn.Parameter(p.detach().clone()) for p in backbone.parameters() if p.requires_grad]


def time_steps(params, fused: bool, steps: int, seed: int = 0) -> tuple[float, list]:
    """Seconds per step of AdamW over ``params`` (copies), and the parameters after the steps."""
    import torch

    own = [torch.nn.Parameter(p.detach().clone()) for p in params]
    generator = torch.Generator().manual_seed(seed)
    grads = [torch.randn(p.shape, generator=generator) * 1e-3 for p in own]
    optimizer = torch.optim.AdamW(own, lr=1e-4, weight_decay=0.01, fused=fused, foreach=None if fused else True)
    for p, g in zip(own, grads):
        p.grad = g
    optimizer.step()  # warm-up: the moments are allocated here
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.step()
    return (time.perf_counter() - start) / steps, own


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = harness.parser(__doc__, "adamw_step.json")
    parser.add_argument("--model", default="bundled:multilingual-e5-small")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    machine = harness.Machine()
    params = trainable_parameters(args.model)
    times: dict[str, list[float]] = {"foreach": [], "fused": []}
    for _ in range(args.rounds):
        for name in times:
            seconds, after = time_steps(params, name == "fused", args.steps)
            times[name].append(seconds)
            if name == "foreach":
                reference = after
            else:
                difference = max(float((a - b).abs().max()) for a, b in zip(after, reference))
    best = {name: min(values) for name, values in times.items()}
    result = {**machine.fields(), "threads": args.threads, "model": args.model,
              "parameters": sum(p.numel() for p in params), "steps": args.steps, "rounds": args.rounds,
              "seconds_per_step": times, "best_ms": {k: v * 1e3 for k, v in best.items()},
              "speedup_fused": best["foreach"] / best["fused"], "max_abs_difference": difference}
    print(f"{machine.line()}; {result['parameters'] / 1e6:.1f} M trained parameters of {args.model}")
    for name, ms in result["best_ms"].items():
        print(f"  AdamW {name}: {ms:.1f} ms per step (best of {args.rounds} × {args.steps})")
    print(f"  fused / foreach speed-up {result['speedup_fused']:.2f}×; max |Δ weight| after {args.steps + 1} steps "
          f"{difference:.1e}")
    harness.write(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
