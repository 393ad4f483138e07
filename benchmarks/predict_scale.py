"""The predict job on corpora of any size: memory against rows, and rows/s against a bare loop (issue 72).

    python benchmarks/predict_scale.py memory        # tiny:bert; 10k, 100k and 1M rows; in process and one actor
    python benchmarks/predict_scale.py throughput    # e5; 20,000 SIB-200 sentences; bare loop, job, job + actor
    python benchmarks/predict_scale.py report        # benchmarks/predict_scale.md from the parts stored so far
    python benchmarks/predict_scale.py memory --rows 1000 2000 --store /tmp/ps    # a check that it runs

Each run is stored when it ends (``--store``, default results/benchmarks/predict_scale/) and skipped when it is
there, so a part resumes; ``report`` writes the markdown from what is stored, with each run's CPU and load.

- **memory**: synthetic JSON Lines corpora (20 words a row, ~125 characters, three languages in the ``lang`` field,
  no id: the job gives ``<file>:<line>``), labelled by ``jobs/predict.py`` as a user runs it (a subprocess, the
  defaults: shards of 10,000 rows, each labelled whole) with a tiny:bert classifier, so that the reading, checking,
  shards and writing are what grows, not the model's time. Sampled every 0.25 s: the driver's RSS, and the sum of the
  unique memory (USS) of the driver and every process under it (Ray's GCS, raylet and workers, the labelling actor):
  the object store is shared memory, which USS leaves out. The sum of PSS (each shared page split between the
  processes mapping it) is given beside it.
- **throughput**: 20,000 rows, every SIB-200 sentence offline (train, dev and test of each language) twice over, with
  bundled:multilingual-e5-small under a fresh head: a bare ``Classifier.predict`` loop over all of them in this
  process (sorted by length as a whole), the job in process (``inference.num_actors: 0``), the job with one actor
  holding both cores (its start-up and model load counted, and also stated apart), and the bare loop again: the
  machine's speed drifts by 10-20 % over minutes (1,024 of these rows took 41-54 s in one process, four runs in a
  row), so each job is set against the mean of the bare loops before and after it. fp32, batches of 64 texts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORDS = ("the of and to in is was for on that with as by at from his her an which they were this are be has had "
         "city river school music team game world year people time family music science film war party church "
         "north south water light house market station island language history king queen village road").split()
LANGS = ("en", "de", "fr")


def get_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=("memory", "throughput", "report"))
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000],
                        help="memory: corpus sizes; throughput: the first of them caps the rows (default 20,000)")
    parser.add_argument("--actors", type=int, nargs="+", default=[0, 1], help="memory: labelling actors (0: the driver)")
    parser.add_argument("--store", default=str(REPO / "results" / "benchmarks" / "predict_scale"))
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "predict_scale.md"))
    return parser.parse_args()


def synthetic_corpus(path: Path, rows: int) -> Path:
    """``rows`` JSON Lines of 20 seeded words and a language."""
    if path.is_file():
        return path
    rng = random.Random(0)
    with open(path.with_suffix(".tmp"), "w", encoding="utf-8") as sink:
        for i in range(rows):
            sink.write(json.dumps({"text": " ".join(rng.choices(WORDS, k=20)), "lang": LANGS[i % 3]}) + "\n")
    os.replace(path.with_suffix(".tmp"), path)
    return path


def checkpoint(directory: Path, source: str) -> Path:
    """A classifier over SIB-200's labels with a fresh head on ``source``, as a fine-tuning checkpoint."""
    import torch

    from xlt.engine import write_state
    from xlt.train import load_finetune_config, prepare
    from xlt.train.workload import finetune_training

    if (directory / "model.pt").is_file():
        return directory
    torch.manual_seed(0)
    cfg = prepare(load_finetune_config(REPO / "configs" / "finetune_sib200.yaml",
                                       ["data.max_examples=16", f"model.source={source}"])).config
    return write_state(directory, finetune_training(cfg, steps_per_epoch=1), cfg)


