"""Tasks beyond SIB-200 with the bundled models: XNLI, PAWS-X, NusaX (issue 12), each part a job of the platform on a
preset: ``probe`` (``jobs/evaluate.py``'s frozen-linear probe), ``bucc`` (``--protocol bucc``: BUCC 2018 zh-en mining)
and ``finetune`` (``jobs/finetune.py``, CE against CE + SCL, e5 only). Every run is stored under
``results/benchmarks/tasks/`` as it ends, so a killed benchmark continues with what is missing.

    python benchmarks/tasks.py                    # probe + bucc + fine-tuning -> benchmarks/tasks.md and .json
    python benchmarks/tasks.py --only probe       # one part
    python benchmarks/tasks.py --report-only      # the report from the stored runs
"""

from __future__ import annotations

import json
import os
import time

import harness
from xlt.config import apply_overrides, from_dict, merge_presets
from xlt.hardware import cpu_model
from xlt.report import markdown_table

REPO = harness.REPO
STORE = REPO / "results" / "benchmarks" / "tasks"
MODELS = ("bundled:multilingual-e5-small", "bundled:use-multilingual-v3")
TASKS = ("nusax", "pawsx", "xnli")
# Per task: the split overrides that fix the sizes (stated in the report) and the fine-tuning seeds.
SIZES = {"xnli": ["task.splits.train=validation[:600]", "task.splits.test=test[:300]"],
         "pawsx": ["task.splits.train=dev[:600]"], "nusax": []}
PROBE_SIZES = {"xnli": ["task.splits.test=test[:1000]"], "pawsx": [], "nusax": []}
SEEDS = {"xnli": (0,), "pawsx": (0,), "nusax": (0, 1, 2)}
SCL = ("objectives=[{name: supervised_contrastive_alignment, weight: 1.0, params: {temperature: 1.0}}]",)
VARIANTS = {"ce": (), "scl": SCL}


def load(name: str) -> dict | None:
    path = STORE / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def store(name: str, run) -> None:
    """``run()``'s record, stored under ``name`` with the load at its end (other work skews the times)."""
    harness.stored(STORE / f"{name}.json", lambda: {**run(), "load_1min_at_end": os.getloadavg()[0]})


def run_evaluate(overrides: list[str]) -> dict:
    """``jobs/evaluate.py``'s run of ``configs/evaluate_sib200.yaml`` with ``overrides``."""
    from xlt.eval.protocols import EvaluateConfig, run_evaluation

    data = apply_overrides(merge_presets(REPO / "configs" / "evaluate_sib200.yaml"), [*overrides, "progress=false"])
    start = time.perf_counter()
    return {"rows": run_evaluation(from_dict(EvaluateConfig, data))["rows"], "seconds": time.perf_counter() - start}


def run_finetune(task: str, variant: str, seed: int, name: str) -> dict:
    from xlt.tasks import TaskConfig, load_task
    from xlt.train import build_trainer, load_finetune_config, prepare, results_rows

    overrides = [*SIZES[task], f"optim.seed={seed}", f"output.dir={STORE / 'runs'}/{name}"]
    # One full-translation view per example into a target drawn per view (t_f = 1, Wang et al. 2022, §4.1).
    if variant != "ce":
        task_cfg = from_dict(TaskConfig, merge_presets(REPO / "configs" / "tasks" / f"{task}.yaml"), prefix="task.")
        targets = ", ".join(load_task(task_cfg).target_langs)
        overrides += [f"data.augment={{t_f: 1, t_p: 0, t_c: 0, languages: [{targets}]}}", *VARIANTS[variant]]
    start = time.perf_counter()
    trainer = build_trainer(prepare(load_finetune_config(REPO / "configs" / f"finetune_{task}.yaml", overrides)))
    metrics, cfg = trainer.fit().metrics, trainer.config
    return {"rows": results_rows(metrics, cfg.task.source_lang), "seconds": time.perf_counter() - start,
            "overrides": overrides, "train_rows": cfg.data.train_rows}


