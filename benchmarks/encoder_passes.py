"""Fine-tuning steps with the encoder reading a step's texts in one pass vs in length-sorted passes.

    .venv/bin/python benchmarks/encoder_passes.py                 # 12 steps × 2 repeats a setting, ~15 min
    .venv/bin/python benchmarks/encoder_passes.py --model tiny:bert --steps 3 --repeats 1   # a check, seconds

In `studies/scl-pawsx.yaml`'s CE + CL setting (PAWS-X's English pairs with their §4.1 views, batch 16: 64 texts a
step), ``optim.encoder_pass_rows`` = R (0: one pass) reads them in length-sorted passes of at most R: the same
features, less padding. Each setting trains the same model on the same batches, repeats alternating the settings:
median seconds a step, input positions, padding share, and the first batch's largest loss difference from the
first setting's (dropout off). Writes ``results/benchmarks/encoder_passes.json``.
"""

from __future__ import annotations

import dataclasses
import statistics

import numpy as np
import torch

import harness
from xlt.augment import CrossLingualAugment
from xlt.logs import quiet_libraries
from xlt.report import markdown_table
from xlt.study import load_study
from xlt.train import load_finetune_config, prepare
from xlt.train.batches import ViewBatch, batches_of, flatten_batch
from xlt.train.data import augmentation_sources
from xlt.train.workload import compute_losses, finetune_training

# studies/scl-pawsx.yaml's CE + CL: its views (Wang et al. 2022, §4.1 for PAWS-X) and objective (λ = 1, τ = 1.0)
CL_VARIANT = load_study(harness.REPO / "studies" / "scl-pawsx.yaml").variant("cl").set


def with_views(rows: list[dict], cfg, task) -> list[dict]:
    """``rows`` with the view columns the training pipeline's augmentation UDF adds to each."""
    augment = CrossLingualAugment.from_config(cfg.data.augment, **augmentation_sources(cfg.data, task))
    out = augment({key: np.array([row[key] for row in rows], dtype=object) for key in rows[0]})
    return [{key: out[key][i] for key in out} for i in range(len(rows))]


def positions(encoder, batch: ViewBatch, pass_rows: int) -> tuple[int, int]:
    """(encoder input positions, of which text) of one step: each pass pads to its longest text."""
    lengths = sorted(encoder.lengths(batch.texts)) if pass_rows else encoder.lengths(batch.texts)
    size = pass_rows or len(lengths)
    passes = [lengths[start:start + size] for start in range(0, len(lengths), size)]
    return sum(len(p) * max(p) for p in passes), sum(lengths)


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
    batch_size = 16
    prepared = prepare(load_finetune_config(harness.REPO / "configs" / "finetune_pawsx.yaml", [
        f"model.source={args.model}", f"data.data_dir={harness.data_root(args.data_dir)}",
        f"data.max_examples={args.steps * batch_size}", f"optim.batch_size={batch_size}", *CL_VARIANT]))
    cfg = prepared.config
    torch.set_num_threads(cfg.scaling.torch_threads)
    label_index = {label: i for i, label in enumerate(cfg.task.labels)}
    batches = [flatten_batch(b, label_index)
               for b in batches_of(with_views(prepared.train, cfg, prepared.task), batch_size)]
    configs = {r: dataclasses.replace(cfg, optim=dataclasses.replace(cfg.optim, encoder_pass_rows=r))
               for r in args.pass_rows}

    machine = harness.Machine()
    encoder = finetune_training(cfg, steps_per_epoch=1).classifier.encoder
    seconds: dict[int, list[float]] = {r: [] for r in args.pass_rows}
    for repeat in range(args.repeats):
        for r in args.pass_rows:
            run = step_seconds(configs[r], batches)
            seconds[r].extend(run[1:] or run)  # the first step warms up
            print(f"repeat {repeat}, encoder_pass_rows={r}: {statistics.median(run):.2f} s a step", flush=True)

    losses = {r: first_losses(configs[r], batches[0]) for r in args.pass_rows}
    baseline, first = losses[args.pass_rows[0]], statistics.median(seconds[args.pass_rows[0]])
    results = []
    for r in args.pass_rows:
        padded, text = map(sum, zip(*(positions(encoder, b, r) for b in batches)))
        results.append({"encoder_pass_rows": r or "0 (one pass)", "s a step (median)": statistics.median(seconds[r]),
                        "vs first": statistics.median(seconds[r]) / first,
                        "positions a step": round(padded / len(batches)), "padding share": 1 - text / padded,
                        "max |Δ loss| (dropout off)": max(abs(losses[r][k] - baseline[k]) for k in baseline)})
    texts = sum(len(b) for b in batches) / len(batches)
    print(f"\n## {args.model}, PAWS-X with §4.1's views, CE + CL: {len(batches)} steps of {texts:.0f} texts "
          f"× {args.repeats} repeats, from {machine.date}\n\n{markdown_table(results, digits=3)}\n\n"
          f"machine: {machine.line()}")
    harness.write(args.out, {**machine.fields(), "model": args.model, "steps": len(batches), "repeats": args.repeats,
                             "texts_per_step": texts, "rows": results,
                             "seconds": {str(r): s for r, s in seconds.items()}})


if __name__ == "__main__":
    main()