def watched(command: list[str], env: dict[str, str], every: float = 0.25) -> dict[str, float]:
    """Run ``command``; its wall time, the driver's peak RSS and the peak sum of USS over it and its descendants,
    sampled every ``every`` seconds (each sample reads every process's page map: over Ray's eleven processes at
    four samples a second, most of a core, so the throughput runs sample every 10 s)."""
    import psutil

    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peaks = {"driver_rss_mb": 0.0, "uss_sum_mb": 0.0, "pss_sum_mb": 0.0, "processes": 0}
    timeline: list[tuple[float, float]] = []  # (seconds, USS of every process, MB): whether it climbs or levels
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
    reader.start()
    parent = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            family = [parent, *parent.children(recursive=True)]
            rss = parent.memory_info().rss
            uss = pss = 0
            for p in family:
                try:
                    full = p.memory_full_info()
                    uss, pss = uss + full.uss, pss + full.pss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass
        except psutil.NoSuchProcess:
            break
        peaks["driver_rss_mb"] = max(peaks["driver_rss_mb"], rss / 2**20)
        peaks["uss_sum_mb"] = max(peaks["uss_sum_mb"], uss / 2**20)
        peaks["pss_sum_mb"] = max(peaks["pss_sum_mb"], pss / 2**20)
        peaks["processes"] = max(peaks["processes"], len(family))
        timeline.append((round(time.perf_counter() - start, 1), round(uss / 2**20, 1)))
        time.sleep(every)
    reader.join()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{''.join(output)[-3000:]}")
    return {**peaks, "seconds": time.perf_counter() - start, "sampled_every_s": every,
            "uss_timeline_mb": timeline[::max(1, len(timeline) // 200)]}


def stored(store: Path, name: str, run) -> dict:
    """The stored result ``name``, or ``run()``'s, stored with the CPU, the load and the time."""
    from xlt.hardware import cpu_model

    path = store / f"{name}.json"
    if path.is_file():
        return json.loads(path.read_text())
    load = os.getloadavg()[0]
    result = {**run(), "cpu": cpu_model(), "load_1min_start": load, "load_1min_end": os.getloadavg()[0],
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv)}
    store.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))
    print(name, json.dumps(result), flush=True)
    return result


def job(model: Path, corpus: Path, out: Path, actors: int) -> list[str]:
    return [sys.executable, "jobs/predict.py", "--no-tracking", "--set", f"model.path={model}",
            "--set", f"input.path={corpus}", "--set", "input.lang_field=lang", "--set", f"output.dir={out}",
            "--set", f"inference.num_actors={actors}", "--set", "inference.num_cpus=2", "--set", "inference.threads=2"]


def memory(args: argparse.Namespace, store: Path, work: Path) -> None:
    env = {**os.environ, "RAY_ADDRESS": "", "HF_HUB_OFFLINE": "1"}
    model = checkpoint(work / "tiny-model", "tiny:bert")
    for rows in args.rows:
        corpus = synthetic_corpus(work / f"corpus-{rows}.jsonl", rows)
        for actors in args.actors:
            def run() -> dict:
                out = Path(tempfile.mkdtemp(prefix="predict-scale-", dir=work))
                return {"rows": rows, "actors": actors, **watched(job(model, corpus, out, actors), env)}
            stored(store, f"memory-{rows}-actors{actors}", run)


def sib200_texts(limit: int) -> list[dict[str, str]]:
    """Every SIB-200 sentence offline (train, dev, test of each language), repeated up to ``limit`` rows."""
    from xlt.config import from_dict, read_yaml
    from xlt.tasks import TaskConfig, load_task

    task = load_task(from_dict(TaskConfig, read_yaml(REPO / "configs" / "tasks" / "sib200.yaml"), prefix="task."))
    rows = [{"text": ex.text, "lang": lang} for lang in task.langs for split in ("train", "dev", "test")
            for ex in task.examples(split, lang)]
    return [rows[i % len(rows)] for i in range(limit)]


