"""Sweep a job's hyperparameters with Ray Tune: Optuna TPE (or random search) + ASHA early stopping.

    python jobs/sweep.py --space search_spaces/scl.yaml                 # Wang et al. 2022, §5.2–5.3: τ, λ, r_c, lr
    python jobs/sweep.py --space search_spaces/scl.yaml --searcher random --scheduler none --num-samples 12
    python jobs/sweep.py --space search_spaces/cotrain.yaml             # Yu & Joty 2021: threshold t, selection policy
    python jobs/sweep.py --space search_spaces/scl.yaml --resume        # continue an interrupted sweep
    python jobs/sweep.py --smoke                                        # search_spaces/smoke.yaml, tiny models
    ray job submit --working-dir . -- python jobs/sweep.py --space search_spaces/scl.yaml

The space file names the job (finetune / cotrain), its preset (``--config`` replaces it; ``--set``
overrides it) and the entries to sample (``xlt.sweep.space``). Every trial is the preset plus the
space's ``sweep_only`` overrides plus its sampled values, reports dev metrics every epoch
(iteration), and may be stopped early by ASHA. Everything goes to ``<storage>/<name>/`` (name: the
space file's stem, ``-smoke`` appended with ``--smoke``): Tune's trials and state, ``results.md``
(one row per trial: status, values, score, epochs run), ``results.json``, ``best_so_far.png`` and
``best.yaml``, the best trial's config, which the job's ``--config`` accepts:

    python jobs/finetune.py --config results/sweeps/scl/best.yaml

Ctrl+C stops a sweep cleanly: Tune saves its state, the report marks the unfinished trials
INTERRUPTED and names its best "so far", and ``--resume`` continues each from its latest epoch
(iteration). A killed sweep resumes the same way; it leaves no report.

``--export`` exports the best trial's model, as its trial left it (trained with the space's ``sweep_only``
overrides), to ``<storage>/<name>/export`` (of a co-training sweep, the learner it scored with) and logs it
as the sweep's MLflow model; ``jobs/predict.py`` and ``jobs/export.py`` take the sweep's directory for the
same model.

``--smoke`` merges the job's smoke preset (configs/smoke.yaml, configs/cotrain_smoke.yaml) over
the preset. Ray: ``--address`` or $RAY_ADDRESS, else a new local instance.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from xlt.cli import epilogue, init_ray, job_overrides, job_parser, run_job

if TYPE_CHECKING:  # annotations only: the modules load after the arguments
    from xlt.sweep.best import TrialRecord

REPO = Path(__file__).resolve().parents[1]
SMOKE_SPACE = REPO / "search_spaces" / "smoke.yaml"
SMOKE_PRESETS = {"finetune": REPO / "configs" / "smoke.yaml", "cotrain": REPO / "configs" / "cotrain_smoke.yaml"}


def get_args():
    from xlt.sweep.space import SEARCHERS  # light: torch and Ray load after the arguments

    parser = job_parser(__doc__)
    parser.add_argument("--space", help="search-space YAML (search_spaces/); default with --smoke: smoke.yaml")
    parser.add_argument("--num-samples", type=int, default=0, help="trials (default: the space's num_samples)")
    parser.add_argument("--searcher", choices=SEARCHERS, default="optuna")
    parser.add_argument("--scheduler", choices=("asha", "none"), default="asha")
    parser.add_argument("--max-concurrent", type=int, default=0, help="trials at once (default: as many as fit)")
    parser.add_argument("--name", help="sweep name (default: the space file's stem)")
    parser.add_argument("--storage", default="results/sweeps", help="directory or URI (s3://bucket/sweeps) holding the sweeps; on a cluster, one every node reaches")
    parser.add_argument("--resume", action="store_true", help="continue the interrupted sweep of the same name")
    parser.add_argument("--export", action="store_true",
                        help="export the best trial's model to <storage>/<name>/export (and as an MLflow model)")
    parser.add_argument("--max-failures", type=int,
                        help="times a failed trial (e.g. on a lost node) runs again "
                             "(default: xlt.sweep.runner.SweepSettings.max_failures)")
    args = parser.parse_args()
    if not args.space and not args.smoke:
        parser.error("--space is required (or --smoke, which defaults to search_spaces/smoke.yaml)")
    return args


def main() -> None:
    args = get_args()
    # After the arguments: --help answers before torch and Ray are imported.
    from xlt.config import apply_overrides, merge_presets
    from xlt.logs import configure_logging, quiet_libraries
    from xlt.sweep.finish import finish_sweep
    from xlt.sweep import load_space
    from xlt.sweep.runner import SweepSettings, prepare_sweep
    from xlt.tracking import Tracker

    quiet_libraries()
    configure_logging(args.verbose)
    space = load_space(args.space or SMOKE_SPACE)
    overrides = job_overrides(args)
    base = apply_overrides(merge_presets(args.config or space.preset,
                                         SMOKE_PRESETS[space.job] if args.smoke else None), overrides)
    stem = Path(space.source).stem
    name = args.name or stem + ("-smoke" if args.smoke and not stem.endswith("smoke") else "")
    settings = SweepSettings(name, args.storage, args.num_samples, args.searcher, args.scheduler,
                             args.max_concurrent, args.resume,
                             SweepSettings.max_failures if args.max_failures is None else args.max_failures)

    sweep = prepare_sweep(space, base, settings, claim=not args.dry_run)  # fails here, before Ray, on bad input
    if args.dry_run:
        from xlt.cli import dry_run
        from xlt.models.sources import availability

        resumed = "holds this sweep, which --resume continues" if settings.resume else "a new sweep"
        return dry_run("sweep", settings.directory, resumed, sweep.config, {
            "space": f"{space.source}: {', '.join(p.key for p in space.params)} on {space.job}, {sweep.num_samples} trials by "
                     f"{settings.searcher}, scheduler {settings.scheduler}; chosen on {space.metric} ({space.mode})",
            "model": availability(sweep.config.model.source if hasattr(sweep.config, "model") else
                                  sweep.config.lm.model.source),
            "plan": "each trial a run of the preset with the space's values; Ray started",
        })
    init_ray(args.address, args.verbose)
    with Tracker("sweep", name, settings.directory, enabled=args.tracking) as tracker:
        tracker.params({"space": asdict(space), "sweep": asdict(settings), "base": base})
        records = sweep.run(tracker.tune_callbacks())
        finished = finish_sweep(sweep, records, args.export, tracker)
        print(finished.text)
        print(epilogue(finished.outputs, resume_line(records, settings.resume), tracker.how_to_look()))


def resume_line(records: list[TrialRecord], resumed: bool) -> str:
    """How to finish the sweep's interrupted trials, or that none is left: ``--resume`` on a sweep whose
    trials all ended would only restore it and stop (Tune retries no failed trial on resume)."""
    from xlt.report import command_line
    from xlt.sweep.best import interrupted

    if not interrupted(records):
        return "nothing to resume: every trial ended (another sweep: --name NAME)"
    resume = command_line() if resumed else f"{command_line()} --resume"
    return f"{resume}  (finishes the sweep's unfinished trials)"


if __name__ == "__main__":
    run_job(main)
