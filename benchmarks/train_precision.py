"""The LM learner's fit in fp32 and under bf16 autocast, in this process: time and accuracy (issue 48).

    python benchmarks/train_precision.py      # configs/cotrain_sib200.yaml's LM learner; --rows 200: a check

Two fits from the same model, seed and batches: ``optim.precision: fp32`` and ``bf16`` (forward and loss under
``torch.autocast``; weights, AdamW's moments and update fp32), both evaluated in fp32: the difference is the fit's."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

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
    data = prepare(cotrain := load_cotrain_config(args.config))
    rows, learner = data.labeled[: args.rows], cotrain.learner("lm")
    cfg = learner_config("bench", learner, data.task,
                         OutputSettings(tempfile.mkdtemp(prefix="xlt-train-precision-"), 1), len(rows))
    test = {key: [r[key] for r in data.evaluation_rows] for key in EVALUATORS["classification"].columns}
    spec, context = EvalSpec("classification", "test"), EvalContext(data.task.source_lang, cfg.optim.eval_batch_size)
    machine = harness.Machine()
    table, accuracy = [], {}
    for name, precision in (("fp32", "fp32"), ("bf16 autocast", "bf16")):
        training, epochs = fit_here(dataclasses.replace(cfg, optim=dataclasses.replace(cfg.optim, precision=precision)),
                                    rows)
        times, loss = [seconds for _, seconds in epochs], epochs[-1][0].mean("loss")
        acc = accuracy[name] = per_language(classification(training.classifier, test, spec, context).metrics, "test")
        table.append({"training": name, "epochs": len(times), "fit s": sum(times),
                      "per epoch s": ", ".join(f"{t:.1f}" for t in times), "last epoch loss": loss,
                      "test acc avg_target": acc.get("avg_target"), "test acc en": acc.get("en"),
                      "speed-up": table[0]["fit s"] / sum(times) if table else 1.0})
        print(table[-1], flush=True)
    per_lang = [{"lang": k, **{n: a[k] for n, a in accuracy.items()}} for k in accuracy["fp32"] if k != "avg_target"]
    where = Path(args.config).resolve().relative_to(harness.REPO)
    harness.write(args.out, machine.header("The LM learner's fit: fp32 against bf16 autocast (issue 48)")
                  + f"\nNative bf16: {'yes' if native_bf16() else 'no'}. The LM learner of `{where}` ("
                  f"{learner.model.source}, K = {cfg.optim.epochs}, batch {cfg.optim.batch_size}, "
                  f"{cfg.scaling.torch_threads} torch threads) on {len(rows)} English rows, in this process; both "
                  f"evaluated in fp32 on {len(data.evaluation_rows)} evaluation rows.\n\n"
                  f"{markdown_table(table, digits=3)}\n\nTest accuracy per language:\n\n"
                  f"{markdown_table(per_lang, digits=3)}\n", show=True)


if __name__ == "__main__":
    main()
