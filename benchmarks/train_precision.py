"""The LM learner's fit in fp32 and under bf16 autocast, in this process: time and accuracy (issue 48).

    python benchmarks/train_precision.py                      # configs/cotrain_sib200.yaml's LM learner
    python benchmarks/train_precision.py --rows 200 --out /tmp/tp.md

The preset's learner fits on the first ``--rows`` English rows twice from the same model, seed and batches: at
``optim.precision: fp32`` and at ``bf16`` (each step's forward and loss under ``torch.autocast``; weights, AdamW's
moments and update stay fp32). Both classifiers are evaluated in fp32, so the accuracy difference is the
training's. Where the CPU multiplies bf16 natively (``xlt.hardware``) autocast should pay; elsewhere it emulates.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import torch

import harness
from learner_fit import fit_here  # (the in-process fit, at the config's precision)
from xlt.cotrain import load_cotrain_config, prepare
from xlt.cotrain.learner import learner_config
from xlt.eval.evaluators import EVALUATORS, EvalContext, EvalSpec, classification
from xlt.hardware import native_bf16
from xlt.logs import quiet_libraries
from xlt.metrics import per_language
from xlt.report import markdown_table
from xlt.storage import OutputSettings


def main() -> None:
    parser = harness.parser(__doc__, "train_precision.md")
    parser.add_argument("--config", default=str(harness.REPO / "configs" / "cotrain_sib200.yaml"))
    parser.add_argument("--rows", type=int, default=400, help="English train rows the fit trains on")
    args = parser.parse_args()
    quiet_libraries()
    cotrain = load_cotrain_config(args.config)
    data = prepare(cotrain)
    rows, learner = data.labeled[: args.rows], cotrain.learner("lm")
    cfg = learner_config("bench", learner, data.task,
                         OutputSettings(tempfile.mkdtemp(prefix="xlt-train-precision-"), 1), len(rows))
    test = {key: [r[key] for r in data.evaluation_rows] for key in EVALUATORS["classification"].columns}
    machine = harness.Machine()
    table, accuracy = [], {}
    for name, precision in (("fp32", "fp32"), ("bf16 autocast", "bf16")):
        torch.manual_seed(cfg.optim.seed)
        training, epochs = fit_here(dataclasses.replace(cfg, optim=dataclasses.replace(cfg.optim, precision=precision)),
                                    rows)
        times, loss = [seconds for _, seconds in epochs], epochs[-1][0].mean("loss")
        metrics = classification(training.classifier, test, EvalSpec("classification", "test"),
                                 EvalContext(data.task.source_lang, cfg.optim.eval_batch_size)).metrics
        accuracy[name] = per_language(metrics, "test")
        table.append({"training": name, "epochs": len(times), "fit s": sum(times),
                      "per epoch s": ", ".join(f"{t:.1f}" for t in times), "last epoch loss": loss,
                      "test acc avg_target": accuracy[name].get("avg_target"), "test acc en": accuracy[name].get("en")})
        print(table[-1], flush=True)
    for entry in table:
        entry["speed-up"] = table[0]["fit s"] / entry["fit s"]
    per_lang = [{"lang": lang, **{name: accuracy[name][lang] for name in accuracy}}
                for lang in accuracy["fp32"] if lang != "avg_target"]
    text = "\n".join([
        machine.header("The LM learner's fit: fp32 against bf16 autocast (issue 48)"),
        f"Native bf16: {'yes' if native_bf16() else 'no'}. The LM learner of "
        f"`{Path(args.config).resolve().relative_to(harness.REPO)}` ({learner.model.source}, K = {cfg.optim.epochs}, "
        f"batch {cfg.optim.batch_size}, {cfg.scaling.torch_threads} torch threads) on {len(rows)} English "
        f"rows, in this process; both evaluated in fp32 on {len(data.evaluation_rows)} evaluation rows.", "",
        markdown_table(table, digits=3), "", "Test accuracy per language:", "", markdown_table(per_lang, digits=3), ""])
    print(text)
    harness.write(args.out, text)


if __name__ == "__main__":
    main()
