"""Sweep a job's hyperparameters with Ray Tune: Optuna TPE (or random search) + ASHA early stopping.

    python jobs/sweep.py --space search_spaces/scl.yaml                 # seed 000 §5.2–5.3: τ, λ, r_c, lr
    python jobs/sweep.py --space search_spaces/scl.yaml --searcher random --scheduler none --num-samples 12
    python jobs/sweep.py --space search_spaces/cotrain.yaml             # seed 002: threshold t, selection policy
    python jobs/sweep.py --space search_spaces/scl.yaml --resume        # continue an interrupted sweep
    python jobs/sweep.py --smoke                                        # search_spaces/smoke.yaml, tiny models
    ray job submit --working-dir . -- python jobs/sweep.py --space search_spaces/scl.yaml

The space file names the job (finetune / cotrain), its preset (``--config`` replaces it; ``--set``
overrides it) and the entries to sample (``xlt.sweep.space``). Every trial is the preset plus the
space's ``sweep_only`` overrides plus its sampled values, reports dev metrics every epoch
(iteration), and may be stopped early by ASHA. Everything goes to ``<storage>/<name>/`` (name: the
space file's stem, ``-smoke`` appended with ``--smoke``): Tune's trials and state, ``results.md``
(one row per trial: values, score, epochs run), ``results.json``, ``best_so_far.png`` and
``best.yaml``, the best trial's config, which the job's ``--config`` accepts:

    python jobs/finetune.py --config results/sweeps/scl/best.yaml

``--smoke`` merges the job's smoke preset (configs/smoke.yaml, configs/cotrain_smoke.yaml) over
the preset. Ray: ``--address`` or $RAY_ADDRESS, else a new local instance.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path

from xlt.cli import init_ray, job_parser, quiet_libraries
from xlt.config import apply_overrides, merge_presets
from xlt.report import markdown_table, write_results
from xlt.sweep import best_trial, export_config, load_space, plot_best_so_far, results_rows, summary
from xlt.sweep.overrides import as_overrides
from xlt.sweep.runner import SweepSettings, run_sweep
from xlt.sweep.space import SEARCHERS
from xlt.sweep.trainables import JOBS

REPO = Path(__file__).resolve().parents[1]
SMOKE_SPACE = REPO / "search_spaces" / "smoke.yaml"
SMOKE_PRESETS = {"finetune": REPO / "configs" / "smoke.yaml", "cotrain": REPO / "configs" / "cotrain_smoke.yaml"}


def get_args():
    parser = job_parser(__doc__)
    parser.add_argument("--space", help="search-space YAML (search_spaces/); default with --smoke: smoke.yaml")
    parser.add_argument("--num-samples", type=int, default=0, help="trials (default: the space's num_samples)")
    parser.add_argument("--searcher", choices=SEARCHERS, default="optuna")
    parser.add_argument("--scheduler", choices=("asha", "none"), default="asha")
    parser.add_argument("--max-concurrent", type=int, default=0, help="trials at once (default: as many as fit)")
    parser.add_argument("--name", help="sweep name (default: the space file's stem)")
    parser.add_argument("--storage", default="results/sweeps", help="directory (or URI) holding the sweeps")
    parser.add_argument("--resume", action="store_true", help="continue the interrupted sweep of the same name")
    args = parser.parse_args()
    if not args.space and not args.smoke:
        parser.error("--space is required (or --smoke, which defaults to search_spaces/smoke.yaml)")
    return args


def main() -> None:
    args = get_args()
    quiet_libraries()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    space = load_space(args.space or SMOKE_SPACE)
    job = JOBS[space.job]
    overrides = args.overrides + ([f"data.data_dir={args.data_dir}"] if args.data_dir else [])
    base = apply_overrides(merge_presets(args.config or space.preset,
                                         SMOKE_PRESETS[space.job] if args.smoke else None), overrides)
    name = args.name or Path(space.source).stem + ("-smoke" if args.smoke else "")
    settings = SweepSettings(name, args.storage, args.num_samples, args.searcher, args.scheduler,
                             args.max_concurrent, args.resume)

    init_ray(args.address)
    records = run_sweep(space, base, settings)

    out = settings.directory
    max_t = job.max_t(job.config(base))
    best = best_trial(records, space.metric, space.mode, job.time_attr, max_t)
    cfg = export_config(job.config, base, best.values, job.renames(name), out / "best.yaml")
    table = markdown_table(results_rows(records, space.params, space.metric, job.time_attr), digits=4)
    totals = summary(records, job.time_attr)
    text = (f"## Sweep {name}: {space.job}, {settings.searcher} + {settings.scheduler}, {len(records)} trials\n\n"
            f"{table}\n\nbest: trial {best.index}, {space.metric} = {best.result[space.metric]:.4f}, "
            f"{' '.join('--set ' + o for o in as_overrides(best.values))}\n{totals}\n")
    (out / "results.md").write_text(text, encoding="utf-8")
    plot = plot_best_so_far(records, space.metric, space.mode, out / "best_so_far.png", f"{name}: {settings.searcher}"
                            f" + {settings.scheduler}")
    path = write_results(out / "results.json", {
        "trials": [asdict(r) for r in records], "best": asdict(best), "summary": totals, "settings": asdict(settings),
        "space": asdict(space), "best_config": asdict(cfg)})
    print(text)
    print(f"wrote {out / 'best.yaml'}, {out / 'results.md'}, {plot}, {path}")


if __name__ == "__main__":
    main()
