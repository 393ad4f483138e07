"""Co-training on any task (Yu & Joty 2021, Alg. 1): an LM learner and a sentence-embedding learner
exchange confident pseudo-labels on unlabelled target-language text; or self-training.

    python jobs/cotrain.py                                   # configs/cotrain_demo.yaml (make demo), offline
    python jobs/cotrain.py --config configs/cotrain_sib200.yaml    # every SIB-200 language and row
    python jobs/cotrain.py --config configs/cotrain_nusax.yaml
    python jobs/cotrain.py --config configs/cotrain_xnli.yaml      # a pool of sentence pairs
    python jobs/cotrain.py --set mode=self-train --set output.dir=results/cotrain/self-train
    python jobs/cotrain.py --set selection.policy=agreement --set selection.threshold=0.8
    python jobs/cotrain.py --smoke
    ray job submit --working-dir . -- python jobs/cotrain.py --config configs/cotrain_cluster.yaml

Every iteration fits both learners (each learner's Ray Train run, started once for the whole job, serves
its fits; checkpoints under ``<output.dir>/learners/<learner>``), evaluates them on every language,
pseudo-labels the pool (an actor pool, or in the driver: ``inference.num_actors: 0``), selects and
exchanges, and saves the loop state to ``<output.dir>/state.json``: running the same command again
resumes at the next iteration (a finished run only prints its results). Prints one line per iteration on stderr, then the
per-iteration and per-language tables on stdout; writes ``results.json``, ``results.md`` and
``accuracy_per_iteration.png`` into ``output.dir``. ``output.dir`` may be a URI (``s3://bucket/run``; see
``xlt.storage``): a job resubmitted on another node resumes from what is there. The job ends with one
classifier (``classifier:``, ``xlt.cotrain.classifier``: in the presets the product of both learners'
probabilities), printed first in the per-language tables beside each learner alone and the probes.
``--set output.export=true`` exports each learner as the run left it to ``<output.dir>/export/<learner>``
(sentence-transformers and ``Classifier.from_pretrained``; ``xlt.predict.export``), logged as the run's
MLflow model ``lm`` / ``emb``, and the job's classifier to ``<output.dir>/export/classifier``
(``xlt.models.load_pretrained``; ``jobs/predict.py --set model.learner=classifier`` labels with it from the
run); the same command on a finished run exports it without training.
"""

from __future__ import annotations

from pathlib import Path

from xlt.cli import epilogue, init_ray, job_overrides, job_parser, run_job

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
DEFAULT_PRESET = CONFIGS / "cotrain_demo.yaml"
SMOKE_PRESET = CONFIGS / "cotrain_smoke.yaml"


def main() -> None:
    args = job_parser(__doc__).parse_args()
    # After the arguments: --help answers before torch and Ray are imported.
    from xlt.cotrain import load_cotrain_config, prepare, run_cotraining
    from xlt.logs import configure_logging, quiet_libraries
    from xlt.cotrain.finish import finish_cotrain
    from xlt.report import Phases, command_line
    from xlt.tracking import Tracker

    quiet_libraries()
    configure_logging(args.verbose)
    overrides = job_overrides(args)
    cfg = load_cotrain_config(args.config or DEFAULT_PRESET, overrides, smoke=SMOKE_PRESET if args.smoke else None)
    phases = Phases()
    with phases("read data"):
        data = prepare(cfg)  # every row read and checked before Ray starts
    if args.dry_run:
        return plan(cfg, data)
    with phases("start Ray"):
        init_ray(args.address, args.verbose)
    with Tracker("cotrain", cfg.output.name, cfg.output.dir, enabled=args.tracking) as tracker:
        tracker.params(cfg)
        state = run_cotraining(cfg, data=data, phases=phases, tracker=tracker)
        finished = finish_cotrain(cfg, data, state, phases, tracker)
        print(finished.text)
        print(epilogue(finished.outputs, f"{command_line()}  (the same command continues at the next iteration; a "
                       "finished run prints its results)", tracker.how_to_look()))


def plan(cfg, data) -> None:
    """``--dry-run``: where the run would write, its rows, learners and iterations."""
    from xlt.cli import dry_run
    from xlt.cotrain import LEARNERS
    from xlt.engine.runs import run_state
    from xlt.models.sources import availability

    task = data.task
    dry_run("cotrain", cfg.output.dir, run_state(cfg, cfg.output.dir), cfg, {
        "task": f"{task.config.name}: {len(data.labeled)} labelled rows ({task.source_lang}); unlabelled pools of "
                + ", ".join(f"{lang} {n}" for lang, n in data.pool_counts.items())
                + f"; {len(data.evaluation_rows)} {cfg.data.eval_split} rows; {len(task.labels)} labels",
        **{name: availability(getattr(cfg, name).model.source) for name in LEARNERS},
        "plan": f"{cfg.mode}: {cfg.iterations} iterations; Ray started",
    })


if __name__ == "__main__":
    run_job(main)
