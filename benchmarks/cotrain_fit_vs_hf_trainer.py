"""Co-training's LM fits against Hugging Face's ``Trainer`` on the same rows, each run as a user runs it, and
`make demo`'s job time.

    python benchmarks/cotrain_fit_vs_hf_trainer.py               # 3 runs of each -> cotrain_fit_vs_hf_trainer.md
    python benchmarks/cotrain_fit_vs_hf_trainer.py report        # the .md from the runs stored so far
    python benchmarks/cotrain_fit_vs_hf_trainer.py threads       # HF's fit in a thread, after OpenMP in another
    git worktree add /tmp/before <commit>; python benchmarks/cotrain_fit_vs_hf_trainer.py --checkout /tmp/before \
        --arms xlt --store results/benchmarks/cotrain_fit_before --out /tmp/before.md   # the demo of another commit

- xlt: `make demo`'s job, ``python jobs/cotrain.py --no-tracking`` (``configs/cotrain_demo.yaml``), in its own
  process. Its LM learner's fit of iteration 0 trains on the 150 labelled English rows: batch 8, max length 64,
  three epochs, length-grouped (``optim.group_by_length: 50``), word embeddings frozen, ``precision: auto`` (bf16
  where the CPU computes in it). Each epoch logs its examples/s; the fit's are its rows over its epochs' seconds.
  Later fits train on more rows (the exchanged ones), the same way. The whole job's wall time is measured from here.
- HF: ``step_vs_hf_trainer.py hf`` on the same 150 rows (``text``, ``category``), batch 8, max length 64, three
  epochs, HF's ``LengthGroupedSampler`` (mega-batches of 50 batches), bf16 where auto is; its
  ``train_samples_per_second``. Both arms start from the same checkpoint with a fresh head; xlt's head learns at
  1e-2 and its encoder at 1e-4, HF's one rate is 1e-4 (the rate does not change a step's cost).

The arms alternate, xlt first; each run is stored when it ends (``--store``): a stopped benchmark resumes.

``threads``, a diagnosis: the HF arm in a thread of its process, alone or after the main thread ran torch on two
OpenMP threads (50 matrix products): libgomp counts the threads each master started, and beyond the cores it stops
spinning between parallel regions (why ``xlt.engine.fits`` serves an in-process fit in the thread asking for it).
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

ARMS = ("xlt", "HF Trainer")
EPOCH = re.compile(r"\bepoch (\d+) \| step (\d+) \| loss [\d.]+ \| ([\d.]+) examples/s")
LM_FIT = {"batch_size": 8, "max_length": 64, "epochs": 3, "lr": 1e-4}  # configs/cotrain_demo.yaml's lm


def labelled_rows(data_dir: Path, path: Path) -> int:
    """The demo's labelled rows (iteration 0's LM fit) as a TSV of ``text`` and ``category``; how many."""
    from xlt.cotrain.config import load_cotrain_config
    from xlt.cotrain.loop import prepare

    prepared = prepare(load_cotrain_config(harness.REPO / "configs" / "cotrain_demo.yaml", [f"data.data_dir={data_dir}"]))
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        out.writerow(["text", "category"])
        out.writerows([row["text"], row["label"]] for row in prepared.labeled)
    return len(prepared.labeled)


def fits(log: str, epochs: int) -> list[dict]:
    """The LM fits in a demo's stderr: each ``epochs`` epoch lines in order, as examples/s over the fit."""
    lines = [(int(e), float(rate)) for e, _, rate in EPOCH.findall(log)]
    out = []
    for i in range(0, len(lines) - epochs + 1, epochs):
        rates = [rate for _, rate in lines[i:i + epochs]]
        out.append({"fit": i // epochs, "examples/s": len(rates) / sum(1 / r for r in rates)})  # same rows each epoch
    return out


def run_arm(arm: str, env: dict[str, str], rows: Path, precision: str, checkout: Path = harness.REPO) -> dict:
    """One run of ``arm`` in its own process; xlt's from ``checkout`` (its jobs and its package)."""
    env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(checkout / "platform"), env.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory(prefix="cotrain-fit-") as out:
        if arm == "xlt":
            command = [sys.executable, "jobs/cotrain.py", "--no-tracking", "--set", f"output.dir={out}/demo"]
        else:
            command = [sys.executable, "benchmarks/step_vs_hf_trainer.py", "hf", "--precision", precision, "--rows",
                       str(rows), "--result", f"{out}/hf.json", "--group-by-length",
                       *(x for key, value in LM_FIT.items() for x in (f"--{key.replace('_', '-')}", str(value)))]
        start = time.perf_counter()
        with open(Path(out, "stderr.txt"), "w") as log:
            done = subprocess.run(command, cwd=checkout if arm == "xlt" else harness.REPO, env=env,
                                  stdout=subprocess.DEVNULL, stderr=log)
        wall = time.perf_counter() - start
        stderr = Path(out, "stderr.txt").read_text()
        if done.returncode != 0:
            raise RuntimeError(f"{arm} failed:\n{stderr[-3000:]}")
        if arm == "xlt":
            lm = fits(stderr, LM_FIT["epochs"])
            if not lm:
                raise RuntimeError(f"no LM fit's epoch lines in the demo's stderr:\n{stderr[-3000:]}")
            measured = {"examples/s": lm[0]["examples/s"], "later fits examples/s": [f["examples/s"] for f in lm[1:]],
                        "table": Path(out, "demo", "results.md").read_text()}
        else:
            measured = {"examples/s": json.loads(Path(out, "hf.json").read_text())["examples/s"]}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True)
    return {"arm": arm, "precision": precision, **measured, "command s": wall, "commit": commit.stdout.strip()}


def hf_in_thread(rows: Path, precision: str, result: Path, openmp_first: bool) -> None:
    """``threads``' run: the HF arm in a new thread, after OpenMP work on the main thread if ``openmp_first``."""
    import threading

    import torch

    from step_vs_hf_trainer import hf

    torch.set_num_threads(2)
    if openmp_first:
        x = torch.randn(512, 512)
        for _ in range(50):
            x = torch.tanh(x @ x)
    fit = threading.Thread(target=hf, args=(precision, result, harness.data_root()), kwargs=dict(
        rows=rows, group_by_length=True, **LM_FIT))
    fit.start()
    fit.join()


def threads(env: dict[str, str], rows: Path, precision: str, store: Path, runs: int = 2) -> None:
    for i in range(1, runs + 1):
        for openmp_first in (True, False):
            def run() -> dict:
                with tempfile.TemporaryDirectory(prefix="cotrain-fit-") as out:
                    subprocess.run([sys.executable, __file__, "hf-in-thread", "--rows", str(rows), "--precision",
                                    precision, "--result", f"{out}/hf.json", *(["--openmp-first"] if openmp_first else [])],
                                   cwd=harness.REPO, env=env, check=True, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
                    return {"run": i, "openmp first": openmp_first, **json.loads(Path(out, "hf.json").read_text())}
            harness.stored(store / f"threads-{i}-{'openmp-first' if openmp_first else 'alone'}.json", run)


def accuracy_tables(results_md: str) -> str:
    """A demo's ``results.md`` without its time table (``### Where the time went``)."""
    return results_md.split("### Where the time went", 1)[0]


def report(store: Path, output: Path, before: Path | None = None) -> None:
    """The .md of the runs in ``store``; ``before``: a store of demos of another commit (``--checkout``), compared."""
    from step_vs_hf_trainer import stored_runs
    from xlt.report import markdown_table

    runs = stored_runs(store)
    if not runs:
        raise SystemExit(f"no runs stored under {store}")
    earlier = stored_runs(before) if before else []
    table = [{"run": r["run"], "arm": r["arm"] + (f" ({r['commit']})" if r["arm"] == "xlt" else ""),
              "precision": r["precision"],
              "examples/s, iteration 0's fit": f"{r['examples/s']:.2f}",
              "later fits examples/s": ", ".join(f"{v:.2f}" for v in r.get("later fits examples/s", [])) or "–",
              "command s": f"{r['command s']:.1f}", "date": r["date"],
              "CPU, load": r["machine"].split(",")[0] + ", " + r["machine"].split("load average ")[1].split(";")[0]}
             for r in earlier + runs]
    pairs = [(x, h) for x in runs for h in runs if (x["arm"], h["arm"]) == ARMS and x["run"] == h["run"]]
    ratio = [x["examples/s"] / h["examples/s"] for x, h in pairs]
    demos = [r for r in runs if r["arm"] == "xlt"]
    tables = {accuracy_tables(r["table"]) for r in demos}
    diagnosis = sorted((json.loads(p.read_text()) for p in store.glob("threads-*.json")), key=lambda r: r["run"])
    threaded = ""
    if diagnosis:
        first = [r["examples/s"] for r in diagnosis if r["openmp first"]]
        alone = [r["examples/s"] for r in diagnosis if not r["openmp first"]]
        threaded = (f"\n\nThe diagnosis (`threads`): HF's fit in a thread of its own, {harness.mean_sd(alone, 2)} "
                    f"examples/s alone against {harness.mean_sd(first, 2)} after the main thread ran torch on two "
                    f"OpenMP threads ({diagnosis[0]['date']}, {diagnosis[0]['machine'].split(';')[0]}).")
    lines = [f"- The LM learner's fit of iteration 0 against HF Trainer on its rows, per pair of neighbouring runs: "
             f"{harness.mean_sd(ratio, 2)} ({', '.join(f'{v:.2f}' for v in ratio)})."] if ratio else []
    for commit in dict.fromkeys(r["commit"] for r in demos):  # a store may hold demos of several commits
        seconds = [r["command s"] for r in demos if r["commit"] == commit]
        lines.append(f"- `make demo`'s job ({commit}): {harness.mean_sd(seconds, 1)} s over {len(seconds)} run(s).")
    lines.append(f"- The demos' accuracy tables: {'identical in every run' if len(tables) == 1 else 'differ between runs'}"
                 f" ({len(demos)} runs, {len(set(r['commit'] for r in demos))} commit(s)).")
    if earlier:
        lines.append(f"- Before ({earlier[0]['commit']}): {harness.mean_sd([r['command s'] for r in earlier], 1)} s over "
                     f"{len(earlier)} runs; the LM's first fit {harness.mean_sd([r['examples/s'] for r in earlier], 2)} "
                     f"examples/s against {harness.mean_sd([r['examples/s'] for r in demos], 2)} after; the accuracy "
                     "tables " + ("identical to after's" if {accuracy_tables(r["table"]) for r in earlier} == tables
                                  else "differ from after's") + ".")
    text = (f"# Co-training's LM fits against HF Trainer, each run as a user runs it\n\nCommand: `python "
            f"{' '.join([sys.argv[0], *sys.argv[1:]])}`. The work, and what each number is: the script's docstring.\n\n"
            f"{markdown_table(table)}\n\n" + "\n".join(lines) + threaded + "\n")
    harness.write(output, text, show=True)


def main() -> None:
    parser = harness.parser(__doc__, "cotrain_fit_vs_hf_trainer.md", data_dir=True)
    parser.add_argument("part", nargs="?", default="runs", choices=("runs", "report", "threads", "hf-in-thread"))
    parser.add_argument("--rows", type=Path, help="hf-in-thread: the TSV")
    parser.add_argument("--precision", default="bf16", help="hf-in-thread")
    parser.add_argument("--result", type=Path, help="hf-in-thread: where its metrics go")
    parser.add_argument("--openmp-first", action="store_true", help="hf-in-thread: OpenMP on the main thread first")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--before", type=Path, help="report: a store of another commit's demos, compared")
    parser.add_argument("--checkout", type=Path, default=harness.REPO, help="xlt's jobs and package from this checkout")
    parser.add_argument("--store", type=Path, default=harness.REPO / "results" / "benchmarks" / "cotrain_fit_vs_hf_trainer")
    args = parser.parse_args()
    if args.part == "report":
        return report(args.store, args.out, args.before)
    if args.part == "hf-in-thread":
        return hf_in_thread(args.rows, args.precision, args.result, args.openmp_first)
    from xlt.hardware import resolve_precision

    data_dir = harness.data_root(args.data_dir)
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "RAY_ADDRESS": ""}
    args.store.mkdir(parents=True, exist_ok=True)
    rows = args.store / "labelled.tsv"
    labelled_rows(data_dir, rows)
    precision = resolve_precision("auto", "cpu")
    if args.part == "threads":
        threads(env, rows, precision, args.store)
        return report(args.store, args.out, args.before)
    for i in range(1, args.runs + 1):
        for arm in args.arms:
            harness.stored(args.store / f"run-{i}-{arm.replace(' ', '')}.json",
                           lambda: {"run": i, **run_arm(arm, env, rows, precision, args.checkout.resolve())})
    report(args.store, args.out, args.before)


if __name__ == "__main__":
    main()
