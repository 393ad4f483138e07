"""Sweep efficiency (issue 6): Optuna TPE + ASHA against random search with the same trial budget, and each searcher
with and without ASHA so that the searcher's share is told from the scheduler's. Each arm is a ``tune.run`` built as
``jobs/sweep.py`` builds it, two trials at a time, over a cheap objective (an SCL head on frozen SIB-200 embeddings,
cached under ``results/sweep_efficiency/``) so that many sweeps fit on 2 CPU cores.

    python benchmarks/sweep_efficiency.py                  # 4 arms x 3 seeds x 32 trials -> sweep_efficiency.md, .png
    python benchmarks/sweep_efficiency.py --report-only    # from results/sweep_efficiency/sweep_efficiency.json
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import harness
from xlt.eval.classification import accuracy_by_language, summarize_transfer, to_metrics
from xlt.logs import quiet_libraries
from xlt.losses.supcon import SupervisedContrastiveAlignment
from xlt.metrics import ACC, AVG_TARGET, TRAIN_EPOCH, VAL_AVG_TARGET_ACC, metric_name
from xlt.models import EncoderConfig, load_encoder
from xlt.report import markdown_table
from xlt.sweep import tune_session
from xlt.sweep.best import TrialRecord, best_trial, steps_run
from xlt.sweep.overrides import trial_data
from xlt.sweep.runner import build_scheduler, build_search_alg, to_record
from xlt.sweep.space import active_values, parse_params

MODEL, SOURCE, TARGETS = "bundled:multilingual-e5-small", "en", ("ar", "de", "es", "fr", "hi", "ja", "ru", "sw", "zh")
OUT = harness.REPO / "results" / "sweep_efficiency"
METRIC, TEST_METRIC, TIME_ATTR = VAL_AVG_TARGET_ACC, metric_name("test", ACC, AVG_TARGET), TRAIN_EPOCH
SPACE = {"head.temperature": {"loguniform": [0.05, 2.0]}, "head.weight": {"loguniform": [0.01, 10.0]},  # τ, λ
         "optim.lr": {"loguniform": [1.0e-4, 1.0e-1]}, "optim.weight_decay": {"loguniform": [1.0e-6, 1.0e-1]}}
ARMS = {"tpe-asha": ("optuna", "asha"), "random": ("random", "none"), "tpe": ("optuna", "none"),
        "random-asha": ("random", "asha")}


# A trial's settings, the "head" and "optim" sections SPACE samples into: temperature is τ (Wang et al. 2022, §5.3),
# weight λ (§3.3), views the translations per example and epoch.
HEAD = {"hidden": 256, "dropout": 0.1, "temperature": 1.0, "weight": 1.0, "views": 2}
OPTIM = {"lr": 1e-3, "weight_decay": 0.01, "epochs": 16, "batch_size": 32, "seed": 0}


def embeddings(root: Path, path: Path) -> tuple[dict[str, np.ndarray], float]:
    """English train (N, D), its translations (T, N, D) with a presence mask, dev and test; the seconds spent."""
    if path.is_file():
        return dict(np.load(path)), 0.0
    started, task = time.perf_counter(), harness.sib200(root)
    torch.set_num_threads(2)
    encoder = load_encoder(EncoderConfig(source=MODEL))
    encode = lambda texts: encoder.encode(list(texts), batch_size=64)  # noqa: E731
    english = task.examples("train", SOURCE)
    arrays = {"train": encode(ex.text for ex in english), "train_labels": np.asarray([ex.label for ex in english]),
              "labels": np.asarray(task.labels)}
    by_lang = [{ex.source_id: ex.text for ex in task.examples("train", lang)} for lang in TARGETS]
    texts = [[by_id.get(ex.source_id, "") for ex in english] for by_id in by_lang]  # (T, N), "" where none
    arrays["views"] = np.stack([encode(t or "." for t in lang) for lang in texts])
    arrays["view_mask"] = np.asarray([[bool(t) for t in lang] for lang in texts])
    for split in ("dev", "test"):
        rows = [ex for lang in (SOURCE, *TARGETS) for ex in task.examples(split, lang)]
        arrays.update({split: encode(ex.text for ex in rows), f"{split}_labels": np.asarray([ex.label for ex in rows]),
                       f"{split}_langs": np.asarray([ex.lang for ex in rows])})
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return arrays, time.perf_counter() - started


def train_head(data: dict[str, np.ndarray], report: Callable | None = None, *, hidden: int, dropout: float,
               temperature: float, weight: float, views: int, lr: float, weight_decay: float, epochs: int,
               batch_size: int, seed: int) -> dict:
    """CE + λ·SCL over each English example and ``views`` translations; the last epoch's dev and test metrics.
    Not ``xlt.engine``'s loop, which decays the rate, exempts biases and clips: trials would train differently."""
    torch.manual_seed(seed)
    index = {label: i for i, label in enumerate(data["labels"])}
    project = nn.Sequential(nn.Linear(data["train"].shape[1], hidden), nn.GELU(), nn.Linear(hidden, hidden))
    head, drop = nn.Linear(hidden, len(data["labels"])), nn.Dropout(dropout)
    optimizer = torch.optim.AdamW([*project.parameters(), *head.parameters()], lr=lr, weight_decay=weight_decay)
    scl = SupervisedContrastiveAlignment(temperature=temperature)
    x, translations = torch.from_numpy(data["train"]), torch.from_numpy(data["views"])  # (N, D), (T, N, D)
    y = torch.tensor([index[label] for label in data["train_labels"]])
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        project.train(), head.train()
        order = rng.permutation(len(x))
        for start in range(0, len(x), batch_size):
            idx = order[start:start + batch_size]  # (B,)
            # `views` distinct languages per example among those with a translation (random keys, absent last)
            keys = np.where(data["view_mask"][:, idx].T, rng.random((len(idx), len(translations))), np.inf)  # (B, T)
            langs = np.argsort(keys, axis=1)[:, :views]  # (B, views)
            rows = torch.cat([x[idx], translations[torch.from_numpy(langs.T.reshape(-1)),
                                                   torch.from_numpy(np.tile(idx, views))]])
            features = project(rows)  # (B + views·B, H): originals, then view 1 of each, view 2 of each
            is_anchor = torch.arange(len(rows)) < len(idx)
            loss = F.cross_entropy(head(drop(features[is_anchor])), y[idx])
            if weight > 0:
                loss = loss + weight * scl({"features": features, "labels": y[idx].repeat(views + 1),
                                            "group": torch.arange(len(idx)).repeat(views + 1), "is_anchor": is_anchor})
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        project.eval(), head.eval()
        metrics = {TIME_ATTR: epoch + 1}
        with torch.no_grad():
            for split, name in (("dev", "val"), ("test", "test")):
                pred = head(project(torch.from_numpy(data[split]))).argmax(1).numpy()
                per_lang = accuracy_by_language(data[f"{split}_labels"], data["labels"][pred], data[f"{split}_langs"])
                metrics.update(to_metrics(summarize_transfer(per_lang, SOURCE), name))
        if report:
            report(metrics)
    return metrics


