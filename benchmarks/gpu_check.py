"""One command that proves the platform on a CUDA GPU (issue 50), and writes ``benchmarks/gpu.md``.

    python benchmarks/gpu_check.py                    # on a GPU node, in the project's venv
    python benchmarks/gpu_check.py --rehearse         # on a CPU: the same steps, tiny, nothing installed

1. Installs the ``gpu`` extra's faiss (``faiss-gpu-cu12``, pinned in pyproject.toml) into this
   interpreter's environment, after the project, as cluster.yaml's nodes do, unless faiss already
   has GPU support.
2. Runs every job's ``--smoke`` with ``use_gpu`` and bf16 (fp16 where the GPU has no bf16): fine-tuning,
   pretraining, co-training (learners in process on the GPU, labelling on it), evaluation, a sweep.
3. Measures, on the GPU: the e5 fine-tuning step (``configs/finetune_sib200.yaml``, SIB-200 English
   rows) in steps/s at fp32 and at bf16; pseudo-labelling SIB-200's texts with e5 in rows/s at fp32
   and bf16 (token-budgeted batches); exact retrieval (``xlt.eval.retrieval.knn``'s index) on
   faiss-gpu against faiss-cpu, with the share of identical neighbours.
4. Writes ``--output`` (``benchmarks/gpu.md``): the GPU, the versions, each smoke's outcome and time, the
   speeds, and this command.

Without a visible CUDA GPU it says so and exits 0 (``tests/benchmarks/test_gpu_check.py``).
``--rehearse`` runs steps 2-4 on the CPU at a tiny size (fp32, no install) so that the script is known
to work before the short time on a GPU machine is spent on it; its report says it is a rehearsal.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"


def get_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "gpu.md"))
    parser.add_argument("--rehearse", action="store_true", help="on the CPU, tiny, nothing installed")
    parser.add_argument("--steps", type=int, default=50, help="timed fine-tuning steps per precision")
    parser.add_argument("--rows", type=int, default=0, help="texts to pseudo-label (0: every SIB-200 text)")
    parser.add_argument("--keys", type=int, default=200_000, help="retrieval keys (random unit vectors)")
    return parser.parse_args()


def faiss_gpu_requirement() -> str:
    (requirement,) = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["gpu"]
    return requirement


def install_faiss_gpu() -> str:
    """faiss with GPU support in this environment: already there, or the gpu extra's pin installed
    (in a child process: this one has not imported faiss yet)."""
    probe = [sys.executable, "-c", "import faiss, sys; sys.exit(0 if hasattr(faiss, 'StandardGpuResources') else 1)"]
    if subprocess.run(probe, capture_output=True).returncode == 0:
        return "faiss-gpu already installed"
    requirement = faiss_gpu_requirement()
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", requirement], check=True)
    return f"installed {requirement}"


def smoke_commands(out: Path, precision: str, use_gpu: bool = True) -> dict[str, list[str]]:
    """Every job's ``--smoke`` on the GPU (``use_gpu``) at ``precision``, each writing under ``out``."""
    python, on = [sys.executable], str(use_gpu).lower()
    gpu = ["--set", f"scaling.use_gpu={on}", "--set", f"optim.precision={precision}"]
    learners = [arg for name in ("lm", "emb") for arg in ("--set", f"{name}.scaling.use_gpu={on}",
                                                         "--set", f"{name}.optim.precision={precision}")]
    return {
        "finetune": [*python, "jobs/finetune.py", "--smoke", *gpu, "--set", f"output.dir={out / 'finetune'}"],
        "pretrain": [*python, "jobs/pretrain.py", "--smoke", *gpu, "--set", f"output.dir={out / 'pretrain'}"],
        "cotrain": [*python, "jobs/cotrain.py", "--smoke", *learners, "--set", f"inference.precision={precision}",
                    "--set", f"output.dir={out / 'cotrain'}"],
        "evaluate": [*python, "jobs/evaluate.py", "--smoke", "--set", f"output.dir={out / 'evaluate'}"],
        "sweep": [*python, "jobs/sweep.py", "--smoke", *gpu, "--storage", str(out / "sweep")],
    }


def run_smokes(commands: dict[str, list[str]]) -> list[dict]:
    rows = []
    env = {**os.environ, "RAY_ADDRESS": "", "HF_HUB_OFFLINE": "1"}
    for job, command in commands.items():
        start = time.monotonic()
        proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - start
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or [""])[-1]
        rows.append({"job": job, "exit": proc.returncode, "seconds": f"{seconds:.0f}",
                     "last line": "" if proc.returncode == 0 else last[:160]})
        print(f"{job} --smoke: exit {proc.returncode} in {seconds:.0f} s", flush=True)
    return rows


def finetune_steps_per_s(device: str, precision: str, steps: int) -> float:
    """Optimizer steps per second of the SIB-200 e5 fine-tuning step, on ``device``, in process."""
    import torch

    from xlt.train import load_finetune_config, prepare
    from xlt.train.batches import batches_of, flatten_batch
    from xlt.train.workload import finetune_training, train_step

    prepared = prepare(load_finetune_config(CONFIGS / "finetune_sib200.yaml", [f"optim.precision={precision}"]))
    cfg = prepared.config
    training = finetune_training(prepared.config, steps_per_epoch=steps + 5, prepare=lambda m: m.to(device))
    label_index = {label: i for i, label in enumerate(prepared.config.task.labels)}
    batches = [flatten_batch(b, label_index) for b in batches_of(prepared.train, cfg.optim.batch_size)]
    for b in batches[:5]:  # warm-up: kernels, allocator
        train_step(training, b)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for i in range(steps):
        train_step(training, batches[i % len(batches)])
    sync()
    return steps / (time.perf_counter() - start)


