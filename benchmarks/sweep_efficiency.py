"""Sweep efficiency: Optuna TPE + ASHA against random search with the same trial budget (issue 6).

Arms ``tpe-asha``, ``random``, ``tpe``, ``random-asha`` (searcher + scheduler, so that the searcher's share is told
from the scheduler's), each a ``tune.run`` built as ``jobs/sweep.py`` builds it, two trials at a time. The objective
is cheap, so that many sweeps fit on 2 CPU cores: Wang et al. (2022)'s SCL fine-tuning with the encoder frozen, a small
head trained on SIB-200 embeddings encoded once and cached under ``results/sweep_efficiency/``. Per arm and seed: the
incumbent after each trial, the epochs spent, the wall time, and the incumbent's test accuracy, which no arm sees.

    python benchmarks/sweep_efficiency.py                  # 4 arms x 3 seeds x 32 trials -> sweep_efficiency.md, .png
    python benchmarks/sweep_efficiency.py --trials 16 --arms tpe-asha random --seeds 0 1 2
    python benchmarks/sweep_efficiency.py --report-only    # from results/sweep_efficiency/sweep_efficiency.json
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

import harness
from xlt.eval.classification import accuracy_by_language, summarize_transfer, to_metrics
from xlt.eval.stats import mean_std
from xlt.metrics import ACC, AVG_TARGET, TRAIN_EPOCH, VAL_AVG_TARGET_ACC, metric_name
from xlt.report import markdown_table
from xlt.sweep.best import TrialRecord, best_trial, steps_run
from xlt.sweep.overrides import trial_data
from xlt.sweep.space import active_values, parse_params

MODEL = "bundled:multilingual-e5-small"
SOURCE = "en"
TARGETS = ("ar", "de", "es", "fr", "hi", "ja", "ru", "sw", "zh")
OUT = harness.REPO / "results" / "sweep_efficiency"
METRIC, TEST_METRIC, TIME_ATTR = VAL_AVG_TARGET_ACC, metric_name("test", ACC, AVG_TARGET), TRAIN_EPOCH
# Wang et al. (2022, §5.2-5.3) tune λ and τ; the head's optimiser adds lr and weight decay.
SPACE = {
    "head.temperature": {"loguniform": [0.05, 2.0]},  # τ
    "head.weight": {"loguniform": [0.01, 10.0]},  # λ
    "optim.lr": {"loguniform": [1.0e-4, 1.0e-1]},
    "optim.weight_decay": {"loguniform": [1.0e-6, 1.0e-1]},
}
ARMS = {"tpe-asha": ("optuna", "asha"), "random": ("random", "none"), "tpe": ("optuna", "none"),
        "random-asha": ("random", "asha")}


@dataclass(frozen=True)
class HeadSettings:
    hidden: int = 256
    dropout: float = 0.1
    temperature: float = 1.0  # τ (Wang et al. 2022, §5.3)
    weight: float = 1.0  # λ (Wang et al. 2022, §3.3)
    views: int = 2  # translations per example and epoch


@dataclass(frozen=True)
class HeadOptim:
    lr: float = 1e-3
    weight_decay: float = 0.01
    epochs: int = 16
    batch_size: int = 32
    seed: int = 0


def embeddings(root: Path, path: Path) -> tuple[dict[str, np.ndarray], float]:
    """The embeddings, encoded once (the seconds spent; 0 when read from ``path``): English train (N, D), its SIB-200
    translations into the targets (T, N, D, joined on ``source_id``) with a presence mask, every language's dev and
    test split, with labels and languages."""
    if path.is_file():
        return dict(np.load(path)), 0.0
    import torch

    from xlt.models import EncoderConfig, load_encoder

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


def train_head(head_cfg: HeadSettings, optim: HeadOptim, data: dict[str, np.ndarray],
               report: Callable[[dict[str, Any]], None] | None = None) -> dict:
    """Train projection + head (CE on the English examples + λ·SCL over each and ``views`` translations drawn per
    epoch), evaluating after each epoch; the last epoch's metrics (``val/…`` on dev, ``test/…`` on test).

    A loop of its own, not ``xlt.engine``'s, which decays the rate, exempts biases, clips, checkpoints and encodes
    text: on the engine every trial would train differently from what ``sweep_efficiency.md`` measured."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from xlt.losses.supcon import SupervisedContrastiveAlignment

    torch.manual_seed(optim.seed)
    index = {label: i for i, label in enumerate(data["labels"])}
    project = nn.Sequential(nn.Linear(data["train"].shape[1], head_cfg.hidden), nn.GELU(),
                            nn.Linear(head_cfg.hidden, head_cfg.hidden))
    head, dropout = nn.Linear(head_cfg.hidden, len(data["labels"])), nn.Dropout(head_cfg.dropout)
    optimizer = torch.optim.AdamW([*project.parameters(), *head.parameters()], lr=optim.lr,
                                  weight_decay=optim.weight_decay)
    scl = SupervisedContrastiveAlignment(temperature=head_cfg.temperature)
    x, views = torch.from_numpy(data["train"]), torch.from_numpy(data["views"])  # (N, D), (T, N, D)
    y = torch.tensor([index[label] for label in data["train_labels"]])
    rng = np.random.default_rng(optim.seed)
    v = head_cfg.views  # SIB-200 is parallel: every English example has a translation in every target
    metrics: dict[str, Any] = {}
    for epoch in range(optim.epochs):
        project.train(), head.train()
        order = rng.permutation(len(x))
        for start in range(0, len(x), optim.batch_size):
            idx = order[start:start + optim.batch_size]  # (B,)
            # v distinct languages per example among those with a translation (random keys, absent last)
            keys = np.where(data["view_mask"][:, idx].T, rng.random((len(idx), len(views))), np.inf)  # (B, T)
            langs = np.argsort(keys, axis=1)[:, :v]  # (B, v)
            rows = torch.cat([x[idx], views[torch.from_numpy(langs.T.reshape(-1)), torch.from_numpy(np.tile(idx, v))]])
            features = project(rows)  # (B + vB, H): originals, then view 1 of each, view 2 of each
            is_anchor = torch.arange(len(rows)) < len(idx)
            loss = F.cross_entropy(head(dropout(features[is_anchor])), y[idx])
            if head_cfg.weight > 0:
                loss = loss + head_cfg.weight * scl({"features": features, "labels": y[idx].repeat(v + 1),
                                                     "group": torch.arange(len(idx)).repeat(v + 1),
                                                     "is_anchor": is_anchor})
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        project.eval(), head.eval()
        metrics = {TIME_ATTR: epoch + 1}
        with torch.no_grad():
            for split, name in (("dev", "val"), ("test", "test")):
                emb, gold, lang = data[split], data[f"{split}_labels"], data[f"{split}_langs"]
                pred = head(project(torch.from_numpy(emb))).argmax(1).numpy()
                per_lang = accuracy_by_language(gold, data["labels"][pred], lang)
                metrics.update(to_metrics(summarize_transfer(per_lang, SOURCE), name))
        if report is not None:
            report(metrics)
    return metrics


