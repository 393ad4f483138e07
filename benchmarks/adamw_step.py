"""AdamW's step on CPU: the for-each implementation (torch's default) against the fused kernel.

    python benchmarks/adamw_step.py --threads 2 --out benchmarks/adamw_step.json

The LM learner's optimizer step updates e5-small's trainable weights (word embeddings frozen: ~22 M parameters)
once per batch; ``AdamW(fused=True)`` does it in one kernel per parameter group on CPU (torch ≥ 2.4). Both are
timed, in turns, on the same parameters and gradients, their weights compared afterwards (equal up to rounding)."""

from __future__ import annotations

import os

import torch

import harness
from xlt.models import EncoderConfig, load_encoder


def time_steps(params, fused: bool, steps: int, seed: int = 0) -> tuple[float, list]:
    """Seconds per step of AdamW over copies of ``params`` after a warm-up step, and the copies after the steps."""
    own = [torch.nn.Parameter(p.detach().clone()) for p in params]
    generator = torch.Generator().manual_seed(seed)
    for p in own:
        p.grad = torch.randn(p.shape, generator=generator) * 1e-3
    optimizer = torch.optim.AdamW(own, lr=1e-4, weight_decay=0.01, fused=fused, foreach=None if fused else True)
    optimizer.step()  # warm-up: the moments are allocated here
    return harness.timed(lambda: [optimizer.step() for _ in range(steps)])[0] / steps, own


def main() -> None:
    parser = harness.parser(__doc__, "adamw_step.json")
    parser.add_argument("--model", default="bundled:multilingual-e5-small")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    machine = harness.Machine()
    backbone = load_encoder(EncoderConfig(source=args.model)).backbone
    backbone.get_input_embeddings().weight.requires_grad_(False)  # as the LM learner trains it
    params = [p for p in backbone.parameters() if p.requires_grad]
    times: dict[str, list[float]] = {"foreach": [], "fused": []}
    for _ in range(args.rounds):
        after = {}
        for name in times:
            seconds, after[name] = time_steps(params, name == "fused", args.steps)
            times[name].append(seconds)
        difference = max(float((a - b).abs().max()) for a, b in zip(after["fused"], after["foreach"]))
    best = {name: min(values) * 1e3 for name, values in times.items()}
    result = {**machine.fields(), "threads": args.threads, "model": args.model,
              "parameters": sum(p.numel() for p in params), "steps": args.steps, "rounds": args.rounds,
              "seconds_per_step": times, "best_ms": best, "speedup_fused": best["foreach"] / best["fused"],
              "max_abs_difference": difference}
    print(f"{machine.line()}; {result['parameters'] / 1e6:.1f} M trained parameters of {args.model}", *(
        f"  AdamW {name}: {ms:.1f} ms per step (best of {args.rounds} × {args.steps})" for name, ms in best.items()),
        f"  fused / foreach speed-up {result['speedup_fused']:.2f}×; max |Δ weight| after {args.steps + 1} steps "
        f"{difference:.1e}", sep="\n")
    harness.write(args.out, result)


if __name__ == "__main__":
    main()
