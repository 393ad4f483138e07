"""Fine-tuning steps with the encoder reading a step's texts in one pass vs in length-sorted passes.

    .venv/bin/python benchmarks/encoder_passes.py                 # 12 steps × 2 repeats a setting, ~15 min
    .venv/bin/python benchmarks/encoder_passes.py --model tiny:bert --steps 3 --repeats 1   # a check, seconds

``optim.encoder_pass_rows`` = R reads a step's texts in length-sorted passes of at most R (0: one pass): the same
features, less padding. In `studies/scl-pawsx.yaml`'s CE + CL (PAWS-X's English pairs, their §4.1 views, batch 16:
64 texts a step) each setting trains the same model on the same batches -> ``results/benchmarks/encoder_passes.json``.
"""

from __future__ import annotations

import dataclasses
import statistics

import torch

import harness
from xlt.logs import quiet_libraries
from xlt.report import markdown_table
from xlt.study import load_study
from xlt.train import load_finetune_config, prepare
from xlt.train.batches import ViewBatch
from xlt.train.workload import compute_losses, finetune_training

# studies/scl-pawsx.yaml's CE + CL: its views (Wang et al. 2022, §4.1 for PAWS-X) and objective (λ = 1, τ = 1.0)
CL_VARIANT = load_study(harness.REPO / "studies" / "scl-pawsx.yaml").variant("cl").set


def first_losses(cfg, batch: ViewBatch) -> dict[str, float]:
    torch.manual_seed(cfg.optim.seed)
    training = finetune_training(cfg, steps_per_epoch=1)
    training.model.eval()
    with torch.no_grad():
        _, parts = compute_losses(training.model, training.objectives, batch)
    return {name: float(value) for name, value in parts.items()}


def step_seconds(cfg, batches: list[ViewBatch]) -> list[float]:
    torch.manual_seed(cfg.optim.seed)
    training = finetune_training(cfg, steps_per_epoch=len(batches))
    return [harness.timed(lambda: harness.train_step(training, batch, cfg.optim.max_grad_norm))[0]
            for batch in batches]


def main() -> None:
    parser = harness.parser(__doc__, data_dir=True)
    parser.add_argument("--out", default=harness.REPO / "results" / "benchmarks" / "encoder_passes.json")
    parser.add_argument("--model", default="bundled:multilingual-e5-small")
    parser.add_argument("--steps", type=int, default=12, help="training steps a setting and repeat")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--pass-rows", type=int, nargs="+", default=[0, 16, 32],
                        help="optim.encoder_pass_rows settings to compare (0 = one pass)")
    args = parser.parse_args()
    quiet_libraries()
    prepared = prepare(load_finetune_config(harness.REPO / "configs" / "finetune_pawsx.yaml", [
        f"model.source={args.model}", f"data.data_dir={harness.data_root(args.data_dir)}",
        f"data.max_examples={args.steps * 16}", "optim.batch_size=16", *CL_VARIANT]))
    cfg = prepared.config
    torch.set_num_threads(cfg.scaling.torch_threads)
    batches = harness.view_batches(prepared, cfg.optim.batch_size)
    configs = {r: dataclasses.replace(cfg, optim=dataclasses.replace(cfg.optim, encoder_pass_rows=r))
               for r in args.pass_rows}
    machine = harness.Machine()
    seconds: dict[int, list[float]] = {r: [] for r in args.pass_rows}
    for repeat in range(args.repeats):  # repeats alternate the settings
        for r in args.pass_rows:
            run = step_seconds(configs[r], batches)
            seconds[r].extend(run[1:] or run)  # the first step warms up
            print(f"repeat {repeat}, encoder_pass_rows={r}: {statistics.median(run):.2f} s a step", flush=True)
    encoder = finetune_training(cfg, steps_per_epoch=1).classifier.encoder
    lengths = [encoder.lengths(b.texts) for b in batches]
    losses = {r: first_losses(configs[r], batches[0]) for r in args.pass_rows}
    median = {r: statistics.median(s) for r, s in seconds.items()}
    base, first, results = losses[args.pass_rows[0]], median[args.pass_rows[0]], []
    for r in args.pass_rows:  # each pass pads to its longest text
        padded = sum(harness.padded_tokens(n, r or len(n), sort_by_length=bool(r)) for n in lengths)
        results.append({"encoder_pass_rows": r or "0 (one pass)", "s a step (median)": median[r],
                        "vs first": median[r] / first, "positions a step": round(padded / len(batches)),
                        "padding share": 1 - sum(map(sum, lengths)) / padded,
                        "max |Δ loss| (dropout off)": max(abs(losses[r][k] - base[k]) for k in base)})
    texts = sum(len(b) for b in batches) / len(batches)
    print(f"\n## {args.model}, PAWS-X with §4.1's views, CE + CL: {len(batches)} steps of {texts:.0f} texts × "
          f"{args.repeats} repeats\n\n{markdown_table(results, digits=3)}\n\n{machine.date}; {machine.line()}")
    harness.write(args.out, {**machine.fields(), "model": args.model, "steps": len(batches), "repeats": args.repeats,
                             "texts_per_step": texts, "rows": results,
                             "seconds": {str(r): s for r, s in seconds.items()}})

if __name__ == "__main__":
    main()
