"""`make demo` at three seeds: above the better frozen probe, every class predicted, the same result when run again.

    make demo ARGS="--set lm.optim.seed=S --set emb.optim.seed=S --set selection.seed=S --set output.dir=results/cotrain/demo-seedS"
    python benchmarks/demo_seeds.py results/cotrain/demo-seed0 results/cotrain/demo-seed1 results/cotrain/demo-seed2

(S = 0, 1, 2; seed 0 is plain ``make demo``'s.) Each demo run's final classifier, the LM learner's last fit, is scored
from the predictions its latest checkpoint recorded, as a study scores a unit (``xlt.study.units.scored_arm``), and set
against the record of the same seed's ``declared`` unit of ``studies/baselines_sib200_150.yaml``: the demo's own config
run earlier as a trial of a study (another process, another launcher, another day). Identical accuracy, macro-F1 and
item-by-item correctness on the 600 target sentences is the demo's result repeated; the per-iteration averages are
compared too. Prints the markdown of ``benchmarks/demo_seeds.md``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from xlt.cotrain.learner import learner_run
from xlt.engine.checkpoints import latest_checkpoint
from xlt.hardware import cpu_model
from xlt.metrics import ACC, AVG_TARGET, F1, metric_name
from xlt.report import markdown_table
from xlt.study.units import scored_arm
from xlt.train.workload import read_predictions

REPO = Path(__file__).resolve().parents[1]
STUDY = REPO / "benchmarks/studies/baselines_sib200_150"
ARM = "declared/lm"
COMPARED = ("acc", "f1", "items", "iterations")  # what must repeat exactly


def demo_row(run: Path) -> dict:
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    config = results["config"]
    seed, split, source = config["lm"]["optim"]["seed"], "test", config["task"]["source_lang"]
    with latest_checkpoint(learner_run(str(run), "lm")).as_directory() as last:
        arm = scored_arm(read_predictions(last)[split], source)
    arm["iterations"] = [h[metric_name(split, ACC, AVG_TARGET)] for h in results["history"] if h["learner"] == "lm"]
    unit = json.loads((STUDY / "units" / f"declared-seed{seed}.json").read_text(encoding="utf-8"))["arms"][ARM]
    differs = [key for key in COMPARED if arm[key] != unit[key]]
    probe, scores = max(results["probes"].items(), key=lambda kv: kv[1][ACC][AVG_TARGET])
    seconds = max(row["start s"] + row["seconds"] for row in results["phases"])
    return {"seed": seed, "avg target acc": round(arm[ACC][AVG_TARGET], 4), "avg target macro-F1": round(arm[F1][AVG_TARGET], 4),
            "better frozen probe (acc / F1)": f"{probe}: {scores[ACC][AVG_TARGET]:.4f} / {scores[F1][AVG_TARGET]:.4f}",
            "above it": "yes" if arm[ACC][AVG_TARGET] > scores[ACC][AVG_TARGET] else "NO",
            "classes predicted": f"{arm['classes_predicted']} / {arm['classes']}",
            "the study's unit again": "identical" if not differs else "differs: " + ", ".join(differs),
            "job minutes": round(seconds / 60, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="finished demo runs' output directories")
    args = parser.parse_args()
    print(markdown_table([demo_row(run) for run in args.runs]))
    print(f"\nCPU: {cpu_model()}")


if __name__ == "__main__":
    main()
