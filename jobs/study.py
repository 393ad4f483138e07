"""Compare recipes: a study's variants × seeds as Ray Tune trials of the ordinary job, with paired intervals.

    python jobs/study.py --study studies/nusax-baselines.yaml      # the baselines and CE + SCL on NusaX
    python jobs/study.py --study studies/scl-nusax.yaml --dry-run  # the units, what has run, an estimate
    python jobs/study.py --study studies/nusax-baselines.yaml      # again: runs only the unfinished units
    python jobs/study.py --study studies/scl-nusax.yaml --only ce --seeds 0   # one unit of it
    python jobs/study.py --study studies/scl-nusax.yaml --report   # the report of what has run, running nothing
    python jobs/study.py --smoke                                   # studies/smoke.yaml: tiny model, seconds a unit
    ray job submit --working-dir . -- python jobs/study.py --study studies/scl-xnli.yaml

A study file (``xlt.study.spec``; ``studies/``) names the job and its preset, the variants (each a list
of ``--set`` overrides, or a baseline recipe: ``probe``, ``setfit``), the seeds, the split scored and the
comparisons A − B. Each (variant, seed) is a unit: one run of the job (or of the baseline, on the
same rows) as a Ray Tune trial, side by side as far as the cluster holds them, each a child MLflow
run. Everything goes under the study's ``output`` (local or ``s3://``): ``runs/<unit>/`` (the job's
run), ``units/<unit>.json`` (its record: accuracy per language, each target item's correctness from
the run's recorded predictions), ``results.md``, ``results.json``, ``results.png``.

The same command resumes: a stopped study runs only the units it had not finished (each from its
latest checkpoint), a failed unit is reported and runs again, and units added to the file run
alone. ``--set`` overrides every unit (a change makes other units: give them another ``--output``).
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

from xlt.cli import epilogue, init_ray, job_parser, run_job

REPO = Path(__file__).resolve().parents[1]
SMOKE_STUDY = REPO / "studies" / "smoke.yaml"


def get_args():
    parser = job_parser(__doc__)
    parser.add_argument("--study", help="study YAML (studies/); default with --smoke: studies/smoke.yaml")
    parser.add_argument("--output", help="where the study's runs, records and report go (default: the file's output)")
    parser.add_argument("--report", action="store_true",
                        help="write the report from the units finished (and imported) so far, run nothing")
    parser.add_argument("--only", nargs="+", metavar="VARIANT", help="run only these variants' units this time")
    parser.add_argument("--seeds", nargs="+", type=int, help="run only the units of these seeds this time")
    parser.add_argument("--max-concurrent", type=int, default=0, help="units at once (default: as many as fit)")
    parser.add_argument("--max-failures", type=int, default=3,
                        help="times a failed unit runs again within one study run (e.g. on a lost node)")
    args = parser.parse_args()
    if args.config:
        parser.error("a study names its preset in its file (preset:); --config does not apply")
    if not args.study and not args.smoke:
        parser.error("--study is required (or --smoke, which runs studies/smoke.yaml)")
    return args


def run_command(args) -> str:
    """The command that runs the whole study, and resumes it: this one without what only selects or reports."""
    words = ["python", "jobs/study.py", *(["--study", args.study] if args.study else ["--smoke"])]
    words += [w for o in args.overrides for w in ("--set", o)]
    words += [*(["--data-dir", args.data_dir] if args.data_dir else []), *(["--output", args.output] if args.output else [])]
    return shlex.join(words)


def main() -> None:
    args = get_args()
    # After the arguments: --help answers before torch and Ray are imported.
    from xlt.logs import configure_logging, quiet_libraries
    from xlt.study.finish import finish_study
    from xlt.report import markdown_table
    from xlt.study import load_study
    from xlt.study.runner import check_units, data_overrides, local_output, plan, run_units
    from xlt.study.units import UnitSetup
    from xlt.tracking import Tracker

    quiet_libraries()
    configure_logging(args.verbose)
    study = load_study(args.study or SMOKE_STUDY)
    extra = [*args.overrides, *([f"data.data_dir={args.data_dir}"] if args.data_dir else [])]
    study = dataclasses.replace(study, set=(*study.set, *extra), output=local_output(args.output or study.output))
    setup = UnitSetup(study, study.output, data_overrides())
    check_units(setup)  # fails here, before Ray starts, on any bad key, value or file
    planned = plan(setup).select(args.only, args.seeds)
    print(f"{study.title}\n\n{markdown_table(planned.table())}\n\n{planned.estimate_line()}\n", flush=True)
    if args.dry_run:
        from xlt.cli import dry_run

        finished = sum(1 for p in planned.units if p.record)
        return dry_run("study", study.output, f"{finished} of {len(planned.units)} units finished"
                       if finished else "a new study", dataclasses.replace(study, output=""), {
                           "plan": f"{len(planned.pending)} units to run, each a Ray Tune trial of jobs/{study.job}.py "
                                   "or a baseline; then the report"})
    errors: dict[str, str] = {}
    with Tracker("study", study.name, study.output, enabled=args.tracking) as tracker:
        tracker.params({"study": dataclasses.asdict(study)})
        pending = [] if args.report else planned.pending
        if pending:
            init_ray(args.address, args.verbose)
            ran = run_units(setup, pending, callbacks=tracker.tune_callbacks(),
                            max_failures=args.max_failures, limit=args.max_concurrent)
            errors = {name: error for name, error in ran.items() if error}
        finished = finish_study(study, run_command(args), errors, tracker)
        print(finished.text)
        missing = finished.missing
        resume = (f"{run_command(args)}  (runs the units not finished: {', '.join(missing)})" if missing
                  else "nothing to resume: every unit finished (more seeds or variants: add them to the file)")
        print(epilogue(finished.outputs, resume, tracker.how_to_look()))
    if errors:
        raise SystemExit(1)


if __name__ == "__main__":
    run_job(main)
