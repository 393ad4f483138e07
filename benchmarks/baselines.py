"""benchmarks/baselines.md: the declared recipes against what a user tries first, from the baselines studies.

    python jobs/study.py --study studies/baselines_sib200_150.yaml     # each of STUDIES: runs (and resumes) it
    python benchmarks/baselines.py                                      # this summary of what has finished

For each study of ``STUDIES`` (its units' records under ``benchmarks/studies/<name>/units``): every arm's
average target accuracy and macro-F1 (mean ± std over seeds), the fewest classes it predicted on the targets in
any seed, its minutes a unit and the CPU; then the declared recipe − the best baseline (the arm other than the
declared recipe with the highest mean accuracy), with paired bootstrap 95% intervals over target items and over
seeds and items (``xlt.study.report.comparisons``). A study with units still to run is shown as far as it went.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from xlt.report import markdown_table
from xlt.study import load_study
from xlt.study.report import arm_runs, comparisons, summary
from xlt.study.spec import Comparison, Study
from xlt.study.units import imported_records, read_record

REPO = Path(__file__).resolve().parents[1]
STUDIES = {"baselines_sib200_150": "SIB-200, 150 labels", "baselines_sib200_701": "SIB-200, 701 labels",
           "baselines_nusax": "NusaX", "baselines_xnli": "XNLI, 2,000 pairs", "baselines_pawsx": "PAWS-X, 1,200 pairs"}
DECLARED = "declared"
OUT = REPO / "benchmarks" / "baselines.md"


def declared_arm(study: Study) -> str:
    return f"{DECLARED}/lm" if study.job == "cotrain" else DECLARED


def study_section(study: Study) -> tuple[str, dict | None]:
    """The study's section of the summary, and its row of the overview (None until both sides ran)."""
    output = str(REPO / study.output) if not Path(study.output).is_absolute() else study.output
    records = [r for r in (read_record(output, u.name) for u in study.units()) if r is not None]
    records += imported_records(output)
    missing = [u.name for u in study.units() if read_record(output, u.name) is None]
    source = Path(study.source).resolve()
    head = f"## {study.title}\n\n`python jobs/study.py --study {source.relative_to(REPO) if source.is_relative_to(REPO) else source}`"
    if not records:
        return f"{head}\n\nNothing has run yet: {len(missing)} units to run.", None
    arms = summary(records)
    cpus = sorted({r.get("cpu") or r.get("device") for r in records})
    rows = []
    for arm, s in arms.items():
        rows.append({"arm": study.label(arm), "seeds": len(s["seeds"]),
                     "avg target acc": _spread(s, "acc"), "avg target macro-F1": _spread(s, "f1"),
                     "classes predicted (fewest)": f"{s['classes_predicted']} / {s['classes']}" if "classes" in s else None,
                     "minutes a unit": s["minutes"]})
    parts = [head, f"Ran on: {', '.join(cpus)}."]
    if missing:
        parts.append(f"Not finished yet: {', '.join(missing)}.")
    parts.append(markdown_table(rows))
    declared = declared_arm(study)
    baselines = {arm: s["acc"]["mean"] for arm, s in arms.items() if arm != declared and "acc" in s}
    if declared not in arms or not baselines:
        return "\n\n".join(parts), None
    best = max(baselines, key=baselines.get)
    (c,) = comparisons(dataclasses.replace(study, comparisons=(Comparison(declared, best),)), arm_runs(study, records))
    overview = {"task": STUDIES.get(study.name, study.name), "best baseline": study.label(best),
                "declared − best (interval over items)": c["measured (interval over items)"],
                "over seeds and items": c["over seeds and items"], "verdict": c["verdict"], "seeds": c["seeds"],
                "above": c["seed_item_interval"][1] > 0}
    parts.append(f"Declared recipe − best baseline ({study.label(best)}): {c['measured (interval over items)']} over "
                 f"{c['items']} target items; {c['over seeds and items']} over seeds and items; seeds {c['seeds']}.")
    return "\n\n".join(parts), overview


def _spread(arm: dict, score: str) -> str | None:
    """``mean ± std`` over seeds; one run's value alone."""
    if score not in arm:
        return None
    s = arm[score]
    return f"{s['mean']:.3f}" if len(arm["seeds"]) == 1 else f"{s['mean']:.3f} ± {s['std']:.3f}"


def main() -> None:
    sections, overview = [], []
    for name in STUDIES:
        section, row = study_section(load_study(REPO / "studies" / f"{name}.yaml"))
        sections.append(section)
        if row:
            overview.append(row)
    above = sum(row.pop("above") for row in overview)
    text = ["# The declared recipes against the first things a user tries",
            "```\npython benchmarks/baselines.py   # after python jobs/study.py --study studies/<each study>.yaml\n```",
            "The frozen probe of each bundled model, CE fine-tuning (one learning rate for every weight), SetFit with the "
            "same e5 body (single-text tasks) and the declared recipe, on the same rows over three seeds. Intervals: "
            "paired bootstrap 95% over target-language items (each item's correctness averaged over seeds), and over "
            "seeds and items together; a gain or loss only where the interval excludes 0."]
    if overview:
        text += [f"Declared recipe above the best baseline with the seeds-and-items interval above 0: {above} of "
                 f"{len(overview)} tasks measured so far (of {len(STUDIES)}).", markdown_table(overview)]
    OUT.write_text("\n\n".join(text + sections) + "\n", encoding="utf-8")
    print(OUT.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
