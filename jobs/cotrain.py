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
``xlt.storage``): a job resubmitted on another node resumes from what is there. ``--set output.export=true``
exports each learner as the run left it to ``<output.dir>/export/<learner>`` (sentence-transformers and
``Classifier.from_pretrained``; ``xlt.predict.export``) and logs it as the run's MLflow model
``lm`` / ``emb``; the same command on a finished run exports it without training.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from xlt.cli import epilogue, init_ray, job_overrides, job_parser, run_job

if TYPE_CHECKING:  # annotations only: the modules load after the arguments
    from xlt.report import Phases
    from xlt.tracking import Tracker

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
DEFAULT_PRESET = CONFIGS / "cotrain_demo.yaml"
SMOKE_PRESET = CONFIGS / "cotrain_smoke.yaml"


def main() -> None:
    args = job_parser(__doc__).parse_args()
    # After the arguments: --help answers before torch and Ray are imported.
    from xlt.cotrain import load_cotrain_config, prepare, run_cotraining
    from xlt.logs import configure_logging, quiet_libraries
    from xlt.models import EncoderConfig
    from xlt.report import Phases
    from xlt.study.recipes import cotrain_rows, probe_scores
    from xlt.tracking import Tracker

    quiet_libraries()
    configure_logging(args.verbose)
    overrides = job_overrides(args)
    cfg = load_cotrain_config(args.config or DEFAULT_PRESET, overrides, smoke=SMOKE_PRESET if args.smoke else None)
    phases = Phases()
    with phases("read data"):
        data = prepare(cfg)  # every row read and checked before Ray starts
    with phases("start Ray"):
        init_ray(args.address, args.verbose)
    with Tracker("cotrain", cfg.output.name, cfg.output.dir, enabled=args.tracking) as tracker:
        tracker.params(cfg)
        state = run_cotraining(cfg, data=data, phases=phases, tracker=tracker)
        with phases("probes"):
            rows = cotrain_rows(cfg, data.task) if cfg.probes else None  # the rows the learners saw, once
            probes = {source: probe_scores(rows, EncoderConfig(source=source, max_length=cfg.lm.model.max_length))
                      for source in cfg.probes}
        print_results(cfg, data, state, probes, phases, tracker)


def overlap(cfg) -> str:
    """How an iteration's two fits share the time (in-process fits take turns: xlt.engine.context)."""
    if cfg.lm.scaling.num_workers and cfg.emb.scaling.num_workers:
        return "the two fits of an iteration run at the same time"
    if cfg.lm.scaling.num_workers or cfg.emb.scaling.num_workers:
        return "the two fits of an iteration run at the same time, one in this process"
    return "both learners fit in this process, one after the other"


def print_results(cfg, data, state, probes: dict[str, dict[str, dict[str, float]]], phases: Phases,
                  tracker: Tracker) -> None:
    """The tables (the learners, then each frozen probe of ``cfg.probes`` on the same rows), written and printed."""
    from xlt.cotrain.config import LEARNERS
    from xlt.cotrain.learner import LEARNERS_DIR, learner_run
    from xlt.cotrain.state import STATE_FILE
    from xlt.cotrain.tables import iteration_rows, language_rows, plot_iterations
    from xlt.engine.checkpoints import latest_checkpoint
    from xlt.metrics import ACC, AVG_TARGET, F1
    from xlt.predict.export import EXPORT_DIR, export_run
    from xlt.report import command_line, markdown_table, write_results
    from xlt.storage import join, staged

    split, source = cfg.data.metric_split, data.task.source_lang
    label = "co-training" if cfg.mode == "cotrain" else "self-training"
    per_iteration = markdown_table(iteration_rows(state.history, split, source))
    langs = (source, *data.targets)

    def language_table(score: str) -> str:
        probe_rows = [{"model": f"frozen probe: {model}", **{lang: scores[score][lang] for lang in (*langs, AVG_TARGET)}}
                      for model, scores in probes.items()]
        return markdown_table(language_rows(state.history, split, langs, label, score=score) + probe_rows)

    per_language, per_language_f1 = language_table(ACC), language_table(F1)
    text = (f"## {label} on {data.task.config.name}: lm {cfg.lm.model.source}, emb {cfg.emb.model.source}, policy {cfg.selection.policy}, "
            f"t = {cfg.selection.threshold}\n\n### Per iteration ({split} accuracy)\n\n{per_iteration}\n\n"
            f"### Per language ({split} accuracy)\n\n{per_language}\n\n"
            f"### Per language ({split} macro-F1)\n\n{per_language_f1}\n\n"
            f"### Where the time went (this run; {overlap(cfg)})\n\n"
            f"{phases.table()}\n")
    with staged(cfg.output.dir) as out:  # a URI output gets these files when the block ends
        (out / "results.md").write_text(text, encoding="utf-8")
        plot = plot_iterations(state.history, split, out / "accuracy_per_iteration.png", label)
        write_results(out / "results.json", {"history": state.history, "probes": probes, "config": asdict(cfg),
                                             "phases": phases.rows()})
        tracker.artifacts(out / "results.json", out / "results.md", plot)
    print(text)
    where = {what: join(cfg.output.dir, name) for what, name in (
        ("results", "results.json"), ("tables", "results.md"), ("plot", "accuracy_per_iteration.png"),
        ("loop state", STATE_FILE), ("learner runs", LEARNERS_DIR))}
    if cfg.output.export:  # output.export: each learner as it ended, for use outside xlt, and as an MLflow model
        for learner in LEARNERS:
            where |= export_run(latest_checkpoint(learner_run(cfg.output.dir, learner)),
                                join(cfg.output.dir, EXPORT_DIR, learner), tracker, name=learner)
    print(epilogue(where,
                   f"{command_line()}  (the same command continues at the next iteration; a finished run "
                   "prints its results)", tracker.how_to_look()))


if __name__ == "__main__":
    run_job(main)
