"""The predict job on corpora of any size: memory against rows, and rows/s against a bare loop (issue 72).

    python benchmarks/predict_scale.py memory        # tiny:bert; 10k, 100k and 1M rows; in process and one actor
    python benchmarks/predict_scale.py throughput    # e5; 20,000 SIB-200 sentences; bare loop, job, job + actor
    python benchmarks/predict_scale.py report        # benchmarks/predict_scale.md from the runs stored so far
    python benchmarks/predict_scale.py memory --rows 1000 2000 --store /tmp/ps    # a check that it runs

Each run is stored under ``--store`` when it ends and skipped when it is there, so a part resumes.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import harness
from xlt.report import markdown_table

WORDS = ("the of and to in is was for on that with as by at from his her an which they were this are be has had "
         "city river school music team game world year people time family music science film war party church "
         "north south water light house market station island language history king queen village road").split()
LANGS = ("en", "de", "fr")
METHOD = (
    "Memory: synthetic JSON Lines corpora (20 seeded words a row, three languages in `lang`, no id) labelled by "
    "`jobs/predict.py` as a user runs it (a subprocess; shards of 10,000 rows) with a tiny:bert classifier, so that "
    "reading, checking, shards and writing grow, not the model's time. Sampled every 0.25 s: the driver's RSS; over it "
    "and every process under it (Ray's, the labelling actor), the sums of USS (without the object store's shared "
    "memory) and of PSS (shared pages split between the processes mapping them).\n\n"
    "Throughput: 20,000 rows (every SIB-200 sentence twice over), bundled:multilingual-e5-small under a fresh head, "
    "fp32, batches of 64, one after the other: a bare `Classifier.predict` loop in this process (sorted by length as a "
    "whole), the job in process (`inference.num_actors: 0`), the job with one actor holding both cores, the bare loop "
    "again. The machine's speed drifts by 10-20 % over minutes: each job is set against the bare loops around it.")


def synthetic_corpus(path: Path, rows: int) -> Path:
    if not path.is_file():
        rng = random.Random(0)
        with open(path.with_suffix(".tmp"), "w", encoding="utf-8") as sink:
            for i in range(rows):
                sink.write(json.dumps({"text": " ".join(rng.choices(WORDS, k=20)), "lang": LANGS[i % 3]}) + "\n")
        os.replace(path.with_suffix(".tmp"), path)
    return path


def checkpoint(run: Path, source: str) -> Path:
    """A fine-tuning run's record and checkpoint (``run/epoch001``): SIB-200's labels, a fresh head on ``source``."""
    import torch

    from xlt.engine import write_state
    from xlt.record import FINISHED, write_record
    from xlt.train import load_finetune_config, prepare
    from xlt.train.workload import FINETUNE, finetune_training

    if not (run / "run.json").is_file():
        torch.manual_seed(0)
        cfg = prepare(load_finetune_config(harness.REPO / "configs" / "finetune_sib200.yaml",
                                           ["data.max_examples=16", f"model.source={source}"])).config
        write_state(run / "epoch001", finetune_training(cfg, steps_per_epoch=1), cfg)
        write_record(run, FINETUNE.job, cfg, FINISHED, default="model",
                     classifiers=FINETUNE.classifiers(cfg, str(run / "epoch001"), str(run)))
    return run


def job(model: Path, corpus: Path, rows: int, actors: int, work: Path, env: dict, every: float) -> dict:
    """The predict job run as a user runs it, watched every ``every`` s: its seconds, peaks (MiB) and phases."""
    out = Path(tempfile.mkdtemp(prefix="predict-scale-", dir=work))
    sets = [f"model.path={model}", f"input.path={corpus}", "input.lang_field=lang", f"output.dir={out}",
            f"inference.num_actors={actors}", "inference.num_cpus=2", "inference.threads=2"]
    watch = harness.watch_command([sys.executable, "jobs/predict.py", "--no-tracking",
                                   *(x for s in sets for x in ("--set", s))], env, every)
    phases = json.loads((out / "results.json").read_text())["phases"]
    return {"rows": rows, "actors": actors, "seconds": watch.wall, "peak": watch.peak, "sampled_every_s": every,
            "pss_timeline_mb": watch.timeline[::max(1, len(watch.timeline) // 200)],
            "phases": {p["phase"]: p["seconds"] for p in phases}}


def memory(args, store: Path, work: Path, env: dict[str, str]) -> None:
    model = checkpoint(work / "tiny-model", "tiny:bert")
    for rows in args.rows:
        corpus = synthetic_corpus(work / f"corpus-{rows}.jsonl", rows)
        for actors in args.actors:
            harness.stored(store / f"memory-{rows}-actors{actors}.json",
                           lambda: job(model, corpus, rows, actors, work, env, every=0.25))


def throughput(args, store: Path, work: Path, env: dict[str, str]) -> None:
    rows = min(args.rows) if args.rows != [10_000, 100_000, 1_000_000] else 20_000
    model = checkpoint(work / "e5-model", "bundled:multilingual-e5-small")
    task = harness.sib200()
    every = [{"text": ex.text, "lang": lang} for lang in task.langs for split in ("train", "dev", "test")
             for ex in task.examples(split, lang)]
    items = [every[i % len(every)] for i in range(rows)]
    corpus = work / f"sib200-{rows}.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), encoding="utf-8")

    def bare() -> dict:
        from xlt.train import load_classifier

        start = time.perf_counter()
        classifier = load_classifier(model / "epoch001")
        loaded = time.perf_counter()
        classifier.predict([r["text"] for r in items], batch_size=64)
        return {"rows": rows, "seconds": time.perf_counter() - loaded, "model_load_s": loaded - start}

    harness.stored(store / f"throughput-{rows}-bare.json", bare)
    for actors in (0, 1):
        harness.stored(store / f"throughput-{rows}-actors{actors}.json",
                       lambda: job(model, corpus, rows, actors, work, env, every=10))
    harness.stored(store / f"throughput-{rows}-bare-after.json", bare)


def quarters(timeline: list) -> str:
    """PSS a quarter, half, three quarters through a run and at its end: does it climb with the rows read?"""
    last = len(timeline) - 1
    return ", ".join(f"{timeline[round(q * last)][1]:.0f}" for q in (0.25, 0.5, 0.75, 1.0)) if timeline else "–"


def report(store: Path, output: Path) -> None:
    results = {p.stem: json.loads(p.read_text()) for p in sorted(store.glob("*.json"), key=lambda p: p.stem)}
    mem = sorted((r for k, r in results.items() if k.startswith("memory-")), key=lambda r: (r["actors"], r["rows"]))
    text = ["# Predict on corpora of any size (issue 72)", "", "```",
            *(f"python benchmarks/predict_scale.py {part}" for part in ("memory", "throughput", "report")), "```", "",
            "Each row names the machine and load of its run (other work slows a run; it does not change its memory).",
            "", METHOD]
    if mem:
        text += ["", "## Memory against rows", "", markdown_table([
            {"rows": f"{r['rows']:,}", "labelling": f"{r['actors']} actor" if r["actors"] else "in the driver",
             "driver peak RSS (MB)": f"{r['peak']['driver_rss']:.0f}",
             "peak USS, every process (MB)": f"{r['peak']['uss']:.0f}",
             "PSS at ¼, ½, ¾, last sample (MB)": quarters(r["pss_timeline_mb"]),
             "peak PSS, every process (MB)": f"{r['peak']['pss']:.0f}", "processes": r["peak"]["processes"],
             "seconds": f"{r['seconds']:.0f}", "rows/s": f"{r['rows'] / r['seconds']:.0f}", "machine": r["machine"]}
            for r in mem])]
    for actors in (0, 1):
        runs = {r["rows"]: r["peak"] for r in mem if r["actors"] == actors}
        if 100_000 in runs and 1_000_000 in runs:
            ratio = {key: runs[1_000_000][key] / runs[100_000][key] for key in ("driver_rss", "uss", "pss")}
            text += ["", f"{'With one actor' if actors else 'In the driver'}: 1M rows against 100k, driver RSS "
                     f"×{ratio['driver_rss']:.2f}, USS of every process ×{ratio['uss']:.2f}, PSS of every process "
                     f"×{ratio['pss']:.2f}."]
    bares = [r for k, r in results.items() if k.startswith("throughput-") and "-bare" in k]  # before, after
    if bares:
        bare_s = sum(r["seconds"] for r in bares) / len(bares)  # each job against the mean of the bare loops
        rows = [(f"bare loop{' (again, after the jobs)' if i else ''}: Classifier.predict over every row, in process "
                 "(model load apart)", r["seconds"], r) for i, r in enumerate(bares)]
        fixed = ["the bare loop's model load " + ", ".join(f"{r['model_load_s']:.1f} s" for r in bares)]
        for r in (r for k, r in results.items() if k.startswith("throughput-") and "-actors" in k):
            where = "1 actor" if r["actors"] else "in process"
            rows += [(f"jobs/predict.py, {where}: the whole command (Python, imports, Ray, the model, reading, "
                      "labelling, writing)", r["seconds"], r),
                     (f"jobs/predict.py, {where}: after its start-up (phase 'label and write': reading, checking, "
                      "labelling, writing)", r["phases"]["label and write"], r)]
            fixed.append(f"the job, {where} (its results.json): " + ", ".join(
                f"{name} {seconds:.1f} s" for name, seconds in r["phases"].items() if name != "label and write")
                + f", and {r['seconds'] - sum(r['phases'].values()):.1f} s of Python start and imports")
        table = markdown_table([
            {"run": run, "seconds": f"{seconds:.1f}", "rows/s": f"{bares[0]['rows'] / seconds:.1f}",
             "vs bare loop": f"{bare_s / seconds:.2f}",
             "vs each bare loop": "/".join(f"{b['seconds'] / seconds:.2f}" for b in bares),
             "machine": r["machine"], "date": r["date"],
             "memory sampled every": f"{r['sampled_every_s']:g} s" if "sampled_every_s" in r else "–"}
            for run, seconds, r in rows])
        text += ["", f"## Rows/s against a bare loop: {bares[0]['rows']:,} SIB-200 sentences, e5, fp32", "",
                 f"\"vs bare loop\" is the bare loops' mean time ({bare_s:.1f} s) over the run's; \"vs each bare "
                 "loop\", the run against each of them: the ratio lies between the two where the machine's speed "
                 "drifts steadily." + ("" if len(bares) > 1 else " **Only the first bare loop is stored**: the "
                                       "ratios do not bound that drift."), "", table, "",
                 f"Fixed costs: {'; '.join(fixed)}."]
    harness.write(output, "\n".join(text) + "\n", show=True)


def main() -> None:
    parser = harness.parser(__doc__, "predict_scale.md", data_dir=True)
    parser.add_argument("part", choices=("memory", "throughput", "report"))
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000],
                        help="memory: corpus sizes; throughput: the least of them sets the rows (default 20,000)")
    parser.add_argument("--actors", type=int, nargs="+", default=[0, 1], help="memory: labelling actors (0: none)")
    parser.add_argument("--store", type=Path, default=harness.REPO / "results" / "benchmarks" / "predict_scale")
    args = parser.parse_args()
    if args.part == "report":
        return report(args.store, args.out)
    os.environ["XLT_DATA_DIR"] = str(harness.data_root(args.data_dir))
    env = {**os.environ, "RAY_ADDRESS": "", "HF_HUB_OFFLINE": "1"}
    work = args.store / "work"
    work.mkdir(parents=True, exist_ok=True)
    (memory if args.part == "memory" else throughput)(args, args.store, work, env)


if __name__ == "__main__":
    main()
