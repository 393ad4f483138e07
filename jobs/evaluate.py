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
from typing import TYPE_CHECKING

from xlt.cli import epilogue, job_overrides, job_parser, run_job

if TYPE_CHECKING:  # annotations only: the modules load after the arguments
    from xlt.eval.protocols import EvaluateConfig
    from xlt.tracking import Tracker

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
    with Tracker("evaluate", f"{out.name}-{cfg.protocol}", out / cfg.protocol, enabled=args.tracking) as tracker:
        tracker.params(cfg)
        result = run_evaluation(cfg)
        print_results(cfg, result, tracker)


def print_results(cfg: EvaluateConfig, result: dict, tracker: Tracker) -> None:
    from xlt.config import save_config
    from xlt.predict.export import EXPORT_DIR, probe_card
    from xlt.report import command_line, markdown_table, write_results

    a = cfg.adapt
    adapted = (f" (adapted to each target's unlabelled pool: {'centred, ' if a.center else ''}{a.rounds} "
               f"self-training round{'s' * (a.rounds != 1)} of fraction {a.fraction:g})"
               if cfg.protocol == "frozen-linear" and a.active else "")
    for source in dict.fromkeys(r["model"] for r in result["rows"]):
        rows = [r for r in result["rows"] if r["model"] == source]
        print(f"\n## {cfg.protocol} on {result['task']}: {source}{adapted}\n")
        print(markdown_table([{k: v for k, v in r.items() if k not in ("model", "protocol")} for r in rows]))
        for protocol in dict.fromkeys(r["protocol"] for r in rows if "protocol" in r):
            print(f"\nProtocol: {protocol}")
    out = Path(cfg.output.dir)
    save_config(cfg, out / "config.yaml")
    classifiers = result.pop("classifiers", {})
    path = write_results(out / f"{cfg.protocol}.json", {**result, "config": cfg})
    for row in result["rows"]:  # one metric per model, language and score, e.g. "tiny:bert/de/accuracy"
        tracker.metrics(row, 0, prefix=f"{row['model']}/{row.get('lang', 'all')}/")
    tracker.artifacts(path, out / "config.yaml")
    outputs = {"results": path, "config": out / "config.yaml"}
    for source, classifier in classifiers.items():
        name = source.partition(":")[2].rstrip("/").rpartition("/")[2]  # hf:org/name, local:/dir/name -> name
        card = probe_card(cfg, source, [r for r in result["rows"] if r["model"] == source])
        outputs[f"export {name}"] = classifier.save_pretrained(out / EXPORT_DIR / name, card=card)
        if (model := tracker.model(outputs[f"export {name}"], name)) is not None:
            outputs[f"mlflow model {name}"] = model
    print("\n" + epilogue(outputs,
                          f"{command_line()}  (evaluation is not resumable: it runs again)", tracker.how_to_look()))


if __name__ == "__main__":
    run_job(main)
