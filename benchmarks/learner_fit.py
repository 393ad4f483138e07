"""A co-training learner's fits on Ray Train (start-up included) against the same fits in this process.

    python benchmarks/learner_fit.py                      # both learners of configs/cotrain_sib200.yaml
    python benchmarks/learner_fit.py --rows 200 --fits 3 --workers 2

Each learner of the preset (``lm`` and ``emb``, the table names their models) fits ``--fits`` times
(a co-training job's iterations) on the first ``--rows`` SIB-200 English train rows, each from the pretrained model
with the same seed, epochs, batches and threads, three ways: in this process (``start_training``, ``run_epoch``; no
Ray: a learner actor before its fits moved to Ray Train); one run serving every fit (``learner_service`` where the
preset places it: what co-training runs now, ``xlt.engine.fits``); a run per fit (as co-training ran before).
Throughput is fits × rows × K / wall seconds; the ratio to the in-process fits is the issue's target (>= 0.90).
``--workers 2`` adds the LM learner on 2 Ray Train workers of 1 CPU each (DDP over gloo) against 1 worker with both
CPUs. Writes benchmarks/learner_fit.md.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path

import harness
from xlt.cli import init_ray
from xlt.cotrain import load_cotrain_config, prepare
from xlt.cotrain.learner import fit, learner_config, learner_service
from xlt.engine import ScalingSettings, epoch_seed, run_epoch, start_training
from xlt.logs import quiet_libraries
from xlt.report import markdown_table
from xlt.storage import OutputSettings
from xlt.train.batches import batches_of
from xlt.train.workload import FINETUNE

REPO = harness.REPO


def fit_here(cfg, rows):
    """The learner's fit in this process, at its ``optim.precision``: its ``Training``, and each
    epoch's statistics and wall seconds."""
    import torch

    torch.set_num_threads(cfg.scaling.torch_threads)
    training = start_training(FINETUNE, cfg, cfg.steps_per_epoch(1))
    epochs = []
    for epoch in range(cfg.optim.epochs):
        torch.manual_seed(epoch_seed(cfg.optim.seed, epoch, 0))
        epochs.append(run_epoch(training, FINETUNE, batches_of(rows, cfg.optim.batch_size), cfg, epoch=epoch))
    return training, epochs


def on_ray_train(name, learner, data, rows, evaluation, fits: int, storage: OutputSettings) -> list[float]:
    """Wall seconds of each of ``fits`` fits served by one run; its start-up counts in the first,
    its end in the last."""
    times, start = [], time.perf_counter()
    with learner_service(name, learner, data.task, len(rows), evaluation, "test", storage) as service:
        for index in range(fits):
            fit(service, name, learner, data.task, rows, index, storage, "test")
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
    times[-1] += time.perf_counter() - start
    return times


def main() -> None:
    parser = harness.parser(__doc__, "learner_fit.md")
    parser.add_argument("--config", default=str(REPO / "configs" / "cotrain_sib200.yaml"))
    parser.add_argument("--rows", type=int, default=400, help="English train rows each fit trains on")
    parser.add_argument("--fits", type=int, default=3, help="fits per learner (co-training iterations)")
    parser.add_argument("--workers", type=int, default=1, help="2: also the LM learner on 2 workers")
    parser.add_argument("--in-process-first", action="store_true",
                        help="fit in process before the served fits (the machine's speed may drift through a run)")
    args = parser.parse_args()
    quiet_libraries()
    import ray

    cotrain = load_cotrain_config(args.config)
    data = prepare(cotrain)
    rows = data.labeled[: args.rows]
    evaluation = list({r["lang"]: r for r in data.evaluation_rows}.values())  # one row per language
    init_ray()  # as the jobs start Ray (its Train poll interval included)
    machine = harness.Machine()
    storage = OutputSettings(tempfile.mkdtemp(prefix="xlt-learner-fit-"), num_to_keep=1)  # as co-training's
    cases = [(name, cotrain.learner(name), True) for name in ("lm", "emb")]
    if args.workers == 2:
        lm = cotrain.learner("lm")
        cases += [("lm 1 worker × 2 CPUs", dataclasses.replace(lm, scaling=ScalingSettings(cpus_per_worker=2)), False),
                  ("lm 2 workers × 1 CPU", dataclasses.replace(lm, scaling=ScalingSettings(num_workers=2)), False)]
    table, details, run = [], [], 0
    for label, learner, compare in cases:
        cfg = learner_config("bench", learner, data.task, storage, len(rows))
        work = args.fits * len(rows) * learner.optim.epochs
        # Each fit in this process, its model load included (as in a learner actor).
        in_process = lambda: [harness.timed(lambda: fit_here(cfg, rows))[0] for _ in range(args.fits)]  # noqa: E731
        local = in_process() if compare and args.in_process_first else []
        run += 1
        served = on_ray_train(f"bench{run}", learner, data, rows, evaluation, args.fits, storage)
        workers = learner.scaling.num_workers
        where = "in the driver" if workers == 0 else f"{workers} Ray Train worker(s)"
        entry = {"learner": label, "model": learner.model.source.split(":")[-1], "K": learner.optim.epochs,
                 "served on": where, "one run: s": sum(served), "one run: rows/s": work / sum(served)}
        details.append(f"{label}, one run, per fit (s): {', '.join(f'{t:.1f}' for t in served)}")
        if compare:
            local = local or in_process()
            per_fit = []
            for _ in range(args.fits):
                run += 1
                per_fit += on_ray_train(f"bench{run}", learner, data, rows, evaluation, 1, storage)
            entry.update({"run per fit: s": sum(per_fit), "in process: s": sum(local),
                          "in process: rows/s": work / sum(local),
                          "ratio one run": sum(local) / sum(served), "ratio run per fit": sum(local) / sum(per_fit)})
            details += [f"{label}, a run per fit (s): {', '.join(f'{t:.1f}' for t in per_fit)}",
                        f"{label}, in process, per fit (s): {', '.join(f'{t:.1f}' for t in local)}"]
        print(entry, flush=True)
        table.append(entry)
    ray.shutdown()
    text = "\n".join([
        machine.header("A co-training learner's fits: Ray Train vs in process"),
        f"{args.fits} fits of {len(rows)} SIB-200 English train rows each, the learners of "
        f"`{Path(args.config).relative_to(REPO)}`; wall time of all fits, Ray Train's start-up and end "
        "included, each fit with a checkpoint per epoch and an evaluation of one row per language.", "",
        markdown_table(table, digits=2), "", *[f"- {line}" for line in details], ""])
    print(text)
    harness.write(args.out, text)


if __name__ == "__main__":
    main()
