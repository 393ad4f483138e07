"""A co-training learner's fit on Ray Train (start-up included) against the same fit in this process.

    python benchmarks/learner_fit.py                      # both learners of configs/cotrain_sib200.yaml
    python benchmarks/learner_fit.py --rows 200 --repeats 1

Each learner of the preset (LM: e5, word embeddings frozen, K = 3; embedding: a head on frozen
USE-m3, K = 10) fits on the first ``--rows`` SIB-200 English train rows, same seed, epochs,
batches and torch threads, two ways:

- in process: ``xlt.engine.start_training`` with the ``FINETUNE`` workload and ``run_epoch`` per
  epoch over the rows in column batches, in this process (no Ray): what a learner actor did
  before its fits moved to Ray Train;
- Ray Train: ``xlt.cotrain.learner.learner_trainer(...).fit()``, what co-training runs now:
  the controller and worker start-up, Ray Data ingest, the K epochs, a checkpoint per epoch and
  the evaluation after the last epoch, which is kept to one row per language here.

Throughput is rows × K / wall seconds; the ratio Ray Train / in process is the issue's target
(≥ 0.90). Repeats alternate the two ways. ``--workers 2`` adds the LM learner on 2 Ray Train
workers of 1 CPU each (DDP over gloo) against 1 worker with both CPUs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from machine import cpu_model  # noqa: E402
from xlt.cli import quiet_libraries  # noqa: E402
from xlt.cotrain import load_cotrain_config, load_data  # noqa: E402
from xlt.cotrain.learner import fit_result, learner_config, learner_trainer  # noqa: E402
from xlt.engine import ScalingSettings, epoch_seed, run_epoch, start_training  # noqa: E402
from xlt.report import markdown_table  # noqa: E402
from xlt.train.batches import batches_of  # noqa: E402
from xlt.train.loop import FINETUNE  # noqa: E402


def get_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(REPO / "configs" / "cotrain_sib200.yaml"))
    parser.add_argument("--rows", type=int, default=400, help="English train rows each fit trains on")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1, help="2: also the LM learner on 2 workers")
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "learner_fit.md"))
    return parser.parse_args()


def in_process(cfg, rows) -> float:
    """Wall seconds of the fit in this process (model load included, as in a learner actor)."""
    import torch

    start = time.perf_counter()
    torch.set_num_threads(cfg.scaling.torch_threads)
    training = start_training(FINETUNE, cfg, cfg.steps_per_epoch(1))
    for epoch in range(cfg.optim.epochs):
        torch.manual_seed(epoch_seed(cfg.optim.seed, epoch, 0))
        run_epoch(training, FINETUNE, batches_of(rows, cfg.optim.batch_size), cfg, epoch=epoch)
    return time.perf_counter() - start


def on_ray_train(name, learner, task, rows, evaluation, run: int, storage: str) -> float:
    start = time.perf_counter()
    result = learner_trainer(name, learner, task, rows, evaluation, run, storage).fit()
    fit_result(result, len(rows), "test")
    return time.perf_counter() - start


def main() -> None:
    args = get_args()
    quiet_libraries()
    import ray

    cotrain = load_cotrain_config(args.config)
    data = load_data(cotrain)
    rows = data.labeled[: args.rows]
    evaluation = list({r["lang"]: r for r in data.evaluation_rows}.values())  # one row per language
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    load_start = os.getloadavg()[0]
    storage = tempfile.mkdtemp(prefix="xlt-learner-fit-")
    cases = [(name, cotrain.learner(name)) for name in ("lm", "emb")]
    if args.workers == 2:
        lm = cotrain.learner("lm")
        cases += [("lm 1 worker × 2 CPUs", dataclasses.replace(lm, scaling=ScalingSettings(cpus_per_worker=2))),
                  ("lm 2 workers × 1 CPU", dataclasses.replace(lm, scaling=ScalingSettings(num_workers=2)))]
    table, run = [], 0
    for label, learner in cases:
        cfg = learner_config("bench", learner, data.task, storage, 0, len(rows))
        local, remote = [], []
        for _ in range(args.repeats):
            if "worker" not in label:
                local.append(in_process(cfg, rows))
            run += 1
            remote.append(on_ray_train("bench", learner, data.task, rows, evaluation, run, storage))
            print(f"{label}: in process {local[-1:] or '-'} s, Ray Train {remote[-1]:.1f} s", flush=True)
        work = len(rows) * learner.optim.epochs
        entry = {"learner": label, "model": learner.model.source.split(":")[-1], "K": learner.optim.epochs,
                 "Ray Train rows/s": work / statistics.median(remote),
                 "Ray Train s (median)": statistics.median(remote)}
        if local:
            entry.update({"in process rows/s": work / statistics.median(local),
                          "in process s (median)": statistics.median(local),
                          "ratio": statistics.median(local) / statistics.median(remote)})
        table.append(entry)
    ray.shutdown()
    command = " ".join(["python benchmarks/learner_fit.py", *sys.argv[1:]])
    text = "\n".join([
        "# A co-training learner's fit: Ray Train vs in process", "",
        f"Command: `{command}`. Machine: {cpu_model()}, {os.cpu_count()} cores; 1-minute load average "
        f"{load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end. {len(rows)} SIB-200 English train "
        f"rows, the learners of `{Path(args.config).relative_to(REPO)}`, {args.repeats} repeat(s), median wall "
        "time; Ray Train includes start-up, ingest, a checkpoint per epoch and an evaluation of one row per "
        "language.", "", markdown_table(table, digits=2), ""])
    Path(args.output).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