def throughput(args: argparse.Namespace, store: Path, work: Path) -> None:
    env = {**os.environ, "RAY_ADDRESS": "", "HF_HUB_OFFLINE": "1"}
    rows = min(args.rows) if args.rows != [10_000, 100_000, 1_000_000] else 20_000
    model = checkpoint(work / "e5-model", "bundled:multilingual-e5-small")
    items = sib200_texts(rows)
    corpus = work / f"sib200-{rows}.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), encoding="utf-8")

    def bare() -> dict:
        from xlt.train import load_classifier

        start = time.perf_counter()
        classifier = load_classifier(model)
        loaded = time.perf_counter()
        classifier.predict([r["text"] for r in items], batch_size=64)
        return {"rows": rows, "seconds": time.perf_counter() - loaded, "model_load_s": loaded - start}

    # The bare loop before and after the jobs: the two bound how much the machine's speed drifted meanwhile.
    stored(store, f"throughput-{rows}-bare", bare)
    for actors in (0, 1):
        def run() -> dict:
            out = Path(tempfile.mkdtemp(prefix="predict-scale-", dir=work))
            result = {"rows": rows, "actors": actors, **watched(job(model, corpus, out, actors), env, every=10)}
            phases = {p["phase"]: p["seconds"] for p in json.loads((out / "results.json").read_text())["phases"]}
            return {**result, "phases": phases}
        stored(store, f"throughput-{rows}-actors{actors}", run)
    stored(store, f"throughput-{rows}-bare-after", bare)


def quarters(timeline: list | None) -> str:
    """The USS of every process a quarter, half, three quarters of the way through a run, and at its end: whether
    memory climbs with the rows read or levels off (runs stored before the timeline was kept: –)."""
    if not timeline:
        return "–"
    return ", ".join(f"{timeline[min(len(timeline) - 1, round(q * (len(timeline) - 1)))][1]:.0f}"
                     for q in (0.25, 0.5, 0.75, 1.0))


