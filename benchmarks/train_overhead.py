"""Throughput of the Ray Train fine-tuning loop (1 worker) against a bare PyTorch loop.

    python benchmarks/train_overhead.py     # bundled e5, 10 steps × 3 epochs, 2 repeats; --model tiny:bert: a check

Both run ``xlt.engine.run_epoch`` on the same unshuffled SIB-200 English batches, seed and ``--cpus`` threads: bare
in this process, Ray as ``build_trainer(cfg).fit()`` on its Dataset shard; repeats alternate. Writes
``results/benchmarks/train_overhead.json``."""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import tempfile
import time

import ray
import torch

import harness
from xlt.engine import epoch_seed, run_epoch
from xlt.logs import quiet_libraries
from xlt.metrics import TRAIN_DATA_WAIT_S, TRAIN_EPOCH_TIME_S, TRAIN_SAMPLES_PER_S
from xlt.report import markdown_table
from xlt.train import build_trainer, load_finetune_config, prepare
from xlt.train.batches import batches_of
from xlt.train.workload import FINETUNE, finetune_training


def bare_epochs(cfg, rows, steps: int) -> list[tuple[float, float]]:
    """(examples/s, seconds waiting for batches) per epoch of the plain loop, in this process."""
    torch.set_num_threads(cfg.scaling.torch_threads)
    training, out = finetune_training(cfg, steps), []
    for epoch in range(cfg.optim.epochs):
        torch.manual_seed(epoch_seed(cfg.optim.seed, epoch, 0))
        stats, seconds = run_epoch(training, FINETUNE, batches_of(rows, cfg.optim.batch_size), cfg, epoch=epoch,
                                   steps_per_epoch=steps)
        training.epoch = epoch + 1
        out.append((stats.examples / seconds, stats.data_wait_s))
    return out


def row(label: str, bare: list, ray: list) -> dict:
    (b, b_wait), (r, r_wait) = ([statistics.median(x[i] for x in runs) for i in (0, 1)] for runs in (bare, ray))
    return {"epoch": label, "bare examples/s": b, "ray examples/s": r, "ratio ray/bare": r / b,
            "bare data wait s": b_wait, "ray data wait s": r_wait}


def main() -> None:
    parser = harness.parser(__doc__, data_dir=True)
    parser.add_argument("--out", default=harness.REPO / "results" / "benchmarks" / "train_overhead.json")
    parser.add_argument("--model", default="bundled:multilingual-e5-small")
    parser.add_argument("--steps", type=int, default=10, help="optimizer steps per epoch")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--cpus", type=int, default=1, help="torch threads = CPUs of the Ray worker (and of Ray)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    quiet_libraries()
    storage = tempfile.mkdtemp(prefix="xlt-train-overhead-")
    prepared = prepare(load_finetune_config(harness.REPO / "configs" / "finetune_sib200.yaml", [
        f"model.source={args.model}", "model.max_length=128", f"data.data_dir={harness.data_root(args.data_dir)}",
        "task.target_langs=[de]", f"data.max_examples={args.steps * args.batch_size}", "optim.shuffle_buffer=0",
        f"optim.batch_size={args.batch_size}", f"optim.epochs={args.epochs}", "optim.freeze_word_embeddings=true",
        "optim.log_every_steps=0", "evals=[{type: classification, split: val}, {type: classification, split: test}]",
        "scaling.num_workers=1", f"scaling.cpus_per_worker={args.cpus}", f"output.dir={storage}",
        f"output.num_to_keep={args.epochs}"]))  # Result.metrics_dataframe only covers the kept checkpoints
    cfg, rows = prepared.config, prepared.train
    steps = cfg.steps_per_epoch(1)
    assert steps == args.steps, f"{len(rows)} rows give {steps} steps, not {args.steps}"
    with harness.local_ray(args.cpus, address="local"):
        machine = harness.Machine()
        bare, ray_runs, walls, train_seconds = [], [], [], []
        for repeat in range(args.repeats):
            bare.append(bare_epochs(cfg, rows, steps))
            output = dataclasses.replace(cfg.output, dir=f"{cfg.output.dir}/repeat{repeat}")
            start = time.perf_counter()
            result = build_trainer(dataclasses.replace(cfg, output=output)).fit()
            walls.append(time.perf_counter() - start)
            history = result.metrics_dataframe.sort_values("train/epoch")
            ray_runs.append(list(zip(history[TRAIN_SAMPLES_PER_S], history[TRAIN_DATA_WAIT_S])))
            train_seconds.append(float(history[TRAIN_EPOCH_TIME_S].sum()))
            print(f"repeat {repeat}: bare {[round(x, 2) for x, _ in bare[-1]]} ray "
                  f"{[round(x, 2) for x, _ in ray_runs[-1]]} examples/s; Ray fit wall {walls[-1]:.1f} s", flush=True)
    shutil.rmtree(storage)  # the checkpoints of the e5 runs are ~650 MB per epoch
    warm = slice(1 if args.epochs > 1 else 0, None)
    table = [row(str(e + 1), [run[e] for run in bare], [run[e] for run in ray_runs]) for e in range(args.epochs)]
    table.append(row("warm (median)", *([x for run in runs for x in run[warm]] for runs in (bare, ray_runs))))
    niceness = os.environ.get("RAY_worker_niceness", "15 (Ray's default)")
    print(f"\n## Ray Train loop vs bare PyTorch: {args.model}, batch {args.batch_size}, {steps} steps × "
          f"{args.epochs} epochs, {args.cpus} threads, {args.repeats} repeats\n\n{markdown_table(table, digits=2)}\n\n"
          f"Ray fit wall time (median): {statistics.median(walls):.1f} s, of which training epochs "
          f"{statistics.median(train_seconds):.1f} s (the rest: worker start-up, model load, evaluation, checkpoints)"
          f".\nmachine: {machine.line()}; ray {ray.__version__}, Ray worker niceness {niceness}, this process 0")
    harness.write(args.out, {**machine.fields(), "rows": table, "bare": bare, "ray": ray_runs, "ray_fit_wall_s": walls,
                             "ray_train_epochs_s": train_seconds, "niceness": niceness, "args": vars(args)})

if __name__ == "__main__":
    main()
