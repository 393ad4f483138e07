"""The predict job on corpora of any size: memory against rows, and rows/s against a bare loop (issue 72).

    python benchmarks/predict_scale.py memory        # tiny:bert; 10k, 100k and 1M rows; in process and one actor
    python benchmarks/predict_scale.py throughput    # e5; 20,000 SIB-200 sentences; bare loop, job, job + actor
    python benchmarks/predict_scale.py backends      # e5 probe; SIB-200 test; PyTorch fp32/bf16, ONNX fp32/int8
    python benchmarks/predict_scale.py onnx-variants # the encoder alone: other ONNX graphs and batch sizes
    python benchmarks/predict_scale.py report        # benchmarks/predict_scale.md from the runs stored so far
    python benchmarks/predict_scale.py memory --rows 1000 2000 --store /tmp/ps    # a check that it runs

Each run is stored under ``--store`` when it ends and skipped when it is there, so a part resumes.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
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
    "again. The machine's speed drifts by 10-20 % over minutes: each job is set against the bare loops around it.\n\n"
    "Backends: the SIB-200 test sentences of every language (204 each), labelled by `jobs/predict.py` as a user runs it "
    "(a subprocess, in process, both cores, batches of 64) with an e5 probe (frozen bundled:multilingual-e5-small, "
    "normalised embeddings, a logistic regression fitted on English train with C chosen on English dev) exported with "
    "its ONNX files (`xlt.models.onnx_backbone.export_onnx`, what `jobs/export.py --onnx` writes), on each backend in "
    "turn, round after round: PyTorch fp32, PyTorch bf16 (where the CPU computes in it), ONNX fp32, ONNX int8. Rows/s "
    "of the phase 'label and write' (reading, labelling, writing; start-up apart), and each backend against PyTorch "
    "fp32 of its own round. Agreement, largest probability difference and accuracy from the first round's predictions.")
BACKENDS = (("PyTorch fp32", "torch", "fp32"), ("PyTorch bf16", "torch", "bf16"), ("ONNX fp32", "onnx", "fp32"),
            ("ONNX int8", "onnx-int8", "fp32"))


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


def job(model: Path, corpus: Path, rows: int, actors: int, work: Path, env: dict, every: float,
        sets: tuple[str, ...] = (), keep: bool = False) -> dict:
    """The predict job run as a user runs it (``sets``: more of its settings), watched every ``every`` s: its
    seconds, peaks (MiB) and phases; ``keep``: its predictions too (id -> label, probabilities)."""
    out = Path(tempfile.mkdtemp(prefix="predict-scale-", dir=work))
    sets = (f"model.path={model}", f"input.path={corpus}", "input.lang_field=lang", f"output.dir={out}",
            f"inference.num_actors={actors}", "inference.num_cpus=2", "inference.threads=2", *sets)
    watch = harness.watch_command([sys.executable, "jobs/predict.py", "--no-tracking",
                                   *(x for s in sets for x in ("--set", s))], env, every)
    phases = json.loads((out / "results.json").read_text())["phases"]
    kept = {}
    if keep:
        import pandas as pd

        frame = pd.read_parquet(out / "predictions")
        columns = [c for c in frame.columns if c.startswith("p_")]
        kept = {"labels": [c.removeprefix("p_") for c in columns], "predictions": {
            i: [label, [round(float(p), 7) for p in ps]]
            for i, label, ps in zip(frame["id"], frame["label"], frame[columns].to_numpy())}}
    shutil.rmtree(out)
    return {"rows": rows, "actors": actors, "seconds": watch.wall, "peak": watch.peak, "sampled_every_s": every,
            "pss_timeline_mb": watch.timeline[::max(1, len(watch.timeline) // 200)],
            "phases": {p["phase"]: p["seconds"] for p in phases}, **kept}


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


def probe_export(directory: Path, task) -> Path:
    """The e5 probe (``METHOD``) exported with its ONNX files to ``directory``."""
    import numpy as np

    from xlt.eval.adaptation import Probe, fit_probe
    from xlt.models import EncoderConfig, load_encoder
    from xlt.models.onnx_backbone import export_onnx

    if (directory / "onnx" / "model_qint8.onnx").is_file():
        return directory
    encoder = load_encoder(EncoderConfig(source="bundled:multilingual-e5-small"))

    def xy(split: str):
        examples = task.examples(split, task.source_lang)
        x = encoder.encode([ex.text for ex in examples], normalize=True)
        return x, np.array([task.labels.index(ex.label) for ex in examples])

    model = fit_probe(*xy("train"), *xy("dev"), c_values=(0.1, 1.0, 10.0, 100.0), max_iter=2000, seed=0)
    classifier = Probe(model, {}).classifier(encoder, task.labels, paired=False, normalize=True)
    classifier.save_pretrained(directory)
    export_onnx(classifier.encoder, directory)
    return directory


def backends(args, store: Path, work: Path, env: dict[str, str]) -> None:
    from xlt.hardware import precisions

    task = harness.sib200()
    rows = [{"id": f"{lang}:{i}", "text": ex.text, "lang": lang, "gold": ex.label} for lang in task.langs
            for i, ex in enumerate(task.examples("test", lang))]
    corpus = work / "sib200-test.jsonl"
    corpus.write_text("".join(json.dumps({k: r[k] for k in ("id", "text", "lang")}, ensure_ascii=False) + "\n"
                              for r in rows), encoding="utf-8")
    (work / "sib200-test-gold.json").write_text(json.dumps({r["id"]: r["gold"] for r in rows}), encoding="utf-8")
    model = probe_export(work / "e5-probe", task)
    arms = [arm for arm in BACKENDS if arm[2] != "bf16" or "bf16" in precisions("cpu")]
    for round_ in range(args.rounds):
        for name, backend, precision in arms:
            harness.stored(store / f"backends-{round_}-{backend}-{precision}.json", lambda: {
                "arm": name, "round": round_, **job(model, corpus, len(rows), 0, work, env, every=10, keep=round_ == 0,
                                                    sets=(f"model.backend={backend}", f"inference.precision={precision}",
                                                          "inference.encode_batch_size=64"))})


def onnx_variants(args, store: Path, work: Path, env: dict[str, str]) -> None:
    """Whether another ONNX graph or batch size reaches ONNX fp32 >= 1.5x PyTorch fp32: the encoder alone over the
    same sentences, PyTorch against the exported graph and onnxruntime's transformer optimizer's (fused attention,
    SkipLayerNorm, BiasGelu), in batches of 32 and 64, round after round."""
    import torch

    from xlt.models import EncoderConfig, load_encoder
    from xlt.models.onnx_backbone import OnnxBackbone

    task = harness.sib200()
    texts = [ex.text for lang in task.langs for ex in task.examples("test", lang)]
    model = probe_export(work / "e5-probe", task)
    graphs = {"onnx": model / "onnx" / "model.onnx", "onnx, transformer-optimized": work / "model_optimized.onnx"}
    if not graphs["onnx, transformer-optimized"].is_file():
        from onnxruntime.transformers.optimizer import optimize_model

        config = load_encoder(EncoderConfig(source=f"local:{model}")).backbone.config
        optimize_model(str(graphs["onnx"]), model_type="bert", num_heads=config.num_attention_heads,
                       hidden_size=config.hidden_size).save_model_to_file(str(graphs["onnx, transformer-optimized"]))
    torch.set_num_threads(2)
    encoder = load_encoder(EncoderConfig(source=f"local:{model}"))
    backbones = {"PyTorch fp32": encoder.backbone,
                 **{name: OnnxBackbone(path, encoder.backbone.config, threads=2) for name, path in graphs.items()}}
    for round_ in range(args.rounds):
        for batch in (32, 64):
            for name, backbone in backbones.items():
                def run() -> dict:
                    encoder.backbone = backbone
                    encoder.encode(texts[:64], batch_size=batch)  # warm
                    start = time.perf_counter()
                    encoder.encode(texts, batch_size=batch)
                    return {"variant": name, "batch": batch, "round": round_, "rows": len(texts),
                            "seconds": time.perf_counter() - start}
                harness.stored(store / f"variants-{round_}-{batch}-{name.replace(' ', '').replace(',', '-')}.json", run)


def variants_report(results: dict[str, dict]) -> list[str]:
    runs = [r for k, r in results.items() if k.startswith("variants-")]
    if not runs:
        return []
    rate = {(r["round"], r["batch"], r["variant"]): r["rows"] / r["seconds"] for r in runs}
    table = []
    for batch in sorted({r["batch"] for r in runs}):
        for variant in dict.fromkeys(r["variant"] for r in runs):
            rounds = sorted(k for k, b, v in rate if (b, v) == (batch, variant))
            table.append({"encoder batch": batch, "backbone": variant, "rounds": len(rounds),
                          "rows/s": harness.mean_sd([rate[(k, batch, variant)] for k in rounds], 1),
                          "vs PyTorch fp32, same round and batch": harness.mean_sd(
                              [rate[(k, batch, variant)] / rate[(k, batch, "PyTorch fp32")] for k in rounds], 2),
                          "CPU": runs[0]["machine"].split(",")[0]})
    return ["", f"### Other graphs and batches: the encoder alone, {runs[0]['rows']:,} sentences (`python "
            "benchmarks/predict_scale.py onnx-variants`)", "", markdown_table(table)]


def backends_report(results: dict[str, dict], gold: dict[str, str]) -> list[str]:
    import numpy as np

    runs = [r for k, r in results.items() if k.startswith("backends-")]
    if not runs:
        return []
    rate = {(r["round"], r["arm"]): r["rows"] / r["phases"]["label and write"] for r in runs}
    arms = [name for name, *_ in BACKENDS if any(r["arm"] == name for r in runs)]
    first = {r["arm"]: r for r in runs if r["round"] == 0}
    reference = first["PyTorch fp32"]["predictions"]
    table, accuracy = [], []
    for arm in arms:
        rounds = sorted(k for k, a in rate if a == arm)
        ratios = [rate[(k, arm)] / rate[(k, "PyTorch fp32")] for k in rounds if (k, "PyTorch fp32") in rate]
        predicted = first[arm]["predictions"]
        agree = np.mean([predicted[i][0] == reference[i][0] for i in reference])
        delta = max(np.abs(np.subtract(predicted[i][1], reference[i][1])).max() for i in reference)
        machine = {r["machine"].split(",")[0] for r in runs if r["arm"] == arm}
        table.append({"backend": arm, "rounds": len(rounds),
                      "rows/s (label and write)": harness.mean_sd([rate[(k, arm)] for k in rounds], 1),
                      "vs PyTorch fp32, same round": harness.mean_sd(ratios, 2),
                      "labels as PyTorch fp32": f"{agree:.2%}", "largest |Δp| vs PyTorch fp32": f"{delta:.1e}",
                      "CPU": ", ".join(sorted(machine))})
        by_lang: dict[str, list[bool]] = {}
        for i, (label, _) in predicted.items():
            by_lang.setdefault(i.split(":")[0], []).append(label == gold[i])
        accuracy.append({"backend": arm, **{lang: f"{np.mean(v):.3f}" for lang, v in sorted(by_lang.items())},
                         "mean": f"{np.mean([np.mean(v) for v in by_lang.values()]):.3f}"})
    onnx = [row for row in table if row["backend"] == "ONNX fp32"]
    goal = (f"ONNX fp32 against PyTorch fp32: {onnx[0]['vs PyTorch fp32, same round']}× "
            f"({'meets' if float(onnx[0]['vs PyTorch fp32, same round'].split()[0]) >= 1.5 else 'short of'} the "
            "issue's goal of 1.5×). " if onnx else "")
    dates = sorted(r["date"] for r in runs)
    return ["", f"## Backends: {runs[0]['rows']:,} SIB-200 test sentences, e5 probe, in process", "",
            f"{len(runs)} runs from {dates[0]} to {dates[-1]}; the first: {runs[0]['machine']}.", "",
            markdown_table(table), "", goal + "Accuracy on SIB-200 test, by language (the first round's predictions):",
            "", markdown_table(accuracy)]


def quarters(timeline: list) -> str:
    """PSS a quarter, half, three quarters through a run and at its end: does it climb with the rows read?"""
    last = len(timeline) - 1
    return ", ".join(f"{timeline[round(q * last)][1]:.0f}" for q in (0.25, 0.5, 0.75, 1.0)) if timeline else "–"


def report(store: Path, output: Path) -> None:
    results = {p.stem: json.loads(p.read_text()) for p in sorted(store.glob("*.json"), key=lambda p: p.stem)}
    mem = sorted((r for k, r in results.items() if k.startswith("memory-")), key=lambda r: (r["actors"], r["rows"]))
    text = ["# Predict on corpora of any size (issue 72)", "", "```",
            *(f"python benchmarks/predict_scale.py {part}"
              for part in ("memory", "throughput", "backends", "onnx-variants", "report")),
            "```", "",
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
    gold = store / "work" / "sib200-test-gold.json"
    text += backends_report(results, json.loads(gold.read_text()) if gold.is_file() else {}) + variants_report(results)
    harness.write(output, kept_sections("\n".join(text) + "\n", output.read_text() if output.is_file() else ""),
                  show=True)


def kept_sections(generated: str, existing: str) -> str:
    """``generated`` with each ``## `` section of ``existing`` whose part has no runs in this store (each part may
    run on another machine, another day): the report is the union of the parts, each from the runs that made it."""
    def sections(markdown: str) -> tuple[str, dict[str, str]]:
        head, *parts = re.split(r"(?m)^(?=## )", markdown)
        return head, {part.split()[1].rstrip(":"): part.rstrip("\n") + "\n" for part in parts}

    head, made = sections(generated)
    _, before = sections(existing)
    order = ("Memory", "Rows/s", "Backends")
    return head.rstrip("\n") + "\n\n" + "\n".join(made.get(key) or before[key] for key in order
                                                    if key in made or key in before)


def main() -> None:
    parser = harness.parser(__doc__, "predict_scale.md", data_dir=True)
    parser.add_argument("part", choices=("memory", "throughput", "backends", "onnx-variants", "report"))
    parser.add_argument("--rounds", type=int, default=3, help="backends: rounds of every backend in turn")
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
    {"memory": memory, "throughput": throughput, "backends": backends,
     "onnx-variants": onnx_variants}[args.part](args, args.store, work, env)


if __name__ == "__main__":
    main()
