"""SIB-200 co-training vs self-training vs each learner alone (issue 5; Yu & Joty 2021, Table 2 / Fig. 3 analogue).

    python benchmarks/sib200_cotrain.py                  # co-training and self-training, seed 0
    python benchmarks/sib200_cotrain.py --seeds 0 1

Each run is ``jobs/cotrain.py --config configs/cotrain_sib200.yaml --set mode=<mode> --set
selection.seed=<seed> --set output.dir=results/sib200_cotrain/<mode>-seed<seed>`` run in-process
(``run_cotraining``), so an interrupted benchmark resumes every run at its next iteration.
Iteration 0 of either run is each learner alone (fitted on English only): the "LM alone" and
"embedding learner alone" rows. Writes ``benchmarks/sib200_cotrain.md`` / ``.json`` and the
plot ``benchmarks/sib200_cotrain.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from xlt.cotrain import load_cotrain_config, prepare, run_cotraining
from xlt.cotrain.tables import iteration_rows, plot_iterations
from xlt.metrics import ACC, AVG_TARGET, metric_name
from xlt.report import command_line, markdown_table


REPO = Path(__file__).resolve().parents[1]


PRESET = REPO / "configs" / "cotrain_sib200.yaml"
MODES = {"cotrain": "co-training", "self-train": "self-training"}


def run(mode: str, seed: int, storage: Path) -> dict:
    cfg = load_cotrain_config(PRESET, [f"mode={mode}", f"selection.seed={seed}", f"lm.optim.seed={seed}",
                                       f"emb.optim.seed={seed}", f"output.dir={storage / f'{mode}-seed{seed}'}"])
    start = time.monotonic()
    state = run_cotraining(cfg)
    return {"mode": mode, "seed": seed, "minutes_this_call": (time.monotonic() - start) / 60,
            "history": state.history, "config": str(PRESET)}


def language_table(records: list[dict], langs: list[str], split: str) -> list[dict]:
    """LM alone, embedding learner alone (iteration 0), then each learner after the last iteration
    of each mode; the mean over seeds."""
    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    def acc(history: list[dict], iteration: int, learner: str, lang: str) -> float:
        return next(h[metric_name(split, ACC, lang)] for h in history
                    if h["iteration"] == iteration and h["learner"] == learner)

    rows = []
    for learner, name in (("lm", "LM learner"), ("emb", "embedding learner")):
        alone = [r for r in records if r["mode"] == "cotrain"] or records
        rows.append({"model": f"{name} alone", **{lang: mean([acc(r["history"], 0, learner, lang) for r in alone])
                                                  for lang in langs}})
        for mode, label in MODES.items():
            runs = [r for r in records if r["mode"] == mode]
            if runs:
                last = max(h["iteration"] for h in runs[0]["history"])
                rows.append({"model": f"{name} + {label} (iteration {last})",
                             **{lang: mean([acc(r["history"], last, learner, lang) for r in runs]) for lang in langs}})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--storage", type=Path, default=REPO / "results" / "sib200_cotrain")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "sib200_cotrain")
    args = parser.parse_args()
    os.environ.setdefault("XLT_DATA_DIR", str(REPO.parent / "shared" / "data"))

    import logging

    import ray

    from xlt.logs import quiet_libraries

    quiet_libraries()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    records = [run(mode, seed, args.storage.resolve()) for mode in args.modes for seed in args.seeds]

    cfg = load_cotrain_config(PRESET)
    data = prepare(cfg)
    split = cfg.data.metric_split
    langs = [cfg.task.source_lang, *data.targets, AVG_TARGET]
    sections = [
        "# SIB-200 co-training (Yu & Joty 2021, Table 2 / Fig. 3 analogue)",
        f"Command: `{command_line()}`  \nDate: {time.strftime('%Y-%m-%d')}. Seeds: "
        f"{', '.join(map(str, args.seeds))} (selection, head initialisation and shuffling; tables average over seeds).",
        settings(cfg, len(data.labeled), data.pool_size),
        f"## {split.capitalize()} accuracy per language",
        markdown_table(language_table(records, langs, split)),
    ]
    for record in records:
        sections += [f"## {MODES[record['mode']]}, seed {record['seed']}: per iteration",
                     markdown_table(iteration_rows(record["history"], split, cfg.task.source_lang))]
        plot_iterations(record["history"], split, args.out.parent / f"{args.out.name}_{record['mode']}_seed{record['seed']}.png",
                        f"{MODES[record['mode']]}, seed {record['seed']}")
    sections.append("Plots (average target accuracy per iteration, Yu & Joty 2021, Fig. 3 analogue): "
                    + ", ".join(f"`{args.out.name}_{r['mode']}_seed{r['seed']}.png`" for r in records) + ".")
    text = "\n\n".join(sections) + "\n"
    args.out.with_suffix(".md").write_text(text, encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps({"command": command_line(), "records": records}, indent=1))
    print(text)


def learner_line(name: str, learner, note: str = "") -> str:
    """What a learner is and how it is fitted, read from its config."""
    o = learner.optim
    frozen = ", word embeddings frozen" if o.freeze_word_embeddings else ""
    return (f"{name}: `{learner.model.source}`{frozen}; AdamW lr {o.lr:g}, weight decay {o.weight_decay:g}, "
            f"linear schedule, batch {o.batch_size}, K = {o.epochs} epochs per fit, re-fitted from the "
            f"pretrained weights every iteration{note}")


def settings(cfg, labeled: int, pool: int) -> str:
    sel, size = cfg.selection, cfg.selection.size or labeled // 3
    return "\n".join([
        f"## Settings ({PRESET.relative_to(REPO)}; chosen to fit a 2-core CPU machine)", "",
        f"- Labelled: the {labeled} {cfg.task.source_lang} SIB-200 train sentences. Unlabelled pool: the train "
        f"sentences of the other languages ({pool} rows, labels hidden; they are translations of the labelled "
        f"ones, as SIB-200 is parallel). Evaluation: every language's {cfg.data.metric_split} split.",
        f"- {learner_line('LM learner', cfg.lm)}.",
        f"- {learner_line('Embedding learner', cfg.emb, ' (USE has no trainable weights: its linear head learns)')}.",
        f"- Selection `{sel.policy}` (Yu & Joty 2021, §4.2): threshold t = {sel.threshold:g}, at most {size} candidates "
        f"per learner and iteration; {cfg.iterations} exchange rounds (iterations 0..{cfg.iterations}; iteration "
        "0 is each learner alone). Self-training feeds each learner its own selection.",
        f"- Pseudo-labels by the `xlt.inference` actor pool ({cfg.inference.num_actors} actor(s), "
        f"{cfg.inference.num_cpus:g} CPU and {cfg.inference.torch_threads} torch threads each); "
        "learners as Ray actors.",
    ])


if __name__ == "__main__":
    main()
