"""One-off: move benchmarks/fidelity.py's comparisons into studies/ and import its stored units.

    .venv/bin/python benchmarks/fidelity_import.py

For each comparison family (not the smoke one, not pretrain-align: see docs/architecture.md), writes
``studies/<name>.yaml`` from fidelity.py's registry (variants, their overrides, the claims, the
settings as notes) and imports each stored unit of ``benchmarks/fidelity.json`` into
``benchmarks/studies/<name>/imported/<unit>.json``, after checking that the config the unit ran with
(fidelity.py's variant at that seed) is the config the study's variant gives at that seed: the job's
resolved config, or for the probe its task, model and rows. A mismatch stops the import.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import fidelity  # noqa: E402

from xlt.config import from_dict, load_config  # noqa: E402
from xlt.cotrain.config import CotrainConfig  # noqa: E402
from xlt.study import load_study  # noqa: E402
from xlt.study.units import IMPORTED, UnitSetup, unit_config, unit_identity, write_record  # noqa: E402
from xlt.study.spec import Unit  # noqa: E402
from xlt.train.config import FinetuneConfig  # noqa: E402

FAMILIES = ("scl-xnli", "scl-xnli-2000", "scl-pawsx", "scl-nusax", "cotrain-nusax-10", "cotrain-nusax-100", "la-sa-xnli")
SOURCES = {"scl": "wang2022", "cotrain": "yu-joty2021", "la-sa": "yu-joty2021"}
ROWS = "evenly spaced strides (before issue 69's seeded draws)"
OUT = "/tmp/fidelity-import-check"  # the unit directory both configs name (compared without it)


def fidelity_overrides(comparison, variant) -> tuple[str, list[str]]:
    """(preset, overrides) of a fidelity variant, read from its ``run`` closure."""
    cells = {name: cell.cell_contents for name, cell in zip(variant.run.__code__.co_freevars, variant.run.__closure__ or ())}
    return cells.get("preset"), list(cells.get("overrides", ())), cells


def study_variant(comparison, variant) -> tuple[str, dict]:
    """(study variant name, its YAML spec) of a fidelity variant; co-training learners collapse to their run."""
    preset, overrides, cells = fidelity_overrides(comparison, variant)
    if variant.name == "probe":
        return "probe", {"label": variant.label, "recipe": "probe", "set": [f"data.max_examples={cells['max_examples']}"]}
    if variant.run_name:  # co-training: "<learner>-<mode>"
        mode = variant.name.split("-", 1)[1]
        return mode, {"label": {"alone": "alone", "self": "+ self-training", "co": "+ co-training"}[mode],
                      "set": overrides}
    return variant.name, {"label": variant.label, "set": overrides}


def arm_of(comparison, name: str) -> str:
    variant = comparison.variant(name)
    if variant.run_name:
        learner, mode = name.split("-", 1)
        return f"{mode}/{learner}"
    return name


class Readable(yaml.SafeDumper):
    """Multi-line strings as blocks, lists of numbers in one line."""


Readable.add_representer(str, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style="|" if "\n" in v else None))
Readable.add_representer(list, lambda d, v: d.represent_sequence(
    "tag:yaml.org,2002:seq", v, flow_style=all(isinstance(x, int) for x in v)))


def write_study(comparison) -> Path:
    preset = next(fidelity_overrides(comparison, v)[0] for v in comparison.variants if v.name != "probe"
                  and fidelity_overrides(comparison, v)[0])
    variants: dict[str, dict] = {}
    for variant in comparison.variants:
        name, spec = study_variant(comparison, variant)
        variants.setdefault(name, spec)
    job = "cotrain" if any(v.run_name for v in comparison.variants) else "finetune"
    sets = [spec.get("set", []) for spec in variants.values()]
    common = [o for o in sets[0] if all(o in s for s in sets)]
    for spec in variants.values():
        spec["set"] = [o for o in spec.get("set", []) if o not in common]
        if not spec["set"]:
            del spec["set"]
    family = comparison.name.rsplit("-", 1)[0] if comparison.name[-1].isdigit() else comparison.name
    source = next((s for prefix, s in SOURCES.items() if comparison.name.startswith(prefix)), "")
    comparisons = [{"a": arm_of(comparison, a), "b": arm_of(comparison, b), "paper": paper, "source": source}
                   for a, b, paper, *metric in comparison.claims]
    data = {"title": comparison.title, "job": job, "preset": f"../configs/{preset}", "set": common,
            "seeds": list(fidelity.SEEDS), "split": "test", "output": f"benchmarks/studies/{comparison.name}",
            "notes": comparison.settings.strip(),
            "reading": f"../benchmarks/fidelity/{comparison.name}.md", "variants": variants,
            "comparisons": comparisons}
    if not (REPO / "benchmarks" / "fidelity" / f"{comparison.name}.md").is_file():
        del data["reading"]
    path = REPO / "studies" / f"{comparison.name}.yaml"
    head = (f"# Moved from benchmarks/fidelity.py ({family}); its stored units are imported under\n"
            f"# benchmarks/studies/{comparison.name}/imported/ (they ran on evenly spaced rows, before issue 69).\n"
            f"#   python jobs/study.py --study studies/{comparison.name}.yaml\n")
    path.write_text(head + yaml.dump(data, Dumper=Readable, sort_keys=False, allow_unicode=True, width=110),
                    encoding="utf-8")
    return path


def fidelity_config(comparison, variant, seed: int):
    """The config fidelity.py ran ``variant`` at ``seed`` with (output.dir = OUT)."""
    preset, overrides, cells = fidelity_overrides(comparison, variant)
    if variant.name == "probe":
        from xlt.config import merge_presets

        data = merge_presets(REPO / "configs" / cells["preset"])
        return {"task": data["task"], "model": data["model"], "max_examples": cells["max_examples"]}
    if variant.run_name:
        return load_config(CotrainConfig, REPO / "configs" / preset, [
            *overrides, f"selection.seed={seed}", f"lm.optim.seed={seed}", f"emb.optim.seed={seed}",
            f"output.dir={OUT}", "lm.optim.log_every_steps=0", "emb.optim.log_every_steps=0"])
    extra = [f"optim.seed={seed}", f"output.dir={OUT}", "optim.log_every_steps=0",
             "evals=[{type: classification, split: val}, {type: classification, split: test}]"]
    if any(o.startswith("data.augment") for o in overrides):
        extra.append(f"data.augment.seed={seed}")
    return load_config(FinetuneConfig, REPO / "configs" / preset, [*overrides, *extra])


def study_config(study, unit: Unit):
    setup = UnitSetup(study, OUT.rsplit("/", 1)[0])
    data = unit_config(setup, unit)
    data.setdefault("output", {})["dir"] = OUT
    variant = study.variant(unit.variant)
    if variant.recipe == "probe":
        cfg = from_dict(FinetuneConfig, data)
        raw = json.loads(json.dumps(data))
        return {"task": raw["task"], "model": raw["model"], "max_examples": cfg.data.max_examples}
    return from_dict(CotrainConfig if study.job == "cotrain" else FinetuneConfig, data)


def main() -> None:
    store = json.loads((REPO / "benchmarks" / "fidelity.json").read_text())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    for name in FAMILIES:
        comparison = fidelity.COMPARISONS[name]
        study = load_study(write_study(comparison))
        output = str(REPO / study.output)
        imported: dict[str, dict] = {}
        for key, stored in sorted(store["units"][name].items()):
            variant = comparison.variant(stored["variant"])
            vname, _ = study_variant(comparison, variant)
            unit = Unit(vname, stored["seed"])
            theirs, ours = fidelity_config(comparison, variant, stored["seed"]), study_config(study, unit)
            if theirs != ours:
                raise SystemExit(f"{name} {key}: the stored unit's config differs from {study.source}'s variant "
                                 f"{vname!r}:\n{theirs}\n{ours}")
            for setting in ("train_rows", "epochs"):
                if setting in stored and setting == "epochs":
                    assert stored["epochs"] == ours.optim.epochs, (key, stored["epochs"])
            arm = arm_of(comparison, stored["variant"])
            scored = {k: stored[k] for k in ("acc", "source", "items", "items_digest", "labeled", "iterations")
                      if k in stored}
            record = imported.setdefault(unit.name, {
                "unit": unit.name, "variant": vname, "seed": stored["seed"], "arms": {},
                "config": unit_identity(UnitSetup(study, output), unit), "rows": ROWS,
                "minutes": 0.0, "cpu": stored["cpu"], "ran on": stored["cpu"], "finished": stored["finished"],
                "load": stored["load"], "imported": f"benchmarks/fidelity.json at {commit}",
                **{k: stored[k] for k in ("train_rows", "epochs", "probe_c") if k in stored}})
            record["arms"][arm] = scored
            record["minutes"] = round(record["minutes"] + stored["minutes"], 2)
            record["finished"] = max(record["finished"], stored["finished"])
        for unit_name, record in imported.items():
            write_record(output, unit_name, record, IMPORTED)
        print(f"{name}: {len(store['units'][name])} stored units -> {len(imported)} study units, configs checked")


if __name__ == "__main__":
    dataclasses  # noqa: B018
    main()
