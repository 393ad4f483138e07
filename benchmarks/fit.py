"""How closely the fine-tuned units of a study fit the rows they trained on, against their test rows: a unit far better
on the English pairs it was trained on than on English test pairs has learned those pairs rather than the task.

    .venv/bin/python benchmarks/fit.py studies/scl-pawsx.yaml ce-seed0 scl-seed0  # -> fidelity/scl-pawsx-fit.md

Each unit's latest checkpoint predicts as the job's evaluation does (``Classifier.predict``) its source-language
training rows (``xlt.train.data.train_rows``: originals only, no views) and test rows."""

from __future__ import annotations

from pathlib import Path

import harness
from xlt.engine.checkpoints import latest_checkpoint
from xlt.report import markdown_table
from xlt.study import load_study
from xlt.tasks import load_task
from xlt.train.checkpoint import load_classifier, read_checkpoint
from xlt.train.data import eval_rows, train_rows


def accuracy(classifier, rows: list[dict]) -> float:
    items = [(r["text"], r["text_pair"]) if classifier.paired else r["text"] for r in rows]
    return sum(p == r["label"] for p, r in zip(classifier.predict(items).labels, rows)) / len(rows)


def unit_fit(unit: Path) -> dict:
    """Accuracy of ``unit``'s final checkpoint on its source-language train rows and test rows."""
    checkpoint = Path(latest_checkpoint(unit).path)
    cfg = read_checkpoint(checkpoint).config
    task = load_task(cfg.task, cfg.data.data_dir)
    train = [r for r in train_rows(cfg.data, task) if r["lang"] == task.source_lang]
    test = [r for r in eval_rows(task, "test", cfg.data.max_examples) if r["lang"] == task.source_lang]
    classifier = load_classifier(checkpoint)
    return {"unit": unit.name, "checkpoint": checkpoint.name, "source": task.source_lang, "train_rows": len(train),
            "train": accuracy(classifier, train), "test_rows": len(test), "test": accuracy(classifier, test)}


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("study", help="a study file whose units have run here, e.g. studies/scl-pawsx.yaml")
    parser.add_argument("units", nargs="+", help="its units (run directories under <output>/runs/), e.g. ce-seed0")
    parser.add_argument("--out", type=Path, help="default: benchmarks/fidelity/<study>-fit.md")
    args = parser.parse_args()
    study, machine, fits = load_study(args.study), harness.Machine(), []
    for name in args.units:
        fits.append(unit_fit(Path(study.output) / "runs" / name))
        print(f"{name}: train {fits[-1]['train']:.3f}, test {fits[-1]['test']:.3f}", flush=True)
    source = fits[0]["source"]
    rows = [{"unit": f["unit"], "checkpoint": f["checkpoint"],
             **{f"{source} {split}": f"{f[split]:.3f} ({f[split + '_rows']})" for split in ("train", "test")},
             "train − test": f"{f['train'] - f['test']:+.3f}"} for f in fits]
    harness.write(args.out or harness.HERE / "fidelity" / f"{study.name}-fit.md",
                  f"{machine.header(f'{study.name}: fit to the training rows against the test rows')}\n"
                  f"Accuracy of each unit's final checkpoint on the {source} rows it was trained on and on the "
                  f"{source} test rows (rows in parentheses).\n\n" + markdown_table(rows) + "\n")


if __name__ == "__main__":
    main()
