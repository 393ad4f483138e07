"""What the learners of a co-training (or self-training) run handed each other, from the run's own records.

    .venv/bin/python benchmarks/cotrain_exchange.py results/fidelity/cotrain-nusax-10/co-seed0 [--out exchange.md]

Each row a learner selected (``state.json``) scored against the pool's gold label (issue 52: co-training's loss on NusaX
at 10% of the labels): per iteration and selecting learner, per language, and each fit's evaluation per language."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import harness
from xlt.cotrain import CotrainConfig
from xlt.cotrain.loop import receiver
from xlt.cotrain.pool import pool_rows
from xlt.cotrain.state import LoopState
from xlt.engine.runs import read_run_config
from xlt.metrics import per_language
from xlt.report import markdown_table
from xlt.tasks import load_task


def counts(values) -> str:
    return ", ".join(f"{label} {n}" for label, n in Counter(values).most_common())


def exchange_tables(cfg: CotrainConfig, state: LoopState, gold: dict[str, str]) -> tuple[list[dict], list[dict]]:
    """(a row per iteration and selecting learner, a row per selecting learner and language)."""
    recorded = {(h["iteration"], h["learner"]): h for h in state.history}
    by_step: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for row in (row for rows in state.received.values() for row in rows):
        by_step[(row["iteration"], row["selected_by"])].append(row)
    passes = set(by_step) | {key for key, h in recorded.items() if "pseudo/candidates" in h}  # also those of 0 rows
    steps, languages = [], defaultdict(list)
    for iteration, selector in sorted(passes):
        rows, record = by_step.get((iteration, selector), []), recorded.get((iteration, selector), {})
        scored = [r for r in rows if gold.get(r["id"]) is not None]
        own = record.get("pseudo/accuracy")  # the run's own score of the selection: NaN when it was empty
        candidates = record.get("pseudo/candidates")  # a count recorded as a float metric
        steps.append({"iteration": iteration, "selected by": selector, "to": receiver(cfg.mode, selector),
                      "candidates": None if candidates is None else int(candidates), "rows": len(rows),
                      "accuracy": sum(gold[r["id"]] == r["label"] for r in scored) / len(scored) if scored else None,
                      "run's accuracy": None if own is None or math.isnan(own) else own,
                      "labels given": counts(r["label"] for r in rows),
                      "gold labels": counts(gold[r["id"]] for r in scored)})
        for r in scored:
            languages[(selector, r["lang"])].append(gold[r["id"]] == r["label"])
    return steps, [{"selected by": selector, "lang": lang, "rows": len(hits), "accuracy": sum(hits) / len(hits)}
                   for (selector, lang), hits in sorted(languages.items())]


def history_table(state: LoopState, split: str) -> list[dict]:
    """Each learner's score per language after each fit."""
    return [{"iteration": h["iteration"], "learner": h["learner"],
             "labelled rows": int(h["train/rows"]) if "train/rows" in h else None, **per_language(h, split)}
            for h in state.history]


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("run", help="a co-training run's output.dir")
    parser.add_argument("--data-dir", help="the data root (default: the run's data.data_dir, else $XLT_DATA_DIR)")
    parser.add_argument("--out", help="also write the tables here (markdown)")
    args = parser.parse_args()
    cfg, state = read_run_config(args.run, CotrainConfig), LoopState.load(args.run)
    if cfg is None or state is None:
        raise SystemExit(f"{args.run}: no config.yaml or state.json of a co-training run")
    split, task = cfg.data.metric_split, load_task(cfg.task, args.data_dir or cfg.data.data_dir)
    gold = {r["id"]: r["gold"] for lang in task.target_langs for r in pool_rows(task, lang, cfg.data.max_examples)}
    titles = (f"## {cfg.mode} run {args.run}: what each learner handed on (scored against the pool's gold labels)",
              "### Per language, all iterations", f"### Each fit's {split} accuracy per language")
    tables = [*exchange_tables(cfg, state, gold), history_table(state, split)]
    text = "\n\n".join(f"{title}\n\n{markdown_table(rows, digits=3)}" for title, rows in zip(titles, tables)) + "\n"
    print(text)
    if args.out:
        harness.write(args.out, text)

if __name__ == "__main__":
    main()
