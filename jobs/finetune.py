"""Fine-tune an encoder + linear head on any task with Ray Train; evaluate transfer per language.

    python jobs/finetune.py --config configs/finetune_sib200.yaml
    python jobs/finetune.py --config configs/finetune_xnli.yaml           # sentence pairs
    python jobs/finetune.py --config configs/finetune_sib200.yaml --set 'task={include: configs/tasks/nusax.yaml}'
    python jobs/finetune.py --config my_task.yaml --set task.target_langs=[de,fr]
    python jobs/finetune.py --config configs/finetune_sib200_scl.yaml --set scaling.num_workers=2
    python jobs/finetune.py --config configs/finetune_sib200.yaml --set data.setting=translate-train \\
        --set output.dir=results/finetune/sib200-e5-translate-train
    python jobs/finetune.py --resume results/finetune/sib200-e5-zero-shot --set optim.epochs=5
    python jobs/finetune.py --smoke
    ray job submit --working-dir . -- python jobs/finetune.py --config configs/finetune_sib200.yaml

The loss is CE + Σ λ_k·aux_k over the configured ``objectives``. Checkpoints (one per epoch) and
``config.yaml`` go to ``output.dir``; running the same command again resumes that run from its
latest checkpoint (a finished run only prints its results), and ``--resume DIR`` continues a run
from its saved config. ``--smoke`` merges configs/smoke.yaml over the preset (default
configs/finetune_sib200.yaml): tiny:bert, 16 examples per language, 2 epochs, seconds after Ray
starts, into ``results/smoke/<preset>``.

The task (``task:``, ``xlt.tasks``) is read and checked before Ray starts: a bad file, column,
label or language is one ``error: file:line: ...`` line and exit status 2 (``--debug`` for the
traceback). Prints one line per epoch (and every ``optim.log_every_steps`` steps) on stderr, then
the per-language accuracy / macro-F1 table on stdout, and writes ``results.json`` (rows, metrics,
config, checkpoint) into the run directory. Ray: $RAY_ADDRESS or ``--address``, else a new local
instance, only where the run needs one (Ray Train workers, ``data.augment``'s views): a run in the job's
process (``scaling.num_workers: 0``) trains on rows it holds, without Ray.
"""

from __future__ import annotations

from pathlib import Path

from xlt.cli import epilogue, init_ray, job_overrides, resumable_job_args, run_job

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
DEFAULT_PRESET = CONFIGS / "finetune_sib200.yaml"
SMOKE_PRESET = CONFIGS / "smoke.yaml"


def main() -> None:
    args = resumable_job_args(__doc__)
    # After the arguments: --help answers before torch and Ray are imported.
    from xlt.engine import run_dir
    from xlt.train.finish import finish_finetune
    from xlt.logs import configure_logging, quiet_libraries
    from xlt.tracking import Tracker
    from xlt.train import build_trainer, load_finetune_config, needs_ray, prepare, resume_config

    quiet_libraries()
    configure_logging(args.verbose)
    overrides = job_overrides(args)
    if args.resume:
        cfg = resume_config(args.resume, overrides)
    else:
        cfg = load_finetune_config(args.config or DEFAULT_PRESET, overrides, smoke=SMOKE_PRESET if args.smoke else None)
    prepared = prepare(cfg)  # every row read and checked before Ray starts
    if args.dry_run:
        return plan(prepared)

    init_ray(args.address, args.verbose, needed=needs_ray(prepared.config))
    with Tracker("finetune", cfg.output.name, run_dir(cfg), enabled=args.tracking) as tracker:
        tracker.params(cfg)
        run = build_trainer(prepared, callbacks=tracker.callbacks())
        # the resolved config: absolute paths, labels; the rows its task left out (task.unknown_labels: drop)
        finished = finish_finetune(run.config, run.fit(), tracker, prepared.task.dropped)
        print("\n" + finished.text)
        print("\n" + epilogue(finished.outputs, f"python jobs/finetune.py --resume {run_dir(run.config)}  "
                              "(more epochs: --set optim.epochs=N)", tracker.how_to_look()))


def plan(prepared) -> None:
    """``--dry-run``: where the run would write, its rows, model and steps."""
    from xlt.cli import dry_run
    from xlt.engine import run_dir
    from xlt.engine.runs import run_state
    from xlt.models.sources import availability
    from xlt.train import needs_ray

    cfg, task = prepared.config, prepared.task
    workers = cfg.scaling.num_workers
    dry_run("finetune", run_dir(cfg), run_state(cfg), cfg, {
        "task": f"{task.config.name}: {len(prepared.train)} training rows ({task.source_lang}), {len(prepared.val)} dev "
                f"and {len(prepared.test)} test rows in {len(task.langs)} languages, {len(task.labels)} labels",
        "model": availability(cfg.model.source),
        "plan": f"{cfg.optim.epochs} epochs of {cfg.steps_per_epoch(workers)} steps, batch {cfg.optim.batch_size}, "
                f"{f'{workers} Ray Train worker(s)' if workers else 'in this process'}, {cfg.optim.precision}; "
                f"{'a Ray' if needs_ray(cfg) else 'no Ray'} started",
    })


if __name__ == "__main__":
    run_job(main)