def head_trial(config: dict[str, Any], data: dict[str, np.ndarray], base: dict[str, Any], params: tuple) -> None:
    torch.set_num_threads(1)
    sections = trial_data(base, active_values(params, config))
    train_head(data, tune_session.report, **sections["head"], **sections["optim"])


def run_arm(arm: str, seed: int, trials: int, data: dict[str, np.ndarray], storage: Path) -> dict[str, Any]:
    from ray import tune

    searcher, scheduler = ARMS[arm]
    params = parse_params(SPACE, "benchmarks/sweep_efficiency.py")
    base = {"head": HEAD, "optim": {**OPTIM, "seed": seed}}
    search_alg, config = build_search_alg(params, searcher, metric=METRIC, mode="max", seed=seed, limit=2,
                                          num_samples=trials)
    name = f"{arm}-seed{seed}"
    shutil.rmtree(storage / name, ignore_errors=True)
    started = time.perf_counter()
    analysis = tune.run(tune.with_parameters(head_trial, data=data, base=base, params=params), name=name,
                        storage_path=str(storage), metric=METRIC, mode="max", config=config,
                        resources_per_trial={"CPU": 1}, num_samples=trials, search_alg=search_alg,
                        scheduler=build_scheduler(scheduler, TIME_ATTR, OPTIM["epochs"]), reuse_actors=True,
                        raise_on_failed_trial=False, verbose=0)
    return {"arm": arm, "seed": seed, "wall_s": time.perf_counter() - started,
            "records": [to_record(i, trial, params) for i, trial in enumerate(analysis.trials)]}


