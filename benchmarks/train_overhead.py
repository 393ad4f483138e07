"""Throughput of the Ray Train fine-tuning loop (1 worker) against a bare PyTorch loop.

    python benchmarks/train_overhead.py                       # bundled e5, 10 steps × 3 epochs, 2 repeats
    python benchmarks/train_overhead.py --model tiny:bert --steps 20

Both loops run the same code on the same batches: ``xlt.engine.run_epoch`` with the ``FINETUNE`` workload (flatten →
``train_step``) over SIB-200 English train rows, batch 16, max length 128, the same seed and
``torch.set_num_threads(--cpus)``. They differ only in what feeds them and what runs around
them: the bare loop iterates a Python list of column batches in this process; the Ray loop is
``build_trainer(cfg).fit()`` with one worker of ``--cpus`` CPUs, fed by its shard of a Ray
Dataset (``iter_batches``, prefetching in the background). Shuffling is off in both, so the
batches (and their padded lengths) are identical.

One thread by default: on a shared 2-core machine, two OpenMP threads that wait for each other
measure the neighbours' load more than the loop (see train_overhead.md).

Throughput is examples/s of an epoch measured around ``run_epoch``: from asking for the first
batch to the end of the last step, so data iteration is included and Ray's start-up, the
per-epoch evaluation and the checkpoint are not (they are printed separately for the Ray run).
Epoch 1 includes one-off warm-up in both loops; the ratio is reported per epoch and over the
warm epochs (2..). Repeats alternate bare / Ray to spread the noise of a shared machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch

import harness
from xlt.logs import quiet_libraries
from xlt.data import resolve_data_dir
from xlt.report import markdown_table
from xlt.train import build_trainer, load_finetune_config, prepare
from xlt.train.batches import batches_of
from xlt.engine import epoch_seed, run_epoch
from xlt.metrics import TRAIN_DATA_WAIT_S, TRAIN_EPOCH_TIME_S, TRAIN_SAMPLES_PER_S
from xlt.train.workload import FINETUNE, finetune_training

REPO = Path(__file__).resolve().parents[1]


def get_args() -> argparse.Namespace:
    parser = harness.parser(__doc__, data_dir=True)
    parser.add_argument("--out", type=Path, default=harness.REPO / "results" / "benchmarks" / "train_overhead.json")
    parser.add_argument("--model", default="bundled:multilingual-e5-small")
    parser.add_argument("--steps", type=int, default=10, help="optimizer steps per epoch")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--cpus", type=int, default=1, help="torch threads = CPUs of the Ray worker (and of Ray)")
    parser.add_argument("--repeats", type=int, default=2)
    return parser.parse_args()


def bare_epochs(cfg, rows, steps: int) -> list[tuple[float, float]]:
    """(examples/s, seconds waiting for batches) per epoch of the plain loop, in this process."""
    torch.set_num_threads(cfg.scaling.torch_threads)
    training = finetune_training(cfg, steps)
    out = []
    for epoch in range(cfg.optim.epochs):
        torch.manual_seed(epoch_seed(cfg.optim.seed, epoch, 0))
        stats, seconds = run_epoch(training, FINETUNE, batches_of(rows, cfg.optim.batch_size), cfg, epoch=epoch,
                                   steps_per_epoch=steps)
        training.epoch = epoch + 1
        out.append((stats.examples / seconds, stats.data_wait_s))
    return out


def ray_epochs(cfg, name: str) -> tuple[list[tuple[float, float]], float, float]:
    """(examples/s, seconds waiting for batches) per epoch measured inside the Ray worker, the
    fit's wall time and the training epochs' share of it in seconds."""
    cfg = dataclasses.replace(cfg, output=dataclasses.replace(cfg.output, dir=f"{cfg.output.dir}/{name}"))
    start = time.perf_counter()
    result = build_trainer(cfg).fit()
    wall = time.perf_counter() - start
    history = result.metrics_dataframe.sort_values("train/epoch")
    return (list(zip(history[TRAIN_SAMPLES_PER_S], history[TRAIN_DATA_WAIT_S])), wall,
            float(history[TRAIN_EPOCH_TIME_S].sum()))


def main() -> None:
    args = get_args()
    quiet_libraries()
    storage = tempfile.mkdtemp(prefix="xlt-train-overhead-")
    cfg = load_finetune_config(REPO / "configs" / "finetune_sib200.yaml", [
        f"model.source={args.model}", "model.max_length=128", f"data.data_dir={resolve_data_dir(args.data_dir)}",
        "task.target_langs=[de]", f"data.max_examples={args.steps * args.batch_size}",
        f"optim.batch_size={args.batch_size}", f"optim.epochs={args.epochs}", "optim.shuffle_buffer=0",
        "optim.freeze_word_embeddings=true", "optim.log_every_steps=0",
        "evals=[{type: classification, split: val}, {type: classification, split: test}]",
        "scaling.num_workers=1", f"scaling.cpus_per_worker={args.cpus}", f"output.dir={storage}",
        f"output.num_to_keep={args.epochs}"])  # Result.metrics_dataframe only covers the kept checkpoints
    prepared = prepare(cfg)
    cfg, rows = prepared.config, prepared.train
    steps = cfg.steps_per_epoch(1)
    assert steps == args.steps, f"{len(rows)} rows give {steps} steps, not {args.steps}"

    import ray

    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    machine = harness.Machine()
    bare, ray_runs, walls, train_seconds = [], [], [], []
    for repeat in range(args.repeats):
        bare.append(bare_epochs(cfg, rows, steps))
        epochs, wall, seconds = ray_epochs(cfg, f"repeat{repeat}")
        ray_runs.append(epochs)
        walls.append(wall)
        train_seconds.append(seconds)
        print(f"repeat {repeat}: bare {[round(x, 2) for x, _ in bare[-1]]} ray {[round(x, 2) for x, _ in epochs]} "
              f"examples/s; Ray fit wall {wall:.1f} s", flush=True)
    ray.shutdown()
    shutil.rmtree(storage)  # the checkpoints of the e5 runs are ~650 MB per epoch

    def row(label: str, bare_runs: list, ray_runs_: list) -> dict:
        b, r = statistics.median(s for s, _ in bare_runs), statistics.median(s for s, _ in ray_runs_)
        return {"epoch": label, "bare examples/s": b, "ray examples/s": r, "ratio ray/bare": r / b,
                "bare data wait s": statistics.median(w for _, w in bare_runs),
                "ray data wait s": statistics.median(w for _, w in ray_runs_)}

    rows_out = [row(str(e + 1), [run[e] for run in bare], [run[e] for run in ray_runs]) for e in range(args.epochs)]
    warm = slice(1, None) if args.epochs > 1 else slice(0, None)
    rows_out.append(row("warm (median)", [x for run in bare for x in run[warm]],
                        [x for run in ray_runs for x in run[warm]]))
    niceness = os.environ.get("RAY_worker_niceness", "15 (Ray's default)")
    print(f"\n## Ray Train loop vs bare PyTorch: {args.model}, batch {args.batch_size}, {steps} steps × "
          f"{args.epochs} epochs, {args.cpus} threads, {args.repeats} repeats\n")
    print(markdown_table(rows_out, digits=2))
    print(f"\nRay fit wall time (median): {statistics.median(walls):.1f} s, of which training epochs "
          f"{statistics.median(train_seconds):.1f} s; the rest is worker start-up, model load, evaluation and "
          "checkpoints.")
    print(f"machine: {machine.line()}; ray {ray.__version__}, Ray worker niceness {niceness}, this process 0")
    harness.write(args.out, {**machine.fields(), "rows": rows_out, "bare": bare, "ray": ray_runs,
                             "ray_fit_wall_s": walls, "ray_train_epochs_s": train_seconds,
                             "niceness": niceness, "args": vars(args)})


if __name__ == "__main__":
    main()
