"""The declared recipes against what a user tries first, from the baselines studies' unit records (under
``benchmarks/studies/<name>/units``; a study still running is shown as far as it went): per arm, average target
accuracy and macro-F1 over seeds, the fewest classes predicted, minutes a unit; then each recipe (``recipe_arms``)
− the best baseline, with paired bootstrap intervals (``xlt.study.report.comparisons``).

    python jobs/study.py --study studies/baselines_sib200_150.yaml     # each of STUDIES: runs (and resumes) it
    python benchmarks/baselines.py                                      # -> benchmarks/baselines.md
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import harness
from xlt.config import from_dict
from xlt.report import markdown_table
from xlt.study import load_study
from xlt.study.report import arm_runs, comparisons, summary
from xlt.study.spec import Comparison, Study
from xlt.study.units import imported_records, read_unit_record
from xlt.tasks import TaskConfig

REPO = harness.REPO
STUDIES = {"baselines_sib200_150": "SIB-200, 150 labels", "baselines_sib200_701": "SIB-200, 701 labels",
           "baselines_nusax": "NusaX", "baselines_xnli": "XNLI, 2,000 pairs", "baselines_pawsx": "PAWS-X, 1,200 pairs"}
PRESET = "declared"  # the variant that runs the job preset as it is
ADAPTED = "adapted-e5"  # the e5 probe adapted to each target's unlabelled pool (xlt.eval.adaptation)


def recipe_arms(study: Study) -> dict[str, str]:
    """The declared recipe's arm and the other's: for single texts the adapted e5 probe is declared and the job
    preset's recipe (co-training's LM learner, fine-tuning) the other; for sentence pairs the other way round."""
    preset = f"{PRESET}/lm" if study.job == "cotrain" else PRESET
    paired = from_dict(TaskConfig, study.job_data(study.variant(PRESET))["task"]).paired
    return {"declared": preset, "other": ADAPTED} if paired else {"declared": ADAPTED, "other": preset}


def study_section(study: Study) -> tuple[str, dict | None]:
    """The study's section of the summary, and its row of the overview (None until both sides ran)."""
    output = str(REPO / study.output)  # an absolute output stays as it is
    found = {unit.name: read_unit_record(output, unit.name) for unit in study.units()}
    records = [r for r in found.values() if r is not None] + imported_records(output)
    missing = [name for name, record in found.items() if record is None]
    source = Path(study.source).resolve()
    shown = source.relative_to(REPO) if source.is_relative_to(REPO) else source
    head = f"## {study.title}\n\n`python jobs/study.py --study {shown}`"
    if not records:
        return f"{head}\n\nNothing has run yet: {len(missing)} units to run.", None
    arms = summary(records)
    cpus = sorted({r.get("cpu") or r.get("device") for r in records})
    rows = [{"arm": study.label(arm), "seeds": len(s["seeds"]), "avg target acc": spread(s, "acc"),
             "avg target macro-F1": spread(s, "f1"),
             "classes predicted (fewest)": f"{s['classes_predicted']} / {s['classes']}" if "classes" in s else None,
             "minutes a unit": s["minutes"]} for arm, s in arms.items()]
    parts = [head, f"Ran on: {', '.join(cpus)}.", *([f"Not finished yet: {', '.join(missing)}."] if missing else []),
             markdown_table(rows)]
    recipes = recipe_arms(study)
    baselines = {arm: s["acc"]["mean"] for arm, s in arms.items() if arm not in recipes.values() and "acc" in s}
    if not baselines:
        return "\n\n".join(parts), None
    best = max(baselines, key=baselines.get)
    overview = {"task": STUDIES.get(study.name, study.name), "best baseline": study.label(best)}
    for recipe, arm in recipes.items():
        if arm not in arms:
            continue
        (c,) = comparisons(dataclasses.replace(study, comparisons=(Comparison(arm, best),)), arm_runs(study, records))
        overview[recipe] = {"recipe": study.label(arm),
                            f"{recipe} − best (interval over items)": c["measured (interval over items)"],
                            "over seeds and items": c["over seeds and items"], "seeds": c["seeds"],
                            "above": c["seed_item_interval"][1] > 0}
        parts.append(f"{study.label(arm)} − best baseline ({study.label(best)}): "
                     f"{c['measured (interval over items)']} over {c['items']} target items; "
                     f"{c['over seeds and items']} over seeds and items; seeds {c['seeds']}.")
    return "\n\n".join(parts), overview


def recipe_table(overview: list[dict], recipe: str) -> tuple[int, int, str]:
    """The tasks that measured ``recipe``, those where it is above the best baseline beyond noise, and its table."""
    rows = [{"task": row["task"], **row[recipe], "best baseline": row["best baseline"]}
            for row in overview if recipe in row]
    above = sum(row.pop("above") for row in rows)
    return len(rows), above, markdown_table(rows) if rows else ""


def spread(arm: dict, score: str) -> str | None:
    """``mean ± std`` over seeds; one run's value alone."""
    s = arm.get(score)
    return None if s is None else f"{s['mean']:.3f}" + ("" if len(arm["seeds"]) == 1 else f" ± {s['std']:.3f}")


def main() -> None:
    args = harness.parser(__doc__, "baselines.md").parse_args()
    sections, overview = zip(*(study_section(load_study(REPO / "studies" / f"{name}.yaml")) for name in STUDIES))
    overview = [row for row in overview if row]
    text = ["# The declared recipes against the first things a user tries",
            "```\npython benchmarks/baselines.py   # after python jobs/study.py --study studies/<each study>.yaml\n```",
            "The frozen probe of each bundled model, CE fine-tuning (one learning rate for every weight), SetFit with "
            "the same e5 body (single-text tasks), the job preset's recipe and the adapted e5 probe (the e5 probe "
            "adapted to each target language's unlabelled pool: centred on its own mean, then three rounds of "
            "class-balanced self-training; `xlt.eval.adaptation`), on the same rows over three seeds (a probe is "
            "deterministic: one run). The declared recipe of single texts is the adapted e5 probe, of sentence pairs "
            "the fine-tuning preset's; the other of the two is shown beside it. Intervals: paired bootstrap 95% over "
            "target-language items (each item's correctness averaged over seeds), and over seeds and items together; "
            "a gain or loss only where the interval excludes 0."]
    for recipe, name in (("declared", "Declared recipe"), ("other", "The other recipe")):
        measured, above, table = recipe_table(overview, recipe)
        if measured:
            so_far = "" if measured == len(STUDIES) else f" measured so far (of {len(STUDIES)})"
            text += [f"{name} above the best baseline with the seeds-and-items interval above 0: {above} of "
                     f"{measured} tasks{so_far}.", table]
    harness.write(args.out, "\n\n".join(text + list(sections)) + "\n", show=True)


if __name__ == "__main__":
    main()