def incumbents(records: list[TrialRecord]) -> list[tuple[int, float, float, dict]]:
    """After each trial k (creation order): (epochs spent by trials 0..k, incumbent dev, its test, its values)."""
    out, epochs = [], 0
    for k, record in enumerate(records):
        epochs += steps_run(record, TIME_ATTR)
        try:
            best = best_trial(records[:k + 1], METRIC, "max", TIME_ATTR, OPTIM["epochs"])
            out.append((epochs, best.result[METRIC], best.result[TEST_METRIC], best.values))
        except ValueError:  # no trial has run all epochs yet
            out.append((epochs, float("nan"), float("nan"), {}))
    return out


def plot(runs: list[dict[str, Any]], references: dict[str, list[dict]], path: Path, trials: int) -> None:
    """Incumbent vs trials and vs epochs spent; the y range starts below the references and the arms after three
    trials, so that the first trials' near-random scores do not flatten the rest."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_trial, by_epochs) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    floor = [np.mean([m[METRIC] for m in ms]) for ms in references.values()]
    for color, arm in zip(plt.rcParams["axes.prop_cycle"].by_key()["color"], dict.fromkeys(r["arm"] for r in runs)):
        curves = [incumbents(r["records"]) for r in runs if r["arm"] == arm]
        dev = np.asarray([[c[1] for c in curve] for curve in curves])
        floor.append(float(np.nanmean(dev, 0)[min(2, trials - 1)]))
        by_trial.plot(range(1, trials + 1), np.nanmean(dev, 0), color=color, label=arm)
        by_trial.fill_between(range(1, trials + 1), np.nanmin(dev, 0), np.nanmax(dev, 0), color=color, alpha=0.15)
        for curve in curves:
            by_epochs.step([c[0] for c in curve], [c[1] for c in curve], where="post", color=color, alpha=0.6,
                           label=arm if curve is curves[0] else None)
    for style, (name, ms) in zip((":", "--"), references.items()):
        for ax in (by_trial, by_epochs):
            ax.axhline(np.mean([m[METRIC] for m in ms]), color="gray", linestyle=style, linewidth=1,
                       label=f"no search: {name}" if ax is by_trial else None)
    top = max(np.nanmax([c[1] for r in runs for c in incumbents(r["records"])]), *floor)
    by_trial.set(ylim=(min(floor) - 0.01, top + 0.005), xlabel="trials",
                 ylabel="incumbent dev accuracy, average over targets",
                 title="incumbent vs trials (mean over seeds, min-max band)")
    by_epochs.set(xlabel="epochs spent (all trials so far)", title="incumbent vs compute (one line per sweep)")
    for ax in (by_trial, by_epochs):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def measure(args) -> dict[str, Any]:
    import ray

    quiet_libraries()
    machine = harness.Machine()
    data, encode_s = embeddings(harness.data_root(args.data_dir), OUT / "embeddings.npz")
    # One thread, as in the trials: a small MLP gains nothing from a second, whose spin-waits cost on a shared machine.
    torch.set_num_threads(1)
    # References outside Tune: CE only (λ = 0) and Wang et al. (2022)'s defaults (τ = 1, λ = 1), all epochs.
    references = {name: [train_head(data, **{**HEAD, **OPTIM, "weight": w, "seed": s}) for s in args.seeds]
                  for name, w in (("CE only (λ = 0)", 0.0), ("CE + SCL, τ = 1, λ = 1", 1.0))}
    with harness.local_ray(2):
        runs = [run_arm(arm, seed, args.trials, data, OUT / "tune") for seed in args.seeds for arm in args.arms]
    return {**machine.fields(), "encode_s": encode_s, "ray": ray.__version__, "arms": args.arms,
            "seeds": args.seeds, "trials": args.trials, "references": references,
            "runs": [{**r, "records": [asdict(t) for t in r["records"]]} for r in runs]}


def report(results: dict[str, Any], output: Path) -> str:
    runs = [{**r, "records": [TrialRecord(**t) for t in r["records"]]} for r in results["runs"]]
    trials, references = results["trials"], results["references"]
    rows = []
    for arm in results["arms"]:
        mine = [r for r in runs if r["arm"] == arm]
        curves = [incumbents(r["records"]) for r in mine]
        near = [next((k + 1 for k, (_, dev, *_) in enumerate(c) if dev >= 0.99 * c[-1][1]), np.nan) for c in curves]
        stopped = [sum(steps_run(t, TIME_ATTR) < OPTIM["epochs"] for t in r["records"]) for r in mine]
        rows.append({"arm": arm, "searcher + scheduler": " + ".join(ARMS[arm]),
                     "best dev (mean ± sd)": harness.mean_sd([c[-1][1] for c in curves], 4),
                     "its test (mean ± sd)": harness.mean_sd([c[-1][2] for c in curves], 4),
                     "epochs spent (mean)": float(np.mean([c[-1][0] for c in curves])),
                     "trials stopped early (mean)": float(np.mean(stopped)),
                     "wall s (mean)": float(np.mean([r["wall_s"] for r in mine])),
                     "trials to 99% of final (mean)": float(np.mean(near))})
    checkpoints = sorted({max(1, trials // 4), trials // 2, trials})
    per_seed = [{"arm": r["arm"], "seed": r["seed"], **{f"dev after {k}": curve[k - 1][1] for k in checkpoints},
                 "test of best": curve[-1][2], "epochs": curve[-1][0], "wall s": r["wall_s"],
                 **{f"best {k.split('.')[-1]}": v for k, v in curve[-1][3].items()}}
                for r in runs for curve in [incumbents(r["records"])]]
    reference_rows = [{"reference (no search)": name, "dev (mean ± sd)": harness.mean_sd([m[METRIC] for m in ms], 4),
                       "test (mean ± sd)": harness.mean_sd([m[TEST_METRIC] for m in ms], 4)}
                      for name, ms in references.items()]
    png = output.with_suffix(".png")
    plot(runs, references, png, trials)
    encoded = f"{results['encode_s']:.0f} s of it encoding" if results["encode_s"] else "embeddings read from the cache"
    space = ", ".join(f"`{k}` {next(iter(v))} {list(next(iter(v.values())))}" for k, v in SPACE.items())
    return f"""# Sweep efficiency: Optuna TPE + ASHA vs random search (same trial budget)