def head_trial(config: dict[str, Any], data: dict[str, np.ndarray], base: dict[str, Any], params: tuple) -> None:
    """Tune function trainable: ``train_head`` on the base settings with the trial's sampled values."""
    import torch

    from xlt.sweep import tune_session

    torch.set_num_threads(1)
    sections = trial_data(base, active_values(params, config))
    # By hand, not xlt.config.from_dict: Ray ships this script's classes by value, and the
    # string annotations of a class pickled from __main__ do not resolve in the trial's process.
    train_head(HeadSettings(**sections["head"]), HeadOptim(**sections["optim"]), data, tune_session.report)


def run_arm(arm: str, seed: int, trials: int, data: dict[str, np.ndarray], storage: Path) -> dict[str, Any]:
    """One sweep; its trial records (creation order) and wall time."""
    from ray import tune

    from xlt.sweep.runner import build_scheduler, build_search_alg, to_record

    searcher, scheduler = ARMS[arm]
    params = parse_params(SPACE, "benchmarks/sweep_efficiency.py")
    base = {"head": asdict(HeadSettings()), "optim": asdict(HeadOptim(seed=seed))}
    search_alg, config = build_search_alg(params, searcher, metric=METRIC, mode="max", seed=seed, limit=2,
                                          num_samples=trials)
    name = f"{arm}-seed{seed}"
    shutil.rmtree(storage / name, ignore_errors=True)
    started = time.perf_counter()
    analysis = tune.run(tune.with_parameters(head_trial, data=data, base=base, params=params), name=name,
                        storage_path=str(storage), metric=METRIC, mode="max", config=config,
                        resources_per_trial={"CPU": 1}, num_samples=trials, search_alg=search_alg,
                        scheduler=build_scheduler(scheduler, TIME_ATTR, HeadOptim.epochs), reuse_actors=True,
                        raise_on_failed_trial=False, verbose=0)
    wall = time.perf_counter() - started
    return {"arm": arm, "seed": seed, "wall_s": wall,
            "records": [to_record(i, trial, params) for i, trial in enumerate(analysis.trials)]}


