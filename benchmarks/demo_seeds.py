"""`make demo` at three seeds: above the better frozen probe, every class predicted, the same result when run again.
Each run's final classifier (the LM learner's) is scored as a study scores a unit, against the same seed's ``declared``
unit of ``studies/baselines_sib200_150.yaml`` (the same config, an earlier trial); prints demo_seeds.md's table.

    make demo ARGS="--set lm.optim.seed=S --set emb.optim.seed=S --set selection.seed=S \\
                    --set output.dir=results/cotrain/demo-seedS"           # S = 0, 1, 2 (0: plain make demo)
    python benchmarks/demo_seeds.py results/cotrain/demo-seed0 results/cotrain/demo-seed1 results/cotrain/demo-seed2"""

from __future__ import annotations

import json
from pathlib import Path

import harness
from xlt.cotrain.learner import learner_run
from xlt.engine.checkpoints import latest_checkpoint
from xlt.hardware import cpu_model
from xlt.metrics import ACC, AVG_TARGET, F1, metric_name
from xlt.report import markdown_table
from xlt.study.units import scored_arm
from xlt.train.workload import read_predictions


def demo_row(run: Path) -> dict:
    results = json.loads((run / "results.json").read_bytes())
    seed, source = results["config"]["lm"]["optim"]["seed"], results["config"]["task"]["source_lang"]
    with latest_checkpoint(learner_run(str(run), "lm")).as_directory() as last:
        arm = scored_arm(read_predictions(last)["test"], source)
    arm["iterations"] = [h[metric_name("test", ACC, AVG_TARGET)] for h in results["history"] if h["learner"] == "lm"]
    unit = json.loads((harness.HERE / "studies" / "baselines_sib200_150" / "units" / f"declared-seed{seed}.json")
                      .read_bytes())["arms"]["declared/lm"]
    differs = [key for key in ("acc", "f1", "items", "iterations") if arm[key] != unit[key]]  # what must repeat exactly
    probe, scores = max(results["probes"].items(), key=lambda kv: kv[1][ACC][AVG_TARGET])
    acc, f1, best = arm[ACC][AVG_TARGET], arm[F1][AVG_TARGET], scores[ACC][AVG_TARGET]
    return {"seed": seed, "avg target acc": round(acc, 4), "avg target macro-F1": round(f1, 4),
            "better frozen probe (acc / F1)": f"{probe}: {best:.4f} / {scores[F1][AVG_TARGET]:.4f}",
            "above it": "yes" if acc > best else "NO",
            "classes predicted": f"{arm['classes_predicted']} / {arm['classes']}",
            "the study's unit again": "identical" if not differs else "differs: " + ", ".join(differs),
            "job minutes": round(max(row["start s"] + row["seconds"] for row in results["phases"]) / 60, 2)}


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("runs", nargs="+", type=Path, help="finished demo runs' output directories")
    print(f"{markdown_table([demo_row(run) for run in parser.parse_args().runs])}\n\nCPU: {cpu_model()}")


if __name__ == "__main__":
    main()