Command: `{results['command']}`  
Date: {results['date']}. Machine: {results['machine']} ({encoded}); Ray {results['ray']} (`ray.init(num_cpus=2)`),
two trials at a time, one torch thread each. A load above ~2 inflates wall times, not epochs or scores.

## Objective

Wang et al. (2022)'s SCL fine-tuning (§3.3: CE + λ·L_SCL over each English example and its translations), the
encoder frozen: `{MODEL}` embeddings (mean pooling, "query: " prefix, max length 128), 384-d, of 701 English train
sentences, their 9 × 701 translations (views), dev (10 × 99) and test (10 × 204).

- Trial: projection 384 → 256 → 256 (GELU), dropout 0.1, linear head; AdamW; batch 32 English examples, each
  with {HEAD["views"]} translations drawn per epoch (seeded); {OPTIM["epochs"]} epochs (22 steps each).
- Space (`xlt.sweep.space`; their τ and λ, §5.2–5.3, and the head's optimiser): {space}.
- Budget: {trials} trials per sweep; seeds {results['seeds']} (searcher and training; `random` and `random-asha` of
  one seed draw the same configurations).
- ASHA: `train/epoch`, max_t {OPTIM["epochs"]}, grace 1, reduction factor 2 (rungs 1, 2, 4, 8, 16); TPE:
  {min(10, max(2, trials // 3))} random start-up trials (`xlt.sweep.runner.startup_trials`).
- Score: dev accuracy averaged over the 9 targets at the trial's last epoch; the incumbent is the best trial that
  ran all epochs (`xlt.sweep.best.best_trial`); its test score is reported, never used.

## Results

{markdown_table(rows, digits=4)}

"Trials to 99% of final": until the incumbent came within 1% (relative) of the sweep's final one.

Without a search (all {OPTIM["epochs"]} epochs, lr 1e-3, weight decay 0.01):

{markdown_table(reference_rows)}

Per sweep (the last four columns: the incumbent's configuration):

{markdown_table(per_seed, digits=4)}

![incumbent vs trials and vs epochs]({png.name})
"""


def main() -> None:
    parser = harness.parser(__doc__, "sweep_efficiency.md", data_dir=True)
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--trials", type=int, default=32, help="trials per sweep (the same budget for every arm)")
    parser.add_argument("--report-only", action="store_true", help="rewrite the markdown and plot from the JSON")
    args = parser.parse_args()
    path = OUT / args.out.with_suffix(".json").name
    if args.report_only:
        results = json.loads(path.read_text())
    else:
        harness.write(path, results := measure(args))
    # A reading written by hand below the generated part (for the stored run) stays when only the report is redone.
    old = args.out.read_text(encoding="utf-8") if args.report_only and args.out.is_file() else ""
    text = report(results, args.out) + (old[old.index("\n## Reading"):] if "\n## Reading" in old else "")
    harness.write(args.out, text, show=True)


if __name__ == "__main__":
    main()
