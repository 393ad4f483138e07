"""Sweep efficiency: Optuna TPE + ASHA against random search with the same trial budget (issue 6).

    python benchmarks/sweep_efficiency.py                                  # 4 arms x 3 seeds x 32 trials
    python benchmarks/sweep_efficiency.py --trials 16 --arms tpe-asha random --seeds 0 1 2

A cheap but real objective, so that many sweeps fit on a 2-core CPU: the SCL fine-tuning of
Wang et al. 2022 (§3.3, loss = CE + λ·L_SCL over an example and its translations) with the encoder
frozen. SIB-200 is encoded once with ``bundled:multilingual-e5-small`` (English train, its
SIB-200 translations into the nine other languages as views joined on ``source_id``, every
language's dev and test split) and cached under ``results/sweep_efficiency/``. A trial trains a
small MLP projection + linear head on the cached embeddings: CE on the English examples, SCL
(``xlt.losses.SupervisedContrastiveAlignment``) on the projections of each example and two
translations drawn per epoch; it reports dev accuracy averaged over the nine targets after
every epoch. The search space is Wang et al. (2022)'s τ and λ plus learning rate and weight decay.

Arms (each a ``tune.run`` built with ``xlt.sweep.runner.build_search_alg`` / ``build_scheduler``,
the functions ``jobs/sweep.py`` uses; two trials at a time, one thread each):

- ``tpe-asha``: OptunaSearch (TPE, seeded) behind a ConcurrencyLimiter + ASHA (grace 1, factor 2)
- ``random``: Tune's random search, every trial to the last epoch
- ``tpe``, ``random-asha``: the two other combinations, to tell the searcher's share from the
  scheduler's

Per arm and seed: the incumbent (``xlt.sweep.best.best_trial``: the best dev score among trials
that ran all epochs) after each trial, the epochs spent, the wall time; and the incumbent's test
accuracy, which no arm sees. Writes ``results/sweep_efficiency/sweep_efficiency.json``, then
``benchmarks/sweep_efficiency.md`` and ``.png`` from it (``--report-only`` redoes only that).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from xlt.eval.classification import accuracy_by_language, summarize_transfer, to_metrics
from xlt.eval.stats import mean_std
from xlt.metrics import ACC, AVG_TARGET, TRAIN_EPOCH, VAL_AVG_TARGET_ACC, metric_name
from xlt.report import command_line, markdown_table
from xlt.sweep.best import TrialRecord, best_trial, steps_run
from xlt.sweep.overrides import trial_data
from xlt.sweep.space import active_values, parse_params


REPO = Path(__file__).resolve().parents[1]


MODEL = "bundled:multilingual-e5-small"
SOURCE = "en"
TARGETS = ("ar", "de", "es", "fr", "hi", "ja", "ru", "sw", "zh")
OUT = REPO / "results" / "sweep_efficiency"
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


@dataclass(frozen=True)
class HeadConfig:
    head: HeadSettings = field(default_factory=HeadSettings)
    optim: HeadOptim = field(default_factory=HeadOptim)


# --------------------------------------------------------------------------------------------
# Cached embeddings
# --------------------------------------------------------------------------------------------

@dataclass
class Cached:
    """English train (N, D) with labels, its translations (T, N, D) with a presence mask, and the
    dev / test embeddings of every language with labels and languages."""

    train: np.ndarray
    train_labels: np.ndarray
    views: np.ndarray
    view_mask: np.ndarray
    splits: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    labels: list[str]


def cache_embeddings(root: Path, directory: Path) -> tuple[Cached, float]:
    """Encode once (seconds spent returned; 0 when read from the cache)."""
    from xlt.config import from_dict, read_yaml
    from xlt.tasks import TaskConfig, load_task

    task = load_task(from_dict(TaskConfig, read_yaml(REPO / "configs" / "tasks" / "sib200.yaml"), prefix="task."), root)
    labels = list(task.labels)
    directory.mkdir(parents=True, exist_ok=True)
    meta = directory / "meta.json"
    started, encode = time.perf_counter(), not meta.is_file()
    if encode:
        import torch

        from xlt.models import EncoderConfig, load_encoder

        torch.set_num_threads(2)
        encoder = load_encoder(EncoderConfig(source=MODEL))
        english = task.examples("train", SOURCE)
        ids = [ex.source_id for ex in english]
        np.save(directory / "train.npy", encoder.encode([ex.text for ex in english], batch_size=64))
        np.save(directory / "train_labels.npy", np.asarray([ex.label for ex in english]))
        views, mask = [], []
        for lang in TARGETS:
            by_id = {ex.source_id: ex.text for ex in task.examples("train", lang)}
            texts = [by_id.get(i, "") for i in ids]
            emb = encoder.encode([t or "." for t in texts], batch_size=64)
            views.append(emb)
            mask.append([bool(t) for t in texts])
        np.save(directory / "views.npy", np.stack(views))
        np.save(directory / "view_mask.npy", np.asarray(mask))
        for split in ("dev", "test"):
            rows = [ex for lang in (SOURCE, *TARGETS) for ex in task.examples(split, lang)]
            np.save(directory / f"{split}.npy", encoder.encode([ex.text for ex in rows], batch_size=64))
            np.save(directory / f"{split}_labels.npy", np.asarray([ex.label for ex in rows]))
            np.save(directory / f"{split}_langs.npy", np.asarray([ex.lang for ex in rows]))
        meta.write_text(json.dumps({"model": MODEL, "targets": TARGETS, "labels": labels}))
    seconds = time.perf_counter() - started if encode else 0.0
    load = lambda name: np.load(directory / f"{name}.npy")  # noqa: E731
    splits = {split: (load(split), load(f"{split}_labels"), load(f"{split}_langs")) for split in ("dev", "test")}
    return Cached(load("train"), load("train_labels"), load("views"), load("view_mask"), splits, labels), seconds


# --------------------------------------------------------------------------------------------
# The objective: CE + λ·SCL on a projection of frozen embeddings
# --------------------------------------------------------------------------------------------

def train_head(cfg: HeadConfig, data: Cached, report: Callable[[dict[str, Any]], None] | None = None) -> dict:
    """Train projection + head for ``cfg.optim.epochs`` epochs, evaluating after each; returns the
    last epoch's metrics (``val/…`` on dev, ``test/…`` on test).

    A loop of its own, not ``xlt.engine``'s: this one keeps the learning rate constant, decays every
    parameter and does not clip, where the engine decays the rate linearly, exempts biases, clips and
    writes a checkpoint every epoch; and the fine-tuning workload encodes text, where these trials
    read cached embeddings. On the engine every trial would train differently, and
    ``benchmarks/sweep_efficiency.md`` would no longer be what this measures."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from xlt.losses.supcon import SupervisedContrastiveAlignment

    torch.manual_seed(cfg.optim.seed)
    index = {label: i for i, label in enumerate(data.labels)}
    dim, hidden = data.train.shape[1], cfg.head.hidden
    project = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, hidden))
    head, dropout = nn.Linear(hidden, len(data.labels)), nn.Dropout(cfg.head.dropout)
    params = [*project.parameters(), *head.parameters()]
    optimizer = torch.optim.AdamW(params, lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    scl = SupervisedContrastiveAlignment(temperature=cfg.head.temperature)
    x, views = torch.from_numpy(data.train), torch.from_numpy(data.views)  # (N, D), (T, N, D)
    y = torch.tensor([index[label] for label in data.train_labels])
    rng = np.random.default_rng(cfg.optim.seed)
    n, b, v = len(x), cfg.optim.batch_size, cfg.head.views
    if (data.view_mask.sum(0) < v).any():
        raise ValueError(f"some examples have fewer than {v} translations; lower head.views")
    metrics: dict[str, Any] = {}
    for epoch in range(cfg.optim.epochs):
        project.train(), head.train()
        order = rng.permutation(n)
        for start in range(0, n, b):
            idx = order[start:start + b]  # (B,)
            # v distinct languages per example among those with a translation (random keys, absent last)
            keys = np.where(data.view_mask[:, idx].T, rng.random((len(idx), len(views))), np.inf)  # (B, T)
            langs = np.argsort(keys, axis=1)[:, :v]  # (B, v)
            rows = torch.cat([x[idx], views[torch.from_numpy(langs.T.reshape(-1)), torch.from_numpy(np.tile(idx, v))]])
            features = project(rows)  # (B + vB, H): originals, then view 1 of each, view 2 of each
            group = torch.arange(len(idx)).repeat(v + 1)
            labels = y[idx].repeat(v + 1)
            is_anchor = torch.arange(len(rows)) < len(idx)
            loss = F.cross_entropy(head(dropout(features[is_anchor])), y[idx])
            if cfg.head.weight > 0:
                loss = loss + cfg.head.weight * scl({"features": features, "labels": labels, "group": group,
                                                     "is_anchor": is_anchor})
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        project.eval(), head.eval()
        metrics = {TIME_ATTR: epoch + 1}
        with torch.no_grad():
            for split, name in (("dev", "val"), ("test", "test")):
                emb, gold, lang = data.splits[split]
                pred = head(project(torch.from_numpy(emb))).argmax(1).numpy()
                per_lang = accuracy_by_language(gold, np.asarray(data.labels)[pred], lang)
                metrics.update(to_metrics(summarize_transfer(per_lang, SOURCE), name))
        if report is not None:
            report(metrics)
    return metrics


def head_trial(config: dict[str, Any], data: Cached, base: dict[str, Any], params: tuple) -> None:
    """Tune function trainable: the trial's ``HeadConfig`` (base + sampled values) through ``train_head``."""
    import torch

    from xlt.sweep import tune_session

    torch.set_num_threads(1)
    sections = trial_data(base, active_values(params, config))
    # By hand, not xlt.config.from_dict: Ray ships this script's classes by value, and the
    # string annotations of a class pickled from __main__ do not resolve in the trial's process.
    cfg = HeadConfig(head=HeadSettings(**sections["head"]), optim=HeadOptim(**sections["optim"]))
    train_head(cfg, data, tune_session.report)


# --------------------------------------------------------------------------------------------
# Arms
# --------------------------------------------------------------------------------------------

def run_arm(arm: str, seed: int, trials: int, data: Cached, storage: Path) -> dict[str, Any]:
    """One sweep; returns its trial records (creation order) and wall time."""
    from ray import tune

    from xlt.sweep.runner import build_scheduler, build_search_alg, to_record

    searcher, scheduler = ARMS[arm]
    params = parse_params(SPACE, "benchmarks/sweep_efficiency.py")
    base = asdict(HeadConfig(optim=HeadOptim(seed=seed)))
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
    records = [to_record(i, trial, params) for i, trial in enumerate(analysis.trials)]
    return {"arm": arm, "seed": seed, "wall_s": wall, "records": records}


def incumbents(records: list[TrialRecord]) -> list[tuple[int, float, float]]:
    """After each trial k (creation order): (epochs spent by trials 0..k, incumbent dev, its test)."""
    out, epochs = [], 0
    for k, record in enumerate(records):
        epochs += steps_run(record, TIME_ATTR)
        try:
            best = best_trial(records[:k + 1], METRIC, "max", TIME_ATTR, HeadOptim.epochs)
        except ValueError:
            out.append((epochs, float("nan"), float("nan")))
            continue
        out.append((epochs, best.result[METRIC], best.result[TEST_METRIC]))
    return out


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def mean_sd(values: list[float]) -> str:
    """``mean ± sd`` over seeds (``xlt.eval.stats.mean_std``), the value alone for one seed."""
    mean, sd = mean_std(values)
    return f"{mean:.4f} ± {sd:.4f}" if len(values) > 1 else f"{mean:.4f}"


def plot(runs: list[dict[str, Any]], references: dict[str, list[dict]], path: Path, trials: int) -> None:
    """Incumbent vs trials (mean over seeds, min-max band) and vs epochs spent (one line per sweep);
    the no-search references as dashed lines; the y range starts below the worst of them and of the
    arms after three trials, so that the first trials' near-random scores do not flatten the rest."""
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
    by_trial.set_ylim(min(floor) - 0.01, top + 0.005)
    by_trial.set_xlabel("trials")
    by_trial.set_ylabel("incumbent dev accuracy, average over targets")
    by_trial.set_title("incumbent vs trials (mean over seeds, min-max band)")
    by_epochs.set_xlabel("epochs spent (all trials so far)")
    by_epochs.set_title("incumbent vs compute (one line per sweep)")
    for ax in (by_trial, by_epochs):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Encode (or read the cache), train the references, run every sweep; everything the report needs."""
    import ray
    import torch

    from xlt.logs import quiet_libraries
    from xlt.data import resolve_data_dir

    quiet_libraries()
    load_start, started = os.getloadavg()[0], time.perf_counter()
    data, encode_s = cache_embeddings(resolve_data_dir(args.data_dir), OUT / "embeddings")
    # One thread, as in the trials: a small MLP gains nothing from two, and on a shared machine
    # the second thread's spin-waits cost more than it computes.
    torch.set_num_threads(1)
    # References outside Tune: CE only (λ = 0) and Wang et al. (2022)'s defaults (τ = 1, λ = 1), all epochs.
    references = {name: [train_head(HeadConfig(head=HeadSettings(weight=w), optim=HeadOptim(seed=s)), data)
                         for s in args.seeds] for name, w in (("CE only (λ = 0)", 0.0), ("CE + SCL, τ = 1, λ = 1", 1.0))}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    runs = [run_arm(arm, seed, args.trials, data, OUT / "tune") for seed in args.seeds for arm in args.arms]
    ray.shutdown()
    return {"command": command_line(), "date": time.strftime("%Y-%m-%d %H:%M %Z"), "load_start": load_start,
            "load_end": os.getloadavg()[0], "minutes": (time.perf_counter() - started) / 60, "encode_s": encode_s,
            "versions": {"torch": torch.__version__, "ray": ray.__version__}, "arms": args.arms, "seeds": args.seeds,
            "trials": args.trials, "references": references,
            "runs": [{**r, "records": [asdict(t) for t in r["records"]]} for r in runs]}


def report(results: dict[str, Any], output: Path) -> str:
    """The markdown (and its plot beside it) of a ``measure`` result."""
    runs = [{**r, "records": [TrialRecord(**t) for t in r["records"]]} for r in results["runs"]]
    trials, references = results["trials"], results["references"]
    rows = []
    for arm in results["arms"]:
        mine = [r for r in runs if r["arm"] == arm]
        finals = [incumbents(r["records"])[-1] for r in mine]
        stopped = [sum(steps_run(t, TIME_ATTR) < HeadOptim.epochs for t in r["records"]) for r in mine]
        rows.append({"arm": arm, "searcher + scheduler": " + ".join(ARMS[arm]),
                     "best dev (mean ± sd)": mean_sd([f[1] for f in finals]),
                     "its test (mean ± sd)": mean_sd([f[2] for f in finals]),
                     "epochs spent (mean)": float(np.mean([f[0] for f in finals])),
                     "trials stopped early (mean)": float(np.mean(stopped)),
                     "wall s (mean)": float(np.mean([r["wall_s"] for r in mine])),
                     "trials to 99% of final (mean)": float(np.mean([_trials_to(incumbents(r["records"]), 0.99)
                                                                     for r in mine]))})
    checkpoints = sorted({max(1, trials // 4), trials // 2, trials})
    per_seed = [{"arm": r["arm"], "seed": r["seed"],
                 **{f"dev after {k}": incumbents(r["records"])[k - 1][1] for k in checkpoints},
                 "test of best": incumbents(r["records"])[-1][2], "epochs": incumbents(r["records"])[-1][0],
                 "wall s": r["wall_s"],
                 **{f"best {k.split('.')[-1]}": v for k, v in best_trial(r["records"], METRIC, "max", TIME_ATTR,
                                                                          HeadOptim.epochs).values.items()}}
                for r in runs]
    reference_rows = [{"reference (no search)": name, "dev (mean ± sd)": mean_sd([m[METRIC] for m in ms]),
                       "test (mean ± sd)": mean_sd([m[TEST_METRIC] for m in ms])}
                      for name, ms in references.items()]
    png = output.with_suffix(".png")
    plot(runs, references, png, trials)
    encoded = f"{results['encode_s']:.0f} s of it encoding" if results["encode_s"] else "embeddings read from the cache"
    return f"""# Sweep efficiency: Optuna TPE + ASHA vs random search (same trial budget)

Command: `{results['command']}`
Date: {results['date']}
Machine: 2 CPU cores, no GPU, torch {results['versions']['torch']}; Ray {results['versions']['ray']}
(`ray.init(num_cpus=2)`), two trials at a time with one torch thread each. 1-min load average
{results['load_start']:.2f} at the start, {results['load_end']:.2f} at the end (above ~2, other work shared
the machine: wall times are inflated, epochs and scores are not). Whole run: {results['minutes']:.1f} min
({encoded}).

## Objective

Wang et al. (2022)'s SCL fine-tuning (§3.3: loss = CE + λ·L_SCL over each English example and its
translations; zero-shot: CE on English only) with the encoder frozen, so that a trial takes
seconds and many sweeps fit on 2 cores. The search space is Wang et al. (2022)'s τ and λ (§5.2–5.3) plus
the head's learning rate and weight decay.

