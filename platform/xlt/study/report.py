"""A study's report, from its units' records: tables, the comparisons with their intervals, a plot.

- accuracy and macro-F1 per language and over the target languages, mean ± std over seeds, one row per
  arm (and per kind of rows, where imported units were scored on other rows than the study draws now), with
  the source language's dev accuracy first where the units recorded it (what a choice may read);
- for a co-training study, each learner's target average after every iteration;
- ``choose``: the arm the source language's dev picks among candidates, simplest first (``chosen``);
- each comparison A − B (marked where an arm was picked on test): the difference of target-language accuracy with
  its paired bootstrap 95%
  interval over test items (``xlt.eval.stats.paired_bootstrap``: each item's correctness averaged over
  seeds), called a gain or a loss only when the interval excludes 0; beside it the interval of Owen's
  pigeonhole bootstrap over seeds and items (``seed_item_bootstrap``; seeds drawn together when both
  arms ran the same seeds: a seed gives both the same initialisation). Two seeded arms that ran some
  seeds in common but not the same ones are compared on those only; an arm with fewer seeds than the
  study names makes the verdict provisional: another seed can move the difference;
- the units: minutes, where they ran, when they ended;
- the command that runs (and resumes) the study, and the reading written by hand, if any.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..storage import shown_path
from ..eval.stats import mean_std, paired_bootstrap, seed_item_bootstrap
from ..metrics import AVG_TARGET
from ..report import markdown_table
from .spec import Study
from .units import ROWS

Runs = list[dict[str, Any]]  # one arm's runs: {"seed", "rows", "minutes", ...scored arm}
SOURCE_DEV = "source dev"  # the column of an arm's accuracy on the source language's dev rows (what may choose)


def arm_runs(study: Study, records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Runs]:
    """(arm, rows) -> the arm's runs on those rows, by seed, in the study's arm order."""
    found: dict[tuple[str, str], Runs] = {}
    for record in sorted(records, key=lambda r: (r["variant"], r["seed"])):
        for arm, scored in record["arms"].items():
            found.setdefault((arm, record["rows"]), []).append({**scored, "seed": record["seed"]})
    order = {arm: i for i, arm in enumerate(study.all_arms())}
    return dict(sorted(found.items(), key=lambda kv: (kv[0][1] != ROWS, order[kv[0][0]])))


def spread(study: Study, runs: dict[tuple[str, str], Runs], values: Callable[[dict], Mapping[str, float]],
           columns: Sequence[str], several_rows: bool) -> list[dict[str, Any]]:
    """A row per arm: its label, seeds, and ``column: "mean ± std"`` over its runs (one run: its value)."""
    table = []
    for (arm, rows), arm_list in runs.items():
        row: dict[str, Any] = {"arm": study.label(arm), **({"rows": rows} if several_rows else {}),
                               "seeds": len(arm_list)}
        for column in columns:
            found = [values(r)[column] for r in arm_list if column in values(r)]
            if found:
                mean, std = mean_std(found)
                row[column] = f"{mean:.3f} ± {std:.3f}" if len(found) > 1 else f"{mean:.3f}"
        table.append(row)
    return table


def paired_runs(study: Study, a: str, b: str, ra: Runs, rb: Runs) -> tuple[Runs, Runs]:
    """The runs of ``a`` and ``b`` a comparison pairs: where both are seeded and ran some seeds in common
    but not the same ones, only those (one arm's seed 0 against another's seeds 0, 1 and 2 would mix a
    draw's difference with the spread between draws)."""
    if not all(study.variant(arm.split("/")[0]).seeded for arm in (a, b)):
        return ra, rb
    common = {r["seed"] for r in ra} & {r["seed"] for r in rb}
    if not common:
        return ra, rb
    return [r for r in ra if r["seed"] in common], [r for r in rb if r["seed"] in common]


def correctness(runs: Runs) -> list[list[int]]:
    if len({r["items_digest"] for r in runs}) != 1:
        raise ValueError("the runs of one arm were scored on different items")
    return [[int(c) for c in r["items"]] for r in runs]


def comparisons(study: Study, runs: dict[tuple[str, str], Runs]) -> list[dict[str, Any]]:
    """Each comparison of the study on each kind of rows both arms ran on (module docstring)."""
    out = []
    kinds = sorted({rows for _, rows in runs}, key=lambda rows: rows != ROWS)
    for c in study.comparisons:
        for rows in kinds:
            if (c.a, rows) not in runs or (c.b, rows) not in runs:
                continue
            ra, rb = paired_runs(study, c.a, c.b, runs[(c.a, rows)], runs[(c.b, rows)])
            if ra[0]["items_digest"] != rb[0]["items_digest"]:
                raise ValueError(f"{c.a} and {c.b} were scored on different items ({rows})")
            xa, xb = correctness(ra), correctness(rb)
            seeded = all(study.variant(arm.split("/")[0]).seeded for arm in (c.a, c.b))
            matched = seeded and [r["seed"] for r in ra] == [r["seed"] for r in rb]
            items = paired_bootstrap(xa, xb, seed=0)
            crossed = seed_item_bootstrap(xa, xb, matched=matched, seed=0)
            short = [len(x) for arm, x in ((c.a, xa), (c.b, xb))
                     if study.variant(arm.split("/")[0]).seeded and len(x) < len(study.seeds)]
            seeds = f"{len(runs[(c.a, rows)])} / {len(runs[(c.b, rows)])}"
            if len(ra) < len(runs[(c.a, rows)]) or len(rb) < len(runs[(c.b, rows)]):
                seeds += f" (paired on seeds {', '.join(str(r['seed']) for r in ra)})"
            out.append({"difference": f"{study.label(c.a)} − {study.label(c.b)}", "a": c.a, "b": c.b,
                        "paper": f"{c.paper} ({c.source})" if c.source else c.paper, "rows": rows,
                        "measured (interval over items)": str(items),
                        "verdict": items.verdict + (f" (provisional: {min(short)} seed{'s' if min(short) > 1 else ''})"
                                                    if short else "")
                        + (" (an arm picked on test)" if c.picked_on == "test" else ""),
                        "over seeds and items": f"{crossed} {crossed.verdict}", "items": len(xa[0]), "seeds": seeds,
                        "interval": [items.difference, items.low, items.high],
                        "seed_item_interval": [crossed.difference, crossed.low, crossed.high]})
    return out


def build(study: Study, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The report's content (``results.json``): tables, comparisons, units."""
    runs = arm_runs(study, records)
    source_lang = next(iter(runs.values()))[0]["source"] if runs else ""
    several = len({rows for _, rows in runs}) > 1
    langs = sorted({lang for arm_list in runs.values() for r in arm_list for lang in r["acc"]} - {AVG_TARGET},
                   key=lambda lang: (lang != source_lang, lang))
    dev = [SOURCE_DEV] if any("dev" in r for arm_list in runs.values() for r in arm_list) else []
    tables = {"Accuracy on the scored split (mean ± std over seeds)":
              spread(study, runs, lambda r: {**r["acc"], **({SOURCE_DEV: r["dev"]} if "dev" in r else {})},
                     [*dev, *langs, AVG_TARGET], several)}
    if any("f1" in r for arm_list in runs.values() for r in arm_list):  # records before macro-F1 was kept have none
        tables["Macro-F1 on the scored split (mean ± std over seeds)"] = spread(
            study, runs, lambda r: r.get("f1", {}), [*langs, AVG_TARGET], several)
    iterated = {key: arm_list for key, arm_list in runs.items() if "iterations" in arm_list[0]}
    if iterated:
        width = max(len(r["iterations"]) for arm_list in iterated.values() for r in arm_list)
        columns = [f"iteration {i}" for i in range(width)]
        tables["Target average after each co-training iteration (mean ± std over seeds)"] = spread(
            study, iterated, lambda r: dict(zip(columns, r["iterations"])), columns, several)
    units = [{"unit": r["unit"], "minutes": r["minutes"], "rows": r["rows"],
              "ran on": r.get("device") or r.get("cpu"), "finished": r["finished"],
              **({"imported": r["imported"]} if r.get("imported") else {})}
             for r in sorted(records, key=lambda r: (r["variant"], r["seed"]))]
    means = {f"{arm}{'' if rows == ROWS else ' [' + rows + ']'}": mean_std([r["acc"][AVG_TARGET] for r in arm_list])
             for (arm, rows), arm_list in runs.items()}
    return {"title": study.title, "study": study.source, "output": shown_path(study.output), "seeds": list(study.seeds),
            "split": study.split, "tables": tables, "comparisons": comparisons(study, runs), "units": units,
            "avg_target": {arm: {"mean": m, "std": s} for arm, (m, s) in means.items()},
            "arms": summary(records), **({"choice": chosen(study, runs)} if study.choose else {})}


def chosen(study: Study, runs: dict[tuple[str, str], Runs]) -> dict[str, Any]:
    """The arm ``study.choose`` picks on the source language's dev: the first of ``among`` (the simplest) unless
    another's dev accuracy is above it with a seeds-and-items interval wholly above 0, then the highest of those;
    with each candidate's dev and scored-split target average beside it. Test is shown, never read."""
    assert study.choose is not None
    among = study.choose.among
    missing = [arm for arm in among if (arm, ROWS) not in runs or any("dev_items" not in r for r in runs[(arm, ROWS)])]
    if missing:
        return {"chosen": None, "why": f"no choice: {', '.join(missing)} recorded no source dev", "rows": []}
    simplest = runs[(among[0], ROWS)]
    rows, above = [], []
    for arm in among:
        arm_runs = runs[(arm, ROWS)]
        dev_mean, dev_std = mean_std([r["dev"] for r in arm_runs])
        test_mean, test_std = mean_std([r["acc"][AVG_TARGET] for r in arm_runs])
        row = {"arm": study.label(arm), "seeds": len(arm_runs), "source dev": f"{dev_mean:.3f} ± {dev_std:.3f}",
               f"{study.split} avg_target": f"{test_mean:.3f} ± {test_std:.3f}"}
        if arm != among[0]:
            a, b = paired_runs(study, arm, among[0], arm_runs, simplest)
            matched = [r["seed"] for r in a] == [r["seed"] for r in b]
            interval = seed_item_bootstrap([[int(c) for c in r["dev_items"]] for r in a],
                                           [[int(c) for c in r["dev_items"]] for r in b], matched=matched, seed=0)
            row["dev − the simplest, over seeds and items"] = str(interval)
            if interval.low > 0:
                above.append((dev_mean, arm))
        rows.append(row)
    pick = max(above)[1] if above else among[0]
    why = (f"its source dev is above the simplest's ({study.label(among[0])}) beyond noise" if above else
           "dev does not separate the candidates from the simplest, which is declared")
    return {"chosen": pick, "why": why, "rows": rows}


def summary(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per arm on the study's own rows: target-average accuracy and macro-F1 (mean, std over seeds), the
    mean minutes of its units, and the fewest classes it predicted on the targets in any seed."""
    runs: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = {}
    for record in records:
        if record["rows"] == ROWS:
            for arm, scored in record["arms"].items():
                runs.setdefault(arm, []).append((record, scored))
    out = {}
    for arm, pairs in runs.items():
        row: dict[str, Any] = {"seeds": [r["seed"] for r, _ in pairs],
                               "minutes": sum(r["minutes"] for r, _ in pairs) / len(pairs)}
        for score in ("acc", "f1"):
            values = [s[score][AVG_TARGET] for _, s in pairs if score in s]
            if values:
                row[score] = dict(zip(("mean", "std"), mean_std(values)))
        if all("classes" in s for _, s in pairs):
            row["classes_predicted"] = min(s["classes_predicted"] for _, s in pairs)
            row["classes"] = max(s["classes"] for _, s in pairs)
        out[arm] = row
    return out


def markdown(study: Study, content: Mapping[str, Any], command: str, plot_name: str, missing: Sequence[str],
             failed: Mapping[str, str], reading: str | None) -> str:
    """``results.md``."""
    units = content["units"]
    minutes = sum(u["minutes"] for u in units)
    machines = sorted({u["ran on"] for u in units})
    parts = [f"# {study.title}", f"```\n{command}\n```",
             f"{len(units)} units, {minutes:.0f} minutes of units, on {' and '.join(machines) or 'nothing yet'}; "
             f"the {study.split} split scored; seeds {', '.join(map(str, study.seeds))}."]
    if study.notes:
        parts.append(study.notes)
    if missing:
        parts.append(f"Not finished yet: {', '.join(missing)} (the command above runs them).")
    if failed:
        parts.append("Did not finish in the last run (the command above runs them again):\n\n"
                     + "\n".join(f"- {name}: {error}" for name, error in failed.items()))
    for heading, table in content["tables"].items():
        columns = list(dict.fromkeys(key for row in table for key in row))
        parts += [f"## {heading}", markdown_table(table, columns)]
    if content.get("choice"):
        choice = content["choice"]
        verdict = (f"Chosen on the source language's dev: **{study.label(choice['chosen'])}** ({choice['why']})."
                   if choice["chosen"] else choice["why"].capitalize() + ".")
        parts += ["## Chosen on the source language's dev (never on test)", verdict]
        if choice["rows"]:
            parts.append(markdown_table(choice["rows"], list(dict.fromkeys(k for row in choice["rows"] for k in row))))
    if content["comparisons"]:
        shown = ["difference", "paper", "measured (interval over items)", "verdict", "over seeds and items", "items",
                 "seeds"]
        if len({c["rows"] for c in content["comparisons"]}) > 1:
            shown.insert(2, "rows")
        parts += ["## Differences: paired bootstrap 95% intervals over target-language items, and over seeds and "
                  "items together", markdown_table(content["comparisons"], shown)]
    parts += [f"![{study.name}]({plot_name})", "## Units", markdown_table(units)]
    if reading:
        parts.append(reading.strip())
    return "\n\n".join(parts) + "\n"


def plot(study: Study, content: Mapping[str, Any], path: str) -> None:
    """Target-average accuracy of each arm, mean ± std over seeds."""
    from ..report.plots import new_figure, save_figure

    arms = content["avg_target"]
    fig, ax = new_figure((max(4.0, 1.2 * len(arms)), 3.5))
    labels = [study.label(a.split(" [")[0]) + (" [" + a.split(" [")[1] if " [" in a else "") for a in arms]
    ax.bar(range(len(arms)), [v["mean"] for v in arms.values()], yerr=[v["std"] for v in arms.values()], capsize=4,
           color="#4c72b0", label="mean ± std over seeds")
    ax.set_xticks(range(len(arms)), labels, rotation=20, ha="right")
    title = "\n".join(textwrap.wrap(study.title, width=int(9 * fig.get_figwidth())))
    save_figure(fig, ax, path, xlabel="", ylabel=f"{study.split} accuracy, target average", title=title)

