"""Evaluate frozen multilingual encoders: a frozen-linear probe on any task, Tatoeba retrieval, mining.

    python jobs/evaluate.py                                              # probe on SIB-200 (configs/evaluate_sib200.yaml)
    python jobs/evaluate.py --set 'task={include: configs/tasks/xnli.yaml}' --set output.dir=results/evaluate/xnli
    python jobs/evaluate.py --protocol tatoeba
    python jobs/evaluate.py --protocol mining --set mining_k=4
    python jobs/evaluate.py --protocol bucc                              # BUCC 2018 zh-en, threshold held out
    python jobs/evaluate.py --set 'models=[{source: tiny:bert}]'
    python jobs/evaluate.py --set 'adapt={center: true, rounds: 3}'     # the probe adapted to each target's pool
    python jobs/evaluate.py --config configs/evaluate_nusax.yaml         # NusaX's declared recipe, exported
    python jobs/evaluate.py --smoke

``frozen-linear`` trains a logistic regression on the frozen embeddings of the task's source
train split (C chosen on its dev split) and reports accuracy and macro-F1 on every language's test
split; sentence pairs are embedded as the encoder embeds pairs. ``adapt`` adapts the probe to each
target language's unlabelled ``pool`` split without its labels (``xlt.eval.adaptation``). Prints a per-language table per
model and writes ``<output.dir>/<protocol>.json`` (rows, config, command) with ``config.yaml``
beside it. With ``output.export`` each model's probe is a classifier in ``<output.dir>/export/<model name>``
(``xlt.models.Classifier``, a sentence-transformers encoder with the head and each language's mean) that
``jobs/predict.py`` labels corpora with.
"""

from __future__ import annotations

from pathlib import Path

from xlt.cli import epilogue, job_overrides, job_parser, run_job

DEFAULT_PRESET = Path(__file__).resolve().parents[1] / "configs" / "evaluate_sib200.yaml"
SMOKE_PRESET = Path(__file__).resolve().parents[1] / "configs" / "evaluate_smoke.yaml"


def main() -> None:
    parser = job_parser(__doc__)
    parser.add_argument("--protocol", help="a protocol of xlt.eval.protocols.PROTOCOLS: frozen-linear, tatoeba, mining, "
                        "bucc (default: the config's)")
    args = parser.parse_args()
    # After the arguments: --help answers before torch and Ray are imported.
    from xlt.config import load_config
    from xlt.eval.protocols import PROTOCOLS, EvaluateConfig, run_evaluation
    from xlt.eval.finish import finish_evaluation
    from xlt.report import command_line
    from xlt.logs import configure_logging, quiet_libraries
    from xlt.tracking import Tracker

    if args.protocol is not None and args.protocol not in PROTOCOLS:
        parser.error(f"argument --protocol: invalid choice: {args.protocol!r} (choose from {', '.join(PROTOCOLS)})")
    quiet_libraries()
    configure_logging(args.verbose)

    overrides = job_overrides(args) + ([f"protocol={args.protocol}"] if args.protocol else [])
    cfg = load_config(EvaluateConfig, args.config or DEFAULT_PRESET, overrides,
                      smoke=SMOKE_PRESET if args.smoke else None)

    out = Path(cfg.output.dir)
    if args.dry_run:
        return plan(cfg, PROTOCOLS[cfg.protocol](cfg))
    with Tracker("evaluate", f"{out.name}-{cfg.protocol}", out / cfg.protocol, enabled=args.tracking) as tracker:
        tracker.params(cfg)
        finished = finish_evaluation(cfg, run_evaluation(cfg), tracker)
        print("\n" + finished.text)
        print("\n" + epilogue(finished.outputs, f"{command_line()}  (evaluation is not resumable: it runs again)",
                              tracker.how_to_look()))


def plan(cfg, evaluator) -> None:
    """``--dry-run``: where the evaluation would write, its data (read and checked) and its models."""
    from xlt.cli import dry_run
    from xlt.models.sources import availability

    out = Path(cfg.output.dir)
    dry_run("evaluate", str(out), "holds an evaluation, which the command runs again and replaces" if out.exists()
            else "a new evaluation", cfg, {
                "data": f"{evaluator.task}: {cfg.protocol} on {len(evaluator.langs)} languages "
                        f"({', '.join(evaluator.langs)})",
                **{f"model {i + 1}": availability(model.source) for i, model in enumerate(cfg.models)},
                "plan": ("the probe adapted to each target pool (adapt), " if cfg.adapt.active else "")
                        + ("each model's probe exported" if cfg.output.export else "nothing exported"),
            })


if __name__ == "__main__":
    run_job(main)
