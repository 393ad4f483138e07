"""Throughput of the Ray Train fine-tuning loop (1 worker) against a bare PyTorch loop.

    python benchmarks/train_overhead.py                       # bundled e5, 10 steps × 3 epochs, 2 repeats
    python benchmarks/train_overhead.py --model tiny:bert --steps 20

Both run ``xlt.engine.run_epoch`` (``FINETUNE``) over the same unshuffled SIB-200 English batches, seed and
``--cpus`` threads (one by default: on a shared 2-core machine two threads measure the neighbours): the bare loop
over a list in this process, the Ray loop as ``build_trainer(cfg).fit()`` fed by its Ray Dataset shard. Examples/s
around ``run_epoch`` (Ray's start-up, evaluation and checkpoints apart), per epoch and over the warm epochs (2..);
repeats alternate the loops. Writes ``results/benchmarks/train_overhead.json``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import tempfile
import time

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
    """(examples/s, seconds waiting for batches) per epoch inside the Ray worker, the fit's wall seconds and
    the training epochs' seconds."""
    cfg = dataclasses.replace(cfg, output=dataclasses.replace(cfg.output, dir=f"{cfg.output.dir}/{name}"))
    start = time.perf_counter()
    result = build_trainer(cfg).fit()
    wall = time.perf_counter() - start
    history = result.metrics_dataframe.sort_values("train/epoch")
    return (list(zip(history[TRAIN_SAMPLES_PER_S], history[TRAIN_DATA_WAIT_S])), wall,
            float(history[TRAIN_EPOCH_TIME_S].sum()))


def row(label: str, bare: list, ray: list) -> dict:
    b, r = statistics.median(s for s, _ in bare), statistics.median(s for s, _ in ray)
    return {"epoch": label, "bare examples/s": b, "ray examples/s": r, "ratio ray/bare": r / b,
            "bare data wait s": statistics.median(w for _, w in bare),
            "ray data wait s": statistics.median(w for _, w in ray)}


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
        "task.target_langs=[de]", f"data.max_examples={args.steps * args.batch_size}",
        f"optim.batch_size={args.batch_size}", f"optim.epochs={args.epochs}", "optim.shuffle_buffer=0",
        "optim.freeze_word_embeddings=true", "optim.log_every_steps=0",
        "evals=[{type: classification, split: val}, {type: classification, split: test}]",
        "scaling.num_workers=1", f"scaling.cpus_per_worker={args.cpus}", f"output.dir={storage}",
        f"output.num_to_keep={args.epochs}"]))  # Result.metrics_dataframe only covers the kept checkpoints
    cfg, rows = prepared.config, prepared.train
    steps = cfg.steps_per_epoch(1)
    assert steps == args.steps, f"{len(rows)} rows give {steps} steps, not {args.steps}"

    import ray

    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    machine = harness.Machine()
    bare, fits = [], []
    for repeat in range(args.repeats):
        bare.append(bare_epochs(cfg, rows, steps))
        fits.append(ray_epochs(cfg, f"repeat{repeat}"))
        print(f"repeat {repeat}: bare {[round(x, 2) for x, _ in bare[-1]]} ray "
              f"{[round(x, 2) for x, _ in fits[-1][0]]} examples/s; Ray fit wall {fits[-1][1]:.1f} s", flush=True)
    ray.shutdown()
    ray_runs, walls, train_seconds = map(list, zip(*fits))
    shutil.rmtree(storage)  # the checkpoints of the e5 runs are ~650 MB per epoch

    table = [row(str(e + 1), [run[e] for run in bare], [run[e] for run in ray_runs]) for e in range(args.epochs)]
    warm = slice(1 if args.epochs > 1 else 0, None)
    table.append(row("warm (median)", [x for run in bare for x in run[warm]],
                     [x for run in ray_runs for x in run[warm]]))
    niceness = os.environ.get("RAY_worker_niceness", "15 (Ray's default)")
    print(f"\n## Ray Train loop vs bare PyTorch: {args.model}, batch {args.batch_size}, {steps} steps × "
          f"{args.epochs} epochs, {args.cpus} threads, {args.repeats} repeats\n\n{markdown_table(table, digits=2)}\n\n"
          f"Ray fit wall time (median): {statistics.median(walls):.1f} s, of which training epochs "
          f"{statistics.median(train_seconds):.1f} s; the rest is worker start-up, model load, evaluation and "
          f"checkpoints.\nmachine: {machine.line()}; ray {ray.__version__}, Ray worker niceness {niceness}, "
          "this process 0")
    harness.write(args.out, {**machine.fields(), "rows": table, "bare": bare, "ray": ray_runs,
                             "ray_fit_wall_s": walls, "ray_train_epochs_s": train_seconds,
                             "niceness": niceness, "args": vars(args)})


if __name__ == "__main__":
    main()