def incumbents(records: list[TrialRecord]) -> list[tuple[int, float, float]]:
    """After each trial k (creation order): (epochs spent by trials 0..k, incumbent dev, its test)."""
    out, epochs = [], 0
    for k, record in enumerate(records):
        epochs += steps_run(record, TIME_ATTR)
        try:
            best = best_trial(records[:k + 1], METRIC, "max", TIME_ATTR, HeadOptim.epochs)
            out.append((epochs, best.result[METRIC], best.result[TEST_METRIC]))
        except ValueError:  # no trial has run all epochs yet
            out.append((epochs, float("nan"), float("nan")))
    return out


def trials_to(curve: list[tuple[int, float, float]], fraction: float) -> float:
    final = curve[-1][1]
    return next((k + 1 for k, (_, dev, _) in enumerate(curve) if dev >= fraction * final), float("nan"))


def mean_sd(values: list[float]) -> str:
    """``mean ± sd`` over seeds, the value alone for one seed."""
    mean, sd = mean_std(values)
    return f"{mean:.4f} ± {sd:.4f}" if len(values) > 1 else f"{mean:.4f}"


def plot(runs: list[dict[str, Any]], references: dict[str, list[dict]], path: Path, trials: int) -> None:
    """Incumbent vs trials (mean over seeds, min-max band) and vs epochs spent (one line per sweep); the no-search
    references dashed; the y range starts below the worst of them and of the arms after three trials, so that the
    first trials' near-random scores do not flatten the rest."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_trial, by_epochs) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    floor = [np.mean([m[METRIC] for m in ms]) for ms in references.values()]
    for color, arm in zip(colors, dict.fromkeys(r["arm"] for r in runs)):
        curves = [incumbents(r["records"]) for r in runs if r["arm"] == arm]
        dev = np.asarray([[c[1] for c in curve] for curve in curves])
        floor.append(float(np.nanmean(dev, 0)[min(2, trials - 1)]))
        x = np.arange(1, trials + 1)
        by_trial.plot(x, np.nanmean(dev, 0), color=color, label=arm)
        by_trial.fill_between(x, np.nanmin(dev, 0), np.nanmax(dev, 0), color=color, alpha=0.15)
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
    plt.close(fig)


def measure(args) -> dict[str, Any]:
    """Encode (or read the cache), train the references, run every sweep; everything the report needs."""
    import ray
    import torch

    from xlt.logs import quiet_libraries

    quiet_libraries()
    machine = harness.Machine()
    data, encode_s = embeddings(harness.data_root(args.data_dir), OUT / "embeddings.npz")
    # One thread, as in the trials: a small MLP gains nothing from two, and on a shared machine
    # the second thread's spin-waits cost more than it computes.
    torch.set_num_threads(1)
    # References outside Tune: CE only (λ = 0) and Wang et al. (2022)'s defaults (τ = 1, λ = 1), all epochs.
    references = {name: [train_head(HeadSettings(weight=w), HeadOptim(seed=s), data) for s in args.seeds]
                  for name, w in (("CE only (λ = 0)", 0.0), ("CE + SCL, τ = 1, λ = 1", 1.0))}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    runs = [run_arm(arm, seed, args.trials, data, OUT / "tune") for seed in args.seeds for arm in args.arms]
    ray.shutdown()
    return {**machine.fields(), "encode_s": encode_s, "ray": ray.__version__, "arms": args.arms,
            "seeds": args.seeds, "trials": args.trials, "references": references,
            "runs": [{**r, "records": [asdict(t) for t in r["records"]]} for r in runs]}


def report(results: dict[str, Any], output: Path) -> str:
    """The markdown (and its plot beside it) of a ``measure`` result."""
    runs = [{**r, "records": [TrialRecord(**t) for t in r["records"]]} for r in results["runs"]]
    trials, references = results["trials"], results["references"]
    rows = []
    for arm in results["arms"]:
        mine = [r for r in runs if r["arm"] == arm]
        curves = [incumbents(r["records"]) for r in mine]
        stopped = [sum(steps_run(t, TIME_ATTR) < HeadOptim.epochs for t in r["records"]) for r in mine]
        rows.append({"arm": arm, "searcher + scheduler": " + ".join(ARMS[arm]),
                     "best dev (mean ± sd)": mean_sd([c[-1][1] for c in curves]),
                     "its test (mean ± sd)": mean_sd([c[-1][2] for c in curves]),
                     "epochs spent (mean)": float(np.mean([c[-1][0] for c in curves])),
                     "trials stopped early (mean)": float(np.mean(stopped)),
                     "wall s (mean)": float(np.mean([r["wall_s"] for r in mine])),
                     "trials to 99% of final (mean)": float(np.mean([trials_to(c, 0.99) for c in curves]))})
    checkpoints = sorted({max(1, trials // 4), trials // 2, trials})
    per_seed = []
    for r in runs:
        curve = incumbents(r["records"])
        best = best_trial(r["records"], METRIC, "max", TIME_ATTR, HeadOptim.epochs)
        per_seed.append({"arm": r["arm"], "seed": r["seed"], **{f"dev after {k}": curve[k - 1][1] for k in checkpoints},
                         "test of best": curve[-1][2], "epochs": curve[-1][0], "wall s": r["wall_s"],
                         **{f"best {k.split('.')[-1]}": v for k, v in best.values.items()}})
    reference_rows = [{"reference (no search)": name, "dev (mean ± sd)": mean_sd([m[METRIC] for m in ms]),
                       "test (mean ± sd)": mean_sd([m[TEST_METRIC] for m in ms])} for name, ms in references.items()]
    png = output.with_suffix(".png")
    plot(runs, references, png, trials)
    encoded = f"{results['encode_s']:.0f} s of it encoding" if results["encode_s"] else "embeddings read from the cache"
    space = ", ".join(f"`{k}` {next(iter(v))} {list(next(iter(v.values())))}" for k, v in SPACE.items())
    return f"""# Sweep efficiency: Optuna TPE + ASHA vs random search (same trial budget)

