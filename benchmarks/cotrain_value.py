"""What a co-training study's runs chose and exchanged, from what they recorded (issue 92; cotrain_value.md).

    python benchmarks/cotrain_value.py --study studies/cotrain-value-sib200-150.yaml

Per unit and iteration: the learners' and the job's classifier's source dev accuracy (what ``choose: dev`` and
``keep: best-dev`` read), the classifier chosen, its target average beside the learners' product's; per learner,
what the exchange handed it: rows, the largest class and language, pseudo-label accuracy by round."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import harness
from xlt.cotrain.classifier import CLASSIFIER, DEV, combined_predictions, kept_iteration, read_predictions, scores
from xlt.metrics import ACC, AVG_TARGET, metric_name
from xlt.report import markdown_table
from xlt.study.spec import load_study
from xlt.study.units import run_dir


def unit_rows(run: Path, unit: str, split: str) -> tuple[list[dict], list[dict]]:
    state = json.loads((run / "state.json").read_text())
    history = state["history"]
    source = read_predictions(str(run), 0)["lm"][DEV]["lang"][0]
    dev, avg = metric_name(DEV, ACC, source), metric_name(split, ACC, AVG_TARGET)
    best = kept_iteration(history, "best-dev", source)
    learner_dev = {(h["learner"], h["iteration"]): h.get(dev) for h in reversed(history)}  # the first record
    chosen, exchanged = [], []
    for h in (h for h in history if h["learner"] == CLASSIFIER):
        i, both = h["iteration"], read_predictions(str(run), h["iteration"])
        product = combined_predictions({name: both[name][split] for name in ("lm", "emb")}, ("lm", "emb"))
        chosen.append({"unit": unit, "iteration": i, f"lm {source} dev": learner_dev[("lm", i)],
                       f"emb {source} dev": learner_dev[("emb", i)], "classifier": h.get("combines"),
                       f"its {source} dev": h.get(dev), "its avg_target": h.get(avg),
                       "lm × emb avg_target": scores({split: product}, source)[avg],
                       "best-dev keeps": "←" if i == best else ""})
    for learner, rows in state["received"].items():
        if rows:
            (label, n_label), = Counter(r["label"] for r in rows).most_common(1)
            (lang, n_lang), = Counter(r["lang"] for r in rows).most_common(1)
            selectors = {r["selected_by"] for r in rows}  # the other learner (co-training) or itself (self-training)
            accuracy = [h["pseudo/accuracy"] for h in history if h["learner"] in selectors and "pseudo/accuracy" in h]
            exchanged.append({"unit": unit, "received by": learner, "rows": len(rows),
                              "largest class": f"{label} {n_label / len(rows):.0%}",
                              "largest language": f"{lang} {n_lang / len(rows):.0%}",
                              "pseudo acc by round": ", ".join(f"{a:.2f}" for a in accuracy)})
    return chosen, exchanged


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--study", required=True)
    args = parser.parse_args()
    study, chosen, exchanged = load_study(args.study), [], []
    for unit in study.units():
        run = Path(run_dir(study.output, unit))
        if study.variant(unit.variant).recipe == "job" and (run / "state.json").is_file():
            c, e = unit_rows(run, unit.name, study.split)
            chosen, exchanged = chosen + c, exchanged + e
    print(f"## What dev would choose ({study.title})\n\n{markdown_table(chosen)}\n\n"
          f"## What the exchange handed over\n\n{markdown_table(exchanged)}\n\n"
          f"Made by `python benchmarks/cotrain_value.py --study {args.study}`.")

if __name__ == "__main__":
    main()