def report(store: Path, output: Path) -> None:
    from xlt.report import markdown_table

    results = {p.stem: json.loads(p.read_text()) for p in sorted(store.glob("*.json"))}
    mem = sorted((r for k, r in results.items() if k.startswith("memory-")), key=lambda r: (r["actors"], r["rows"]))
    text = ["# Predict on corpora of any size (issue 72)", "",
            "```", "python benchmarks/predict_scale.py memory", "python benchmarks/predict_scale.py throughput",
            "python benchmarks/predict_scale.py report", "```", "",
            "Each row names the CPU and the 1-minute load of its run (other work on the machine slows a run; it does "
            "not change its memory). Method: the script's docstring."]
    if mem:
        text += ["", "## Memory against rows", "", markdown_table([{"rows": f"{r['rows']:,}", "labelling": "in the driver" if not r["actors"] else
                                 f"{r['actors']} actor", "driver peak RSS (MB)": f"{r['driver_rss_mb']:.0f}",
                                 "peak USS, every process (MB)": f"{r['uss_sum_mb']:.0f}",
                                 "USS at ¼, ½, ¾, last sample, as it exits (MB)": quarters(r.get("uss_timeline_mb")),
                                 "peak PSS, every process (MB)": f"{r['pss_sum_mb']:.0f}" if "pss_sum_mb" in r else "–",
                                 "processes": r["processes"], "seconds": f"{r['seconds']:.0f}",
                                 "rows/s": f"{r['rows'] / r['seconds']:.0f}", "CPU": r["cpu"],
                                 "load": f"{r['load_1min_start']:.1f}-{r['load_1min_end']:.1f}"} for r in mem])]
    for actors in (0, 1):
        runs = {r["rows"]: r for r in mem if r["actors"] == actors}
        if 100_000 in runs and 1_000_000 in runs:
            text += ["", f"{'In the driver' if not actors else 'With one actor'}: 1M rows against 100k, driver RSS "
                     f"×{runs[1_000_000]['driver_rss_mb'] / runs[100_000]['driver_rss_mb']:.2f}, USS of every process "
                     f"×{runs[1_000_000]['uss_sum_mb'] / runs[100_000]['uss_sum_mb']:.2f}"
                     + (f", PSS of every process ×{runs[1_000_000]['pss_sum_mb'] / runs[100_000]['pss_sum_mb']:.2f}"
                        if all("pss_sum_mb" in runs[n] for n in (100_000, 1_000_000)) else "") + "."]
    through = {k: r for k, r in results.items() if k.startswith("throughput-")}
    if through:
        bares = [r for k, r in sorted(through.items()) if "-bare" in k]
        bare_s = sum(r["seconds"] for r in bares) / len(bares)  # each job against the mean of the bare loops
        rows = [{"run": f"bare loop{' (again, after the jobs)' if k.endswith('-after') else ''}: Classifier.predict "
                        "over every row, in process (model load apart)", "seconds": r["seconds"], "CPU": r["cpu"],
                 "load": r} for k, r in sorted(through.items()) if "-bare" in k]
        fixed = []
        for k, r in sorted(through.items()):
            if "-bare" not in k:
                where = "in process" if not r["actors"] else "1 actor"
                rows.append({"run": f"jobs/predict.py, {where}: the whole command (Python, imports, Ray, the model, "
                                    "reading, labelling, writing)", "seconds": r["seconds"], "CPU": r["cpu"], "load": r})
                rows.append({"run": f"jobs/predict.py, {where}: after its start-up (phase 'label and write': reading, "
                                    "checking, labelling, writing)", "seconds": r["phases"]["label and write"],
                             "CPU": r["cpu"], "load": r})
                fixed.append(f"{where}: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in r["phases"].items()
                                                      if name != "label and write")
                             + f", and {r['seconds'] - sum(r['phases'].values()):.1f} s of Python start and imports")
        text += ["", f"## Rows/s against a bare loop: {bares[0]['rows']:,} SIB-200 sentences, e5, fp32", "",
                 "Run one after the other, alone on the machine: the bare loop, the job in process, the job with one "
                 "actor, the bare loop again. \"vs bare loop\" is the bare loops' mean time "
                 f"({bare_s:.1f} s) over the run's; the two bare loops differ by how much the machine's speed drifted "
                 "in between, and \"vs each bare loop\" is the run against each of them: the ratio lies between the "
                 "two where the drift is steady." + ("" if len(bares) > 1 else " **Only the first bare loop is stored**: "
                                                     "the ratios do not bound that drift."), "",
                 markdown_table([{"run": r["run"], "seconds": f"{r['seconds']:.1f}",
                                  "rows/s": f"{bares[0]['rows'] / r['seconds']:.1f}",
                                  "vs bare loop": f"{bare_s / r['seconds']:.2f}",
                                  "vs each bare loop": "/".join(f"{b['seconds'] / r['seconds']:.2f}" for b in bares),
                                  "CPU": r["CPU"],
                                  "load": f"{r['load']['load_1min_start']:.1f}-{r['load']['load_1min_end']:.1f}",
                                  "ended": r["load"]["date"],
                                  "memory sampled every": f"{r['load']['sampled_every_s']:g} s"
                                  if "sampled_every_s" in r["load"] else "–"} for r in rows]),
                 "", "Fixed costs. The bare loop's model load, apart: "
                 + ", ".join(f"{r['model_load_s']:.1f} s" for r in bares) + ". The job's phases "
                 "(its results.json): " + "; ".join(fixed) + "."]
    output.write_text("\n".join(text) + "\n", encoding="utf-8")
    print("\n".join(text))


def main() -> None:
    args = get_args()
    store = Path(args.store)
    if args.part == "report":
        report(store, Path(args.output))
        return
    os.environ.setdefault("XLT_DATA_DIR", str(REPO.parent / "shared" / "data"))
    work = store / "work"
    work.mkdir(parents=True, exist_ok=True)
    (memory if args.part == "memory" else throughput)(args, store, work)


if __name__ == "__main__":
    main()