Command: `{results['command']}`  
Date: {results['date']}. Machine: {results['machine']} ({encoded}); Ray {results['ray']} (`ray.init(num_cpus=2)`),
two trials at a time with one torch thread each. A load above ~2 means other work shared the machine: wall times
are inflated, epochs and scores are not.

## Objective

Wang et al. (2022)'s SCL fine-tuning (§3.3: loss = CE + λ·L_SCL over each English example and its translations;
zero-shot: CE on English only) with the encoder frozen, so that a trial takes seconds and many sweeps fit on 2 cores.
The search space is Wang et al. (2022)'s τ and λ (§5.2–5.3) plus the head's learning rate and weight decay.

- Embeddings: `{MODEL}` (mean pooling, "query: " prefix, max length 128), 384-d, encoded once:
  701 English train sentences, their 9 × 701 translations (views), dev (10 × 99) and test (10 × 204).
- Trial: projection 384 → 256 → 256 (GELU), dropout 0.1, linear head; AdamW; batch 32 English examples, each
  with {HeadSettings.views} translations drawn per epoch (seeded); {HeadOptim.epochs} epochs (22 steps each).
- Space (`xlt.sweep.space`): {space}.
- Budget: {trials} trials per sweep; seeds {results['seeds']} (the searcher's seed and the trials' training seed;
  `random` and `random-asha` of one seed draw the same configurations).
- ASHA: `train/epoch`, max_t {HeadOptim.epochs}, grace 1, reduction factor 2 (rungs 1, 2, 4, 8, 16);
  TPE: {min(10, max(2, trials // 3))} random start-up trials (`xlt.sweep.runner.startup_trials`).
- Score: dev accuracy averaged over the 9 target languages, at the trial's last epoch; the incumbent is the best
  trial that ran all epochs (`xlt.sweep.best.best_trial`); its test score is reported, never used.

## Results

{markdown_table(rows, digits=4)}

"Trials to 99% of final": trials until the incumbent came within 1% (relative) of the sweep's final incumbent.
"Epochs spent": training epochs summed over all trials (without ASHA every trial runs {HeadOptim.epochs}).

Without a search (all {HeadOptim.epochs} epochs, lr 1e-3, weight decay 0.01):

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
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the markdown and plot from results/sweep_efficiency/<out stem>.json, run nothing")
    args = parser.parse_args()
    path = OUT / args.out.with_suffix(".json").name
    if args.report_only:
        results = json.loads(path.read_text())
    else:
        harness.write(path, results := measure(args))
    # A reading written by hand below the generated part (for the stored run) stays when only the report is redone.
    old = args.out.read_text(encoding="utf-8") if args.report_only and args.out.is_file() else ""
    text = report(results, args.out) + (old[old.index("\n## Reading"):] if "\n## Reading" in old else "")
    print(harness.write(args.out, text).read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