def pseudo_label_rows_per_s(precision: str, rows: int) -> tuple[float, int]:
    """Rows per second of ``PseudoLabelUDF`` (e5, a fresh head) over SIB-200 texts on this process's
    device, in token-budgeted batches; and the rows labelled."""
    import pyarrow as pa

    from xlt.inference import ClassifierSpec, InferenceSettings, PseudoLabelUDF
    from xlt.tasks import load_task
    from xlt.train import load_finetune_config

    cfg = load_finetune_config(CONFIGS / "finetune_sib200.yaml")
    task = load_task(cfg.task, cfg.data.data_dir)
    texts = [r["text"] for split in ("train", "dev", "test") for r in task.rows(split, task.langs)]
    texts = texts[:rows] if rows else texts
    udf = PseudoLabelUDF(ClassifierSpec(model=cfg.model, labels=task.labels),
                         InferenceSettings(encode_batch_size=512, tokens_per_batch=32_768, precision=precision))
    table = pa.table({"text": texts})
    udf(table.slice(0, 64))  # warm-up
    start = time.perf_counter()
    udf(table)
    return len(texts) / (time.perf_counter() - start), len(texts)


def retrieval_seconds(keys: int, queries: int, dim: int = 384, k: int = 4) -> dict:
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
        timings[name] = time.perf_counter() - start
    return {"keys": keys, "queries": queries, "gpu index": bool(faiss_gpus(faiss)), **timings,
            "same neighbours": float((found["faiss-cpu s"] == found["knn's index s"]).mean())}


def report(args: argparse.Namespace, device: str, installed: str, precision: str, smokes: list[dict],
           speeds: list[dict], retrieval: dict) -> str:
    import torch

    from xlt.hardware import cpu_model
    from xlt.report import command_line, markdown_table

    gpu = torch.cuda.get_device_name(0) if device == "cuda" else "none (rehearsal on the CPU)"
    lines = [
        "# The GPU check (issue 50)", "",
        f"Command: `{command_line()}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. GPU: {gpu}. CPU: {cpu_model()}. "
        f"torch {torch.__version__} (CUDA {torch.version.cuda or 'none'}). faiss: {installed}.", "",
    ]
    if args.rehearse:
        lines += ["**A rehearsal on the CPU**: tiny sizes, no GPU, use_gpu off. It shows the script runs, not what a "
                  "GPU does.", ""]
    lines += [f"## Every job's --smoke with {'use_gpu and ' if device == 'cuda' else ''}{precision}", "", markdown_table(smokes), "",
              "## Speeds", "", markdown_table(speeds), "",
              "## Retrieval: faiss-cpu against the index knn uses", "",
              markdown_table([{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in retrieval.items()}]), ""]
    return "\n".join(lines)


def main() -> None:
    args = get_args()
    import torch

    if not torch.cuda.is_available() and not args.rehearse:
        print(f"gpu_check: no CUDA GPU visible (torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}); "
              "nothing to check here. Run it on a GPU node (or --rehearse on this CPU).")
        return
    from xlt.hardware import precisions

    device = "cpu" if args.rehearse else "cuda"
    installed = "not installed (rehearsal)" if args.rehearse else install_faiss_gpu()
    # bf16 where the device has it; a GPU before Ampere trains in fp16, a CPU without bf16 in fp32.
    half = next(p for p in ("bf16", "fp16" if device == "cuda" else "fp32", "fp32") if p in precisions(device))
    steps = 3 if args.rehearse else args.steps
    rows = args.rows or (200 if args.rehearse else 0)
    keys = 5_000 if args.rehearse else args.keys

    with tempfile.TemporaryDirectory(prefix="xlt-gpu-check-") as out:
        smokes = run_smokes(smoke_commands(Path(out), half, use_gpu=device == "cuda"))
    speeds = []
    for precision in dict.fromkeys(("fp32", half)):
        per_s = finetune_steps_per_s(device, precision, steps)
        speeds.append({"measure": "e5 fine-tuning step (SIB-200, batch 16)", "precision": precision,
                       "per second": f"{per_s:.2f} steps"})
        print(f"fine-tuning at {precision}: {per_s:.2f} steps/s", flush=True)
    for precision in dict.fromkeys(("fp32", half)):
        per_s, n = pseudo_label_rows_per_s(precision, rows)
        speeds.append({"measure": f"e5 pseudo-labelling ({n} SIB-200 texts, 32k-token batches)", "precision": precision,
                       "per second": f"{per_s:.0f} rows"})
        print(f"pseudo-labelling at {precision}: {per_s:.0f} rows/s", flush=True)
    retrieval = retrieval_seconds(keys, queries=min(10_000, keys // 10))
    print(f"retrieval: {retrieval}", flush=True)
    text = report(args, device, installed, half, smokes, speeds, retrieval)
    Path(args.output).write_text(text, encoding="utf-8")
    print(text)
    sys.exit(0 if all(s["exit"] == 0 for s in smokes) else 1)


if __name__ == "__main__":
    main()
