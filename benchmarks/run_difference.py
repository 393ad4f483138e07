"""Two fine-tuning runs' difference on one evaluated split, paired item by item, with its bootstrap interval.

    .venv/bin/python benchmarks/run_difference.py RUN_A RUN_B [--epoch 6] [--split val]   # default: the last epochs

For runs of ``jobs/finetune.py`` whose checkpoints keep their predictions (``evals: [{type: classification, split:
val, every_epoch: true}]``, issue 52): accuracy per language and A − B on the target average, with the paired
bootstrap interval over the target items: whether the two models differ on these items, not whether another seed
would (the commands: ``benchmarks/fidelity/scl-pawsx-diagnosis.md``)."""

from __future__ import annotations

from pathlib import Path

import harness
from xlt.engine.checkpoints import METRICS_FILE, latest_checkpoint, read_metrics
from xlt.engine.runs import read_run_config
from xlt.eval.stats import Interval, paired_bootstrap
from xlt.metrics import TRAIN_EPOCH
from xlt.report import markdown_table
from xlt.train import FinetuneConfig
from xlt.train.workload import read_predictions


def checkpoint_of(run: str | Path, epoch: int | None) -> Path:
    """The run's checkpoint directory of ``epoch`` (its latest if None), chosen by the epoch it records."""
    if epoch is None:
        return Path(latest_checkpoint(str(Path(run).resolve())).path)  # Ray reads a path, not a relative one
    kept = sorted(d for d in Path(run).iterdir() if (d / METRICS_FILE).is_file())
    for d in kept:
        if int(read_metrics(d)[TRAIN_EPOCH]) == epoch:
            return d
    raise SystemExit(f"error: {run} keeps no checkpoint of epoch {epoch}; it keeps "
                     f"{', '.join(d.name for d in kept) or 'none'}")


def compare(a: Path, b: Path, split: str, source: str) -> tuple[list[dict], Interval]:
    """Rows per language (acc of A, of B, A − B) and the target average's paired interval."""
    hits_a, hits_b = {}, {}  # (lang, id) -> predicted == gold
    for checkpoint, hits in ((a, hits_a), (b, hits_b)):
        if split not in (predictions := read_predictions(checkpoint)):
            raise SystemExit(f"error: {checkpoint} holds predictions of {', '.join(predictions) or 'no split'}, not "
                             f"{split!r}: run with evals [{{type: classification, split: {split}, every_epoch: true}}]")
        p = predictions[split]
        hits.update({(lang, i): g == q for i, lang, g, q in zip(*(p[k] for k in ("id", "lang", "label", "predicted")))})
    if hits_a.keys() != hits_b.keys():
        raise SystemExit(f"error: {a} and {b} were scored on different {split} items "
                         f"({len(hits_a)} and {len(hits_b)}; {len(hits_a.keys() ^ hits_b.keys())} not shared)")
    keys, rows = sorted(hits_a), []
    for lang in sorted({lang for lang, _ in keys}, key=lambda lang: (lang != source, lang)):
        mine = [k for k in keys if k[0] == lang]
        acc_a, acc_b = (sum(hits[k] for k in mine) / len(mine) for hits in (hits_a, hits_b))
        rows.append({"lang": lang, "items": len(mine), "A": f"{acc_a:.3f}", "B": f"{acc_b:.3f}",
                     "A − B": f"{acc_a - acc_b:+.3f}"})
    targets = [k for k in keys if k[0] != source]
    return rows, paired_bootstrap([float(hits_a[k]) for k in targets], [float(hits_b[k]) for k in targets])


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("a", help="run directory A (output.dir of a fine-tuning run)")
    parser.add_argument("b", help="run directory B")
    parser.add_argument("--epoch", type=int, help="compare the checkpoints of this epoch (default: each run's latest)")
    parser.add_argument("--split", default="val", help="the evaluated split whose predictions are compared")
    args = parser.parse_args()
    a, b = checkpoint_of(args.a, args.epoch), checkpoint_of(args.b, args.epoch)
    cfgs = {run: read_run_config(run, FinetuneConfig) for run in (args.a, args.b)}
    if missing := [run for run, cfg in cfgs.items() if cfg is None]:
        raise SystemExit(f"error: {missing[0]} has no config.yaml: not a fine-tuning run directory")
    if len(sources := {cfg.task.source_lang for cfg in cfgs.values()}) > 1:
        raise SystemExit(f"error: {args.a} and {args.b} have different source languages")
    source = sources.pop()
    rows, interval = compare(a, b, args.split, source)
    print(f"A: {a}\nB: {b}\n\n{markdown_table(rows)}\n\ntarget average, A − B: {interval} ({interval.verdict}; "
          f"paired bootstrap over {sum(r['items'] for r in rows if r['lang'] != source)} target items)")


if __name__ == "__main__":
    main()