def report(command: str) -> str:
    out = ["# Tasks beyond SIB-200 with the bundled models (XNLI, PAWS-X, NusaX)", "",
           f"Command: `{command}` (each run is stored when it ends and reported from there). Machine: {cpu_model()}, "
           f"{os.cpu_count()} cores. The 1-minute load average at the end of each part is in its heading; the probes "
           "ran while the test suite shared the machine (their times are not measurements of speed).", "",
           "## Sizes and protocol", "",
           "- XNLI (`configs/tasks/xnli.yaml`): English train = validation[:2000] (no MultiNLI offline), dev = "
           "validation[2000:] (490 per language), test as stated per table. PAWS-X: English train = dev[:1200], dev = "
           "dev[1200:1600], test = dev[1600:] (up to 400 per language without `NS` rows). NusaX: 500 English train "
           "reviews, 100 dev, 400 test per language.",
           "- Probe: both bundled models, frozen; logistic regression (lbfgs) on the English train embeddings, C in "
           "{0.1, 1, 10, 100} chosen on English dev. Pairs: e5 encodes each pair jointly, USE-m3 embeds the sides "
           "apart and the probe reads [u; v; |u−v|; u*v]. Deterministic (a convex objective): one run per model. "
           "XNLI test: its first 1,000 rows per language.",
           "- Fine-tuning: `configs/finetune_<task>.yaml` (e5, word embeddings frozen, AdamW lr 5e-5, batch 16, "
           "3 epochs, 1 Ray Train worker with 2 CPUs), CE against CE + SCL (λ = 1, τ = 1.0) on one view per English "
           "example (the task's own translation into a target drawn per view). XNLI: validation[:600] in English, "
           "test[:300] per language; PAWS-X: dev[:600] in English. Seeds: NusaX 0, 1, 2 (mean ± std); XNLI and "
           "PAWS-X 0. Test split after the last epoch.", ""]
    for task in TASKS:
        out += [f"## {task}", ""]
        probe = load(f"probe-{task}")
        if probe is None:
            out += ["Probe: not run yet.", ""]
        else:
            langs = list(dict.fromkeys(r["lang"] for r in probe["rows"]))
            rows = [{"model": m.split(":")[1], "score": score,
                     **{lang: next(r[score] for r in probe["rows"] if r["model"] == m and r["lang"] == lang)
                        for lang in langs}} for m in MODELS for score in ("acc", "f1")]
            load_1min = probe.get("load_1min_at_end")
            out += [f"### Frozen-linear probe (test; {probe['seconds'] / 60:.1f} min"
                    f"{f', load {load_1min:.1f}' if load_1min is not None else ''})", "", markdown_table(rows), ""]
        rows, seconds = [], 0.0
        for variant in VARIANTS:
            runs = [r for seed in SEEDS[task] if (r := load(f"finetune-{task}-{variant}-seed{seed}"))]
            if not runs:
                continue
            seconds += sum(r["seconds"] for r in runs)
            langs = [r["lang"] for r in runs[0]["rows"]]
            rows += [{"variant": f"CE{' + SCL' if variant == 'scl' else ''}", "score": score, "seeds": len(runs),
                      **{lang: harness.mean_sd([next(x[f"test {score}"] for x in r["rows"] if x["lang"] == lang)
                                                for r in runs]) for lang in langs}} for score in ("acc", "f1")]
        out += ([f"### Fine-tuning e5, CE vs CE + SCL (test; {seconds / 60:.0f} min of runs)", "",
                 markdown_table(rows), ""] if rows else ["Fine-tuning: not run yet.", ""])
    bucc = load("bucc")
    out += ["## BUCC 2018 zh-en bitext mining", ""]
    if bucc is None:
        out += ["Not run yet.", ""]
    else:
        keys = ("part", "n_src", "n_tgt", "n_gold", "precision", "recall", "f1", "threshold")
        rows = [{"model": r["model"].split(":")[1], **{k: r[k] for k in keys}} for r in bucc["rows"]]
        out += [f"{bucc['rows'][0]['protocol']} ({bucc['seconds'] / 60:.1f} min)", "", markdown_table(rows), ""]
    return "\n".join(out)


def main() -> None:
    parser = harness.parser(__doc__, "tasks.md")
    parts = ("probe", "bucc", "finetune")
    parser.add_argument("--only", nargs="+", choices=parts, default=parts)
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=TASKS)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.report_only:
        from xlt.cli import init_ray
        from xlt.logs import quiet_libraries

        quiet_libraries()
        for task in args.tasks if "probe" in args.only else ():
            overrides = [f"task={{include: configs/tasks/{task}.yaml}}", *PROBE_SIZES[task]]
            store(f"probe-{task}", lambda: {**run_evaluate(overrides), "overrides": PROBE_SIZES[task]})
        if "bucc" in args.only:
            store("bucc", lambda: run_evaluate(["protocol=bucc"]))
        if "finetune" in args.only:
            init_ray()
            # Seed by seed across tasks: every task has its first seed before any task its third.
            for index in range(max(len(SEEDS[t]) for t in args.tasks)):
                for task in (t for t in args.tasks if index < len(SEEDS[t])):
                    for variant in VARIANTS:
                        name = f"finetune-{task}-{variant}-seed{SEEDS[task][index]}"
                        store(name, lambda: run_finetune(task, variant, SEEDS[task][index], name))
    # The runs are made by the plain command (resumable); --report-only only re-renders stored runs.
    text = report("python benchmarks/tasks.py")
    harness.write(args.out, text + "\n", show=True)
    harness.write(args.out.with_suffix(".json"),
                  {path.stem: json.loads(path.read_text()) for path in sorted(STORE.glob("*.json"))})


if __name__ == "__main__":
    main()
