"""The predict job on corpora of any size: memory against rows, and rows/s against a bare loop (issue 72).

    python benchmarks/predict_scale.py memory        # tiny:bert; 10k, 100k and 1M rows; in process and one actor
    python benchmarks/predict_scale.py throughput    # e5; 20,000 SIB-200 sentences; bare loop, job, job + actor
    python benchmarks/predict_scale.py report        # benchmarks/predict_scale.md from the parts stored so far
    python benchmarks/predict_scale.py memory --rows 1000 2000 --store /tmp/ps    # a check that it runs

Each run is stored when it ends (``--store``, default results/benchmarks/predict_scale/) and skipped when it is
there, so a part resumes; ``report`` writes the markdown, with each run's method, CPU and load, from what is stored.
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
    "Memory: synthetic JSON Lines corpora (20 seeded words a row, three languages in the `lang` field, no id) labelled "
    "by `jobs/predict.py` as a user runs it (a subprocess; shards of 10,000 rows) with a tiny:bert classifier, so that "
    "reading, checking, shards and writing grow, not the model's time. Sampled every 0.25 s: the driver's RSS; sums "
    "over it and every process under it (Ray's, the labelling actor) of USS (which leaves out the object store's "
    "shared memory) and of PSS (shared pages split between the processes mapping them).\n\n"
    "Throughput: 20,000 rows, every SIB-200 sentence offline twice over, bundled:multilingual-e5-small under a fresh "
    "head, fp32, batches of 64: a bare `Classifier.predict` loop in this process (sorted by length as a whole), the "
    "job in process (`inference.num_actors: 0`), the job with one actor holding both cores, and the bare loop again: "
    "the machine's speed drifts by 10-20 % over minutes, so each job is set against the bare loops before and after.")


def synthetic_corpus(path: Path, rows: int) -> Path:
    """``rows`` JSON Lines of 20 seeded words and a language."""
    if not path.is_file():
        rng = random.Random(0)
        with open(path.with_suffix(".tmp"), "w", encoding="utf-8") as sink:
            for i in range(rows):
                sink.write(json.dumps({"text": " ".join(rng.choices(WORDS, k=20)), "lang": LANGS[i % 3]}) + "\n")
        os.replace(path.with_suffix(".tmp"), path)
    return path


def checkpoint(run: Path, source: str) -> Path:
    """A fine-tuning run's output (the job reads its record): a classifier over SIB-200's labels with a fresh head on
    ``source``, its checkpoint in ``run/epoch001``."""
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


def watched(command: list[str], env: dict[str, str], every: float = 0.25) -> dict:
    """``command``'s wall time and peaks of memory (MB), watched every ``every`` seconds."""
    watch = harness.watch_command(command, env, every)
    return {"driver_rss_mb": watch.peak["driver_rss"], "uss_sum_mb": watch.peak["uss"],
            "pss_sum_mb": watch.peak["pss"], "processes": watch.peak["processes"], "seconds": watch.wall,
            "sampled_every_s": every, "pss_timeline_mb": watch.timeline[::max(1, len(watch.timeline) // 200)]}


def stored(store: Path, name: str, run) -> dict:
    """The stored result ``name``, or ``run()``'s, stored with the CPU, the load and the time."""
    from xlt.hardware import cpu_model

    path = store / f"{name}.json"
    if path.is_file():
        return json.loads(path.read_text())
    load = os.getloadavg()[0]
    result = {**run(), "cpu": cpu_model(), "load_1min_start": load, "load_1min_end": os.getloadavg()[0],
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv)}
    harness.write(path, result)
    return result


def job(model: Path, corpus: Path, work: Path, actors: int) -> tuple[list[str], Path]:
    """The predict job's command, as a user runs it, and the directory it writes."""
    out = Path(tempfile.mkdtemp(prefix="predict-scale-", dir=work))
    sets = [f"model.path={model}", f"input.path={corpus}", "input.lang_field=lang", f"output.dir={out}",
            f"inference.num_actors={actors}", "inference.num_cpus=2", "inference.threads=2"]
    return [sys.executable, "jobs/predict.py", "--no-tracking", *(x for s in sets for x in ("--set", s))], out


def memory(args, store: Path, work: Path, env: dict[str, str]) -> None:
    model = checkpoint(work / "tiny-model", "tiny:bert")
    for rows in args.rows:
        corpus = synthetic_corpus(work / f"corpus-{rows}.jsonl", rows)
        for actors in args.actors:
            stored(store, f"memory-{rows}-actors{actors}",
                   lambda: {"rows": rows, "actors": actors, **watched(job(model, corpus, work, actors)[0], env)})


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

    def run(actors: int) -> dict:
        command, out = job(model, corpus, work, actors)
        result = {"rows": rows, "actors": actors, **watched(command, env, every=10)}
        phases = json.loads((out / "results.json").read_text())["phases"]
        return {**result, "phases": {p["phase"]: p["seconds"] for p in phases}}

    # The bare loop before and after the jobs: the two bound how much the machine's speed drifted meanwhile.
    stored(store, f"throughput-{rows}-bare", bare)
    for actors in (0, 1):
        stored(store, f"throughput-{rows}-actors{actors}", lambda: run(actors))
    stored(store, f"throughput-{rows}-bare-after", bare)


def quarters(timeline: list) -> str:
    """The PSS of every process a quarter, half, three quarters of the way through a run, and at its end: whether
    memory climbs with the rows read or levels off."""
    return ", ".join(f"{timeline[min(len(timeline) - 1, round(q * (len(timeline) - 1)))][1]:.0f}"
                     for q in (0.25, 0.5, 0.75, 1.0)) if timeline else "–"


def report(store: Path, output: Path) -> None:
    results = {p.stem: json.loads(p.read_text()) for p in sorted(store.glob("*.json"))}
    mem = sorted((r for k, r in results.items() if k.startswith("memory-")), key=lambda r: (r["actors"], r["rows"]))
    load = lambda r: f"{r['load_1min_start']:.1f}-{r['load_1min_end']:.1f}"  # noqa: E731
    text = ["# Predict on corpora of any size (issue 72)", "", "```",
            *(f"python benchmarks/predict_scale.py {part}" for part in ("memory", "throughput", "report")), "```", "",
            "Each row names the CPU and the 1-minute load of its run (other work on the machine slows a run; it does "
            "not change its memory).", "", METHOD]
    if mem:
        text += ["", "## Memory against rows", "", markdown_table([
            {"rows": f"{r['rows']:,}", "labelling": f"{r['actors']} actor" if r["actors"] else "in the driver",
             "driver peak RSS (MB)": f"{r['driver_rss_mb']:.0f}",
             "peak USS, every process (MB)": f"{r['uss_sum_mb']:.0f}",
             "PSS at ¼, ½, ¾, last sample (MB)": quarters(r["pss_timeline_mb"]),
             "peak PSS, every process (MB)": f"{r['pss_sum_mb']:.0f}", "processes": r["processes"],
             "seconds": f"{r['seconds']:.0f}", "rows/s": f"{r['rows'] / r['seconds']:.0f}", "CPU": r["cpu"],
             "load": load(r)} for r in mem])]
    for actors in (0, 1):
        runs = {r["rows"]: r for r in mem if r["actors"] == actors}
        if 100_000 in runs and 1_000_000 in runs:
            ratio = lambda key: runs[1_000_000][key] / runs[100_000][key]  # noqa: E731
            text += ["", f"{'With one actor' if actors else 'In the driver'}: 1M rows against 100k, driver RSS "
                     f"×{ratio('driver_rss_mb'):.2f}, USS of every process ×{ratio('uss_sum_mb'):.2f}, PSS of every "
                     f"process ×{ratio('pss_sum_mb'):.2f}."]
    through = sorted(((k, r) for k, r in results.items() if k.startswith("throughput-")),
                     key=lambda item: ("-bare" not in item[0], item[0]))  # the bare loops first
    if through:
        bares = [r for k, r in through if "-bare" in k]
        bare_s = sum(r["seconds"] for r in bares) / len(bares)  # each job against the mean of the bare loops
        rows, fixed = [], []
        for k, r in through:
            if "-bare" in k:
                rows.append((f"bare loop{' (again, after the jobs)' if k.endswith('-after') else ''}: "
                             "Classifier.predict over every row, in process (model load apart)", r["seconds"], r))
                continue
            where = "1 actor" if r["actors"] else "in process"
            rows.append((f"jobs/predict.py, {where}: the whole command (Python, imports, Ray, the model, reading, "
                         "labelling, writing)", r["seconds"], r))
            rows.append((f"jobs/predict.py, {where}: after its start-up (phase 'label and write': reading, "
                         "checking, labelling, writing)", r["phases"]["label and write"], r))
            fixed.append(f"{where}: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in r["phases"].items()
                                                  if name != "label and write")
                         + f", and {r['seconds'] - sum(r['phases'].values()):.1f} s of Python start and imports")
        text += ["", f"## Rows/s against a bare loop: {bares[0]['rows']:,} SIB-200 sentences, e5, fp32", "",
                 "Run one after the other, alone on the machine: the bare loop, the job in process, the job with one "
                 "actor, the bare loop again. \"vs bare loop\" is the bare loops' mean time "
                 f"({bare_s:.1f} s) over the run's; the two bare loops differ by how much the machine's speed drifted "
                 "in between, and \"vs each bare loop\" is the run against each of them: the ratio lies between the "
                 "two where the drift is steady." + ("" if len(bares) > 1 else
                                                     " **Only the first bare loop is stored**: the ratios do not "
                                                     "bound that drift."), "",
                 markdown_table([{"run": run, "seconds": f"{seconds:.1f}",
                                  "rows/s": f"{bares[0]['rows'] / seconds:.1f}",
                                  "vs bare loop": f"{bare_s / seconds:.2f}",
                                  "vs each bare loop": "/".join(f"{b['seconds'] / seconds:.2f}" for b in bares),
                                  "CPU": r["cpu"], "load": load(r), "ended": r["date"],
                                  "memory sampled every": f"{r['sampled_every_s']:g} s" if "sampled_every_s" in r
                                  else "–"} for run, seconds, r in rows]),
                 "", "Fixed costs. The bare loop's model load, apart: "
                 + ", ".join(f"{r['model_load_s']:.1f} s" for r in bares) + ". The job's phases "
                 "(its results.json): " + "; ".join(fixed) + "."]
    print("\n".join(text))
    harness.write(output, "\n".join(text) + "\n")


def main() -> None:
    parser = harness.parser(__doc__, "predict_scale.md", data_dir=True)
    parser.add_argument("part", choices=("memory", "throughput", "report"))
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000],
                        help="memory: corpus sizes; throughput: the first of them caps the rows (default 20,000)")
    parser.add_argument("--actors", type=int, nargs="+", default=[0, 1],
                        help="memory: labelling actors (0: the driver)")
    parser.add_argument("--store", default=str(harness.REPO / "results" / "benchmarks" / "predict_scale"))
    args = parser.parse_args()
    store = Path(args.store)
    if args.part == "report":
        return report(store, args.out)
    os.environ["XLT_DATA_DIR"] = str(harness.data_root(args.data_dir))
    env = {**os.environ, "RAY_ADDRESS": "", "HF_HUB_OFFLINE": "1"}
    work = store / "work"
    work.mkdir(parents=True, exist_ok=True)
    (memory if args.part == "memory" else throughput)(args, store, work, env)


if __name__ == "__main__":
    main()