- Embeddings: `{MODEL}` (mean pooling, "query: " prefix, max length 128), 384-d, encoded once:
  701 English train sentences, their 9 × 701 translations (views), dev (10 × 99) and test (10 × 204).
- Trial: projection 384 → 256 → 256 (GELU), dropout 0.1, linear head; AdamW; batch 32 English
  examples, each with {HeadSettings.views} translations drawn per epoch (seeded); {HeadOptim.epochs} epochs (22 steps each).
- Space (`xlt.sweep.space`): {', '.join(f'`{k}` {next(iter(v))} {list(next(iter(v.values())))}' for k, v in SPACE.items())}.
- Budget: {trials} trials per sweep; seeds {results['seeds']} (the searcher's seed and the trials' training seed;
  `random` and `random-asha` of one seed draw the same configurations).
- ASHA: `train/epoch`, max_t {HeadOptim.epochs}, grace 1, reduction factor 2 (rungs 1, 2, 4, 8, 16);
  TPE: {min(10, max(2, trials // 3))} random start-up trials (`xlt.sweep.runner.startup_trials`).
- Score: dev accuracy averaged over the 9 target languages, at the trial's last epoch; the
  incumbent is the best trial that ran all epochs (`xlt.sweep.best.best_trial`); its test score
  is reported, never used.

## Results

{markdown_table(rows, digits=4)}

"Trials to 99% of final": trials until the incumbent came within 1% (relative) of the sweep's
final incumbent. "Epochs spent": training epochs summed over all trials (without ASHA every trial
runs {HeadOptim.epochs}).

Without a search (all {HeadOptim.epochs} epochs, lr 1e-3, weight decay 0.01):

{markdown_table(reference_rows)}

Per sweep (the last four columns: the incumbent's configuration):

{markdown_table(per_seed, digits=4)}

![incumbent vs trials and vs epochs]({png.name})
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--trials", type=int, default=32, help="trials per sweep (the same budget for every arm)")
    parser.add_argument("--data-dir", help="data root (default: $XLT_DATA_DIR)")
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "sweep_efficiency.md"))
    parser.add_argument("--report-only", action="store_true",
                        help=f"rewrite the markdown and plot from {OUT.relative_to(REPO)}/<output stem>.json, "
                             "run nothing")
    args = parser.parse_args()
    path = OUT / Path(args.output).with_suffix(".json").name
    if args.report_only:
        results = json.loads(path.read_text())
    else:
        results = measure(args)
        OUT.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1, default=str))
    text = report(results, Path(args.output))
    Path(args.output).write_text(text, encoding="utf-8")
    print(text)


def _trials_to(curve: list[tuple[int, float, float]], fraction: float) -> float:
    final = curve[-1][1]
    return next((k + 1 for k, (_, dev, _) in enumerate(curve) if dev >= fraction * final), float("nan"))


if __name__ == "__main__":
    main()
