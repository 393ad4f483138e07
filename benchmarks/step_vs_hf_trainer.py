"""xlt's fine-tuning against Hugging Face's ``Trainer`` on the same work, each run as a user runs it: its own
command, in its own process, the two alternating.

    python benchmarks/step_vs_hf_trainer.py             # 3 runs of each, fp32 and bf16 -> step_vs_hf_trainer.md
    python benchmarks/step_vs_hf_trainer.py --runs 1 --precisions fp32 --store /tmp/s   # a look
    python benchmarks/step_vs_hf_trainer.py profile     # one run of each under py-spy: where the loop's time goes
    python benchmarks/step_vs_hf_trainer.py models      # the two models alone, in one process
    python benchmarks/step_vs_hf_trainer.py report      # the .md from the runs stored so far
    python benchmarks/step_vs_hf_trainer.py hf --precision fp32 --result r.json        # the HF arm alone

The work: ``bundled:multilingual-e5-small`` on SIB-200's 701 English training rows (``query: `` prefix), batch 16,
max length 128, word embeddings frozen, AdamW at 5e-5 with a linear schedule and weight decay 0.01, gradients
clipped at 1.0, one epoch, no evaluation, 2 threads; fp32, and bf16 autocast where the CPU computes in it.

- xlt: ``python jobs/finetune.py --config configs/finetune_sib200.yaml --no-tracking`` with ``scaling.num_workers=0
  scaling.threads=2 optim.epochs=1 optim.precision=<p> evals=[]``; its ``train/samples_per_s`` (the training
  loop: data iteration, steps, the epoch's end) from ``results.json``.
- HF: this script's ``hf`` part, a user's HF script: the TSV read by ``datasets``, tokenised once with
  ``Dataset.map``, ``BertForSequenceClassification`` of the same checkpoint (CLS pooler + dropout + linear head;
  xlt mean-pools), ``DataCollatorWithPadding``, ``Trainer`` with ``bf16`` for bf16; its
  ``train_samples_per_second``.
- Both: the wall time of the whole command (Python start, imports, reading, model load, Ray for xlt, training,
  writing), measured from here, and how often the process's main thread (the loop's, one of torch's two) was
  preempted (``nonvoluntary_ctxt_switches``) and how many threads the process held, read from ``/proc`` as it ran.
  ``--diagnose ray`` adds an arm: HF with a local Ray started in its process and left idle; ``--diagnose here``
  one of xlt with its input made in the step's thread (``DIAGNOSES``). Each run is stored when it ends (``--store``): a stopped benchmark resumes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

ROWS = "{data_dir}/sib200/eng_Latn/train.tsv"
ARMS = ("xlt", "HF Trainer")
# Arms run beside the two on request (``--diagnose NAME``): name -> (the arm, the arm it is set against, what it is).
DIAGNOSES = {
    "ray": ("HF Trainer, Ray started", "HF Trainer", "HF Trainer with an idle local Ray started in its process, "
            "against without"),
    "here": ("xlt, input in the step", "xlt", "xlt with each micro-batch read, flattened and tokenised in the "
             "step's thread (`--set optim.input_ahead=0`), against 2 ahead of the step in a thread of its own (the "
             "default)"),
}
DIAGNOSIS_ARMS = tuple(arm for arm, _, _ in DIAGNOSES.values())
XLT_ARMS = ("xlt", DIAGNOSES["here"][0])  # the arms that run jobs/finetune.py


def hf(precision: str, result: Path, data_dir: Path, ray: bool = False, rows: Path | None = None,
       batch_size: int = 16, max_length: int = 128, epochs: int = 1, lr: float = 5e-5,
       group_by_length: bool = False) -> None:
    """The HF arm, as a user of transformers writes it (module docstring); its metrics to ``result``. ``ray``: with
    a local Ray started in its process first, as ``jobs/finetune.py`` starts one, and left idle (a diagnosis).
    ``rows``: another TSV of ``text`` and ``category`` (a co-training fit's rows: ``cotrain_fit_vs_hf_trainer.py``),
    trained with the given batch size, length, epochs, learning rate and HF's own length grouping (its
    ``LengthGroupedSampler``: mega-batches of 50 batches, as ``optim.group_by_length: 50``)."""
    if ray:
        from xlt.cli import init_ray

        init_ray()
    import torch
    from datasets import load_dataset
    from transformers import (AutoTokenizer, BertForSequenceClassification, DataCollatorWithPadding, Trainer,
                              TrainingArguments)
    from transformers.utils import logging

    from xlt.models.sources import bundled_e5_dir

    logging.set_verbosity_error()
    torch.set_num_threads(2)
    table = load_dataset("csv", data_files=str(rows or ROWS.format(data_dir=data_dir)), delimiter="\t", split="train")
    names = sorted(set(table["category"]))
    tokenizer = AutoTokenizer.from_pretrained(bundled_e5_dir())
    data = table.map(lambda r: {**tokenizer(f"query: {r['text']}", truncation=True, max_length=max_length),
                                "labels": names.index(r["category"])}, remove_columns=table.column_names)
    model = BertForSequenceClassification.from_pretrained(bundled_e5_dir(), num_labels=len(names))
    model.get_input_embeddings().weight.requires_grad_(False)
    with tempfile.TemporaryDirectory(prefix="hf-step-") as out:
        args = TrainingArguments(output_dir=out, per_device_train_batch_size=batch_size, num_train_epochs=epochs,
                                 learning_rate=lr, weight_decay=0.01, lr_scheduler_type="linear", max_grad_norm=1.0,
                                 save_strategy="no", logging_strategy="no", report_to=[], use_cpu=True, seed=0,
                                 disable_tqdm=True, bf16=precision == "bf16",
                                 train_sampling_strategy="group_by_length" if group_by_length else "random")
        metrics = Trainer(model=model, args=args, train_dataset=data,
                          data_collator=DataCollatorWithPadding(tokenizer)).train().metrics
    result.write_text(json.dumps({"rows": len(data) * epochs, "examples/s": metrics["train_samples_per_second"],
                                  "loop s": metrics["train_runtime"]}))


def models(data_dir: Path, batches: int = 20, repeats: int = 4) -> dict:
    """The two arms' models in one process, on the same batches: xlt's classifier (``load_encoder``: the backbone
    without its pooler, mean pooling, dropout, linear head) and HF's ``BertForSequenceClassification``, word
    embeddings frozen in both; forward with cross-entropy, then backward, on the first ``batches`` batches of 16
    tokenised rows, the arms alternating over ``repeats`` passes (the first of each left out: warm-up). Seconds of
    each arm, fp32 on 2 threads: whether one model computes faster than the other, apart from any process."""
    import pandas as pd
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification
    from transformers.utils import logging

    from xlt.models import Classifier, EncoderConfig, load_encoder
    from xlt.models.sources import bundled_e5_dir

    logging.set_verbosity_error()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    texts = ["query: " + t for t in pd.read_csv(ROWS.format(data_dir=data_dir), sep="\t")["text"]][:16 * batches]
    tokenizer = AutoTokenizer.from_pretrained(bundled_e5_dir())
    inputs = [tokenizer(texts[i:i + 16], padding=True, truncation=True, max_length=128, return_tensors="pt")
              for i in range(0, len(texts), 16)]
    hf_model = BertForSequenceClassification.from_pretrained(bundled_e5_dir(), num_labels=7)
    hf_model.get_input_embeddings().weight.requires_grad_(False)
    encoder = load_encoder(EncoderConfig(source="bundled:multilingual-e5-small"))
    xlt_model = Classifier(encoder, [str(i) for i in range(7)])
    encoder.backbone.get_input_embeddings().weight.requires_grad_(False)
    logits = {"xlt": lambda b: xlt_model.head(xlt_model.dropout(encoder(b["input_ids"], b["attention_mask"]))),
              "HF Trainer": lambda b: hf_model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits}
    modules = {"xlt": xlt_model, "HF Trainer": hf_model}
    seconds = {arm: {"forward s": 0.0, "backward s": 0.0} for arm in ARMS}
    labels = torch.zeros(16, dtype=torch.long)
    for repeat in range(repeats):
        for arm in (ARMS if repeat % 2 else ARMS[::-1]):
            modules[arm].train()
            for batch in inputs:
                start = time.perf_counter()
                loss = torch.nn.functional.cross_entropy(logits[arm](batch), labels[:len(batch["input_ids"])])
                middle = time.perf_counter()
                loss.backward()
                if repeat:
                    seconds[arm]["forward s"] += middle - start
                    seconds[arm]["backward s"] += time.perf_counter() - middle
                modules[arm].zero_grad(set_to_none=True)
    return {"batches": batches, "passes counted": repeats - 1, **seconds}


def run_arm(arm: str, precision: str, env: dict[str, str], prefix: list[str] = ()) -> dict:
    """One run of ``arm`` in its own process (``prefix``: a profiler's command before it): its training loop's
    examples/s and the command's wall time."""
    with tempfile.TemporaryDirectory(prefix="step-vs-hf-") as out:
        command = [sys.executable, *arm_command(arm, precision, out)]
        start = time.perf_counter()
        log = open(Path(out, "stderr.txt"), "w")  # a file, not a pipe: a pipe left unread would stall the run when full
        proc = subprocess.Popen([*prefix, *command], cwd=harness.REPO, env=env, stdout=subprocess.DEVNULL, stderr=log)
        main_thread = {}
        while proc.poll() is None:  # the main thread's last counts (/proc/<pid>/status): it runs the loop
            try:
                main_thread = dict(line.split(":\t", 1) for line in Path(f"/proc/{proc.pid}/status").read_text()
                                   .splitlines() if ":\t" in line)
            except OSError:
                pass
            time.sleep(0.5)
        wall = time.perf_counter() - start
        log.close()
        stderr = Path(out, "stderr.txt").read_text()
        if proc.returncode != 0:
            raise RuntimeError(f"{arm} {precision} failed:\n{stderr[-3000:]}")
        if arm in XLT_ARMS:
            metrics = json.loads(Path(out, "run", "results.json").read_text())["metrics"]
            measured = {"rows": round(metrics["train/samples_per_s"] * metrics["train/epoch_time_s"]),
                        "examples/s": metrics["train/samples_per_s"], "loop s": metrics["train/epoch_time_s"],
                        "waiting for data s": metrics.get("train/data_wait_s")}
        else:
            measured = json.loads(Path(out, "hf.json").read_text())
    return {"arm": arm, "precision": precision, **measured, "command s": wall,
            "main thread preempted": int(main_thread.get("nonvoluntary_ctxt_switches", 0)),
            "threads": int(main_thread.get("Threads", 0))}


def arm_command(arm: str, precision: str, out: str) -> list[str]:
    """The arguments of ``python`` that run ``arm`` in ``precision``, writing under ``out``."""
    if arm in XLT_ARMS:
        sets = ["scaling.num_workers=0", "scaling.threads=2", "optim.epochs=1", f"optim.precision={precision}",
                "evals=[]", f"output.dir={out}/run", *(["optim.input_ahead=0"] if arm != "xlt" else [])]
        return ["jobs/finetune.py", "--config", "configs/finetune_sib200.yaml", "--no-tracking",
                *(x for s in sets for x in ("--set", s))]
    return ["benchmarks/step_vs_hf_trainer.py", "hf", "--precision", precision, "--result", f"{out}/hf.json",
            *(["--ray"] if arm == DIAGNOSES["ray"][0] else [])]


# Where a training loop's wall time goes, by the first of these found on a sample's stack (py-spy on the arm's own
# process, idle samples too: a thread waiting for the next batch is the loop's time).
CATEGORIES = (("optimizer and schedule", ("torch/optim/", "zero_grad")), ("gradient clipping", ("clip_grad",)),
              ("backward", ("backward (torch/",)), ("tokenising", ("tokeniz",)), ("forward and loss", ("forward (",)),
              ("batches: reading, shuffling, collating", ("ray/data", "iter_batches", "collat", "step_inputs",
                                                         "_next_data", "flatten_batch", "fetcher")))
LOOPS = {"xlt": "run_epoch (", "HF Trainer": "_inner_training_loop ("}


def profile(arm: str, precision: str, env: dict[str, str], work: Path) -> dict:
    """One run of ``arm`` under py-spy (50 samples/s of the arm's own process, without pausing it: sampling its Ray
    processes too took a core of the two): of the samples
    inside the training loop (``LOOPS``) on the thread that runs it, the share of each of ``CATEGORIES``."""
    raw = work / f"profile-{arm.replace(' ', '')}-{precision}.txt"
    run = run_arm(arm, precision, env, prefix=[str(Path(sys.executable).parent / "py-spy"), "record", "--idle",
                                               "--threads", "--nonblocking", "--rate", "50", "--format", "raw",
                                               "-o", str(raw), "--"])
    counts: dict[str, int] = {}
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if LOOPS[arm] not in stack:
            continue
        category = next((name for name, marks in CATEGORIES if any(m in stack for m in marks)), "other in the loop")
        counts[category] = counts.get(category, 0) + int(n)
    total = sum(counts.values())
    return {**run, "samples": total,
            "share": {name: counts.get(name, 0) / total for name in (*(n for n, _ in CATEGORIES), "other in the loop")}}


def summary(runs: list[dict]) -> list[str]:
    """Per precision: the arms' mean examples/s, xlt / HF per pair of neighbouring runs, and the whole commands."""
    lines = []
    for precision in dict.fromkeys(r["precision"] for r in runs):
        pairs = [(x, h) for x in runs for h in runs if (x["arm"], h["arm"]) == ARMS and x["run"] == h["run"]
                 and x["precision"] == h["precision"] == precision]
        if not pairs:
            continue
        loop = [x["examples/s"] / h["examples/s"] for x, h in pairs]
        command = [h["command s"] / x["command s"] for x, h in pairs]
        mean = {arm: sum(r["examples/s"] for r in runs if (r["arm"], r["precision"]) == (arm, precision))
                / sum(1 for r in runs if (r["arm"], r["precision"]) == (arm, precision)) for arm in ARMS}
        for arm, against, what in DIAGNOSES.values():
            diagnosed = [(d, h) for d in runs for h in runs if (d["arm"], h["arm"]) == (arm, against)
                         and d["run"] == h["run"] and d["precision"] == h["precision"] == precision]
            if diagnosed:
                ratios = [d["examples/s"] / h["examples/s"] for d, h in diagnosed]
                lines.append(f"- {precision}, a diagnosis: {what}, examples/s of the loop per run "
                             f"{harness.mean_sd(ratios, 2)} ({', '.join(f'{v:.2f}' for v in ratios)}).")
        lines.append(f"- {precision}: examples/s of the training loop, xlt {mean['xlt']:.2f} and HF Trainer "
                     f"{mean['HF Trainer']:.2f}; xlt / HF per pair of neighbouring runs {harness.mean_sd(loop, 2)} "
                     f"({', '.join(f'{v:.2f}' for v in loop)}); the whole command, HF's time over xlt's "
                     f"{harness.mean_sd(command, 2)} ({', '.join(f'{v:.2f}' for v in command)}).")
    return lines


def profile_rows(store: Path, label: str) -> list[dict]:
    profiles = sorted((json.loads(p.read_text()) for p in store.glob("profile-*.json")), key=lambda r: r["date"])
    return [{"code": label, "arm": r["arm"], "precision": r["precision"],
             "examples/s under py-spy": f"{r['examples/s']:.2f}", "loop s": f"{r['loop s']:.1f}",
             **{name: f"{share * r['loop s']:.1f} s ({share:.0%})" for name, share in r["share"].items()}}
            for r in profiles]


# What the tables below show (issue 95), in words; each claim names the table or command that measures it.
FINDINGS = """What accounted for the difference, and what changed (issue 95):

- Before, xlt's in-process run iterated a Ray dataset in the job's process with a local Ray started beside it
  (`benchmarks/step_vs_hf_trainer_before.md`): Ray's processes and Ray Data's executor, stats and autoscaling
  actors woke throughout the loop, and on 2 cores every wake-up preempts one of torch's two threads while the other
  waits for it at the next barrier. The main thread was preempted 13-19 thousand times a run against HF's 0.4-1.2
  thousand, and the profile put the lost time in the forward and backward passes (the before rows of the profile
  table), not in any step of xlt's own: the model in one process computes as fast as HF's (the models table).
- Now an in-process run trains on rows it holds (`xlt.engine.rows.LocalRows`: Ray Data's blocks and local shuffle
  replayed, so the same batches and the same loss at every step, `tests/train/test_trainer.py`), and a fine-tuning
  job whose run needs no Ray (no Ray Train worker, no augmentation UDF) starts none: the preemptions are HF's, the
  whole command lost Ray's start-up, and the profile's categories are HF's but for the forward pass, within the
  spread of this VM (a pair of neighbouring runs differs by up to 10 % with nothing changed: the fp32 pairs).
- Tokenising in the step, the batches, the optimizer (fused AdamW), clipping and the epoch's end are each under
  1 % of the loop in both arms (the profile table): moving tokenising before the epoch, as HF does, would save
  less than the runs' spread.
- The step's input is now made ahead of it (`xlt.engine.ahead`, `optim.input_ahead: 2`, the default): each micro-batch
  read, flattened, tokenised and, for a GPU, pinned in a thread of its own, so a GPU does not wait for it. On these 2
  cores it neither helps nor costs measurably (the diagnosis lines: the input made in the step's thread against
  ahead), so CPU and GPU run one code path; its loss is the same at every step (`tests/train/test_workload.py`)."""


def stored_runs(store: Path) -> list[dict]:
    """The runs stored in ``store`` in the order they ran: run by run, fp32 first, xlt first."""
    order = ("fp32", "bf16", "fp16")
    return sorted((json.loads(p.read_text()) for p in store.glob("run-*.json")),
                  key=lambda r: (r["run"], order.index(r["precision"]), (*ARMS, *DIAGNOSIS_ARMS).index(r["arm"])))


def report(store: Path, output: Path, before: Path | None = None) -> None:
    """The .md of the runs in ``store``; ``before``: a store of runs of earlier code, summarised beside them."""
    from xlt.report import markdown_table

    runs = stored_runs(store)
    if not runs:
        raise SystemExit(f"no runs stored under {store}")
    table = [{"run": r["run"], "precision": r["precision"], "arm": r["arm"], "examples/s (loop)": f"{r['examples/s']:.2f}",
              "loop s": f"{r['loop s']:.1f}", "command s": f"{r['command s']:.1f}",
              "main thread preempted": r.get("main thread preempted", "–"), "threads": r.get("threads", "–"),
              "date": r["date"],
              "CPU, load": r["machine"].split(";")[0].split(",")[0] + ", " + r["machine"].split("load average ")[1]
              .split(";")[0]} for r in runs]
    lines = summary(runs)
    earlier = stored_runs(before) if before else []
    if earlier:
        lines += ["", f"Before (`{before.relative_to(harness.REPO) if before.is_relative_to(harness.REPO) else before}`: "
                  "the runs of `benchmarks/step_vs_hf_trainer_before.md`, xlt's in-process run on Ray datasets beside "
                  "a local Ray):", "", *summary(earlier)]
    profiles = profile_rows(store, "after") + (profile_rows(before, "before") if before else [])
    if profiles:
        lines += ["", "Where each loop's time goes (`python benchmarks/step_vs_hf_trainer.py profile`: py-spy at 50 "
                  "samples/s, the loop's thread, idle samples counted; each category is the first of the script's "
                  "`CATEGORIES` on a sample's stack, its share times the loop's seconds):", "", markdown_table(profiles)]
    if (store / "models.json").is_file():
        m = json.loads((store / "models.json").read_text())
        rows = [{"model": arm, **{k: f"{m[arm][k]:.2f}" for k in ("forward s", "backward s")},
                 "examples/s": f"{16 * m['batches'] * m['passes counted'] / sum(m[arm].values()):.2f}"} for arm in ARMS]
        lines += ["", f"The two models in one process (`python benchmarks/step_vs_hf_trainer.py models`: {m['batches']} "
                  f"batches of 16, fp32, forward with CE and backward, the arms alternating, {m['passes counted']} passes "
                  f"counted; {m['date']}, {m['machine'].split(';')[0]}):", "", markdown_table(rows)]
    precisions = list(dict.fromkeys(r["precision"] for r in runs))
    arms = [arm for arm in (*ARMS, *DIAGNOSIS_ARMS) if any(r["arm"] == arm for r in runs)]
    diagnoses = [name for name, (arm, _, _) in DIAGNOSES.items() if arm in arms]
    commands = [f"`python {' '.join(arm_command(arm, precision, '<tmp>'))}`" for precision in precisions for arm in arms]
    runs_command = " ".join(["python benchmarks/step_vs_hf_trainer.py", f"--runs {max(r['run'] for r in runs)}",
                             "--precisions", *precisions, *(["--diagnose", *diagnoses] if diagnoses else []),
                             *(["--store", str(store.resolve().relative_to(harness.REPO))]
                               if store.resolve().is_relative_to(harness.REPO) and store.name != "step_vs_hf_trainer"
                               else [])])
    text = (f"# xlt's fine-tuning against HF Trainer, each run as a user runs it\n\nRuns: `{runs_command}`; "
            f"this report: `python "
            f"{' '.join([sys.argv[0], *sys.argv[1:]])}`. The work, and what each number is: the script's "
            f"docstring. Each run is its own process; the arms alternate, xlt first.\n\n{markdown_table(table)}\n\n"
            + "\n".join(lines) + "\n\n" + FINDINGS + "\n\nThe commands, as each run ran them (`<tmp>`: a temporary directory):\n\n"
            + "\n".join(f"- {c}" for c in commands) + "\n")
    harness.write(output, text, show=True)


def main() -> None:
    parser = harness.parser(__doc__, "step_vs_hf_trainer.md", data_dir=True)
    parser.add_argument("part", nargs="?", default="runs", choices=("runs", "profile", "models", "report", "hf"))
    parser.add_argument("--runs", type=int, default=3, help="runs of each arm and precision, alternating")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], help="bf16 only where the CPU has it")
    parser.add_argument("--precision", default="fp32", help="hf: the arm's precision")
    parser.add_argument("--result", type=Path, help="hf: where its metrics go")
    parser.add_argument("--ray", action="store_true", help="hf: start a local Ray in the process first, idle")
    parser.add_argument("--rows", type=Path, help="hf: a TSV of text and category to train on instead")
    parser.add_argument("--batch-size", type=int, default=16, help="hf")
    parser.add_argument("--max-length", type=int, default=128, help="hf")
    parser.add_argument("--epochs", type=int, default=1, help="hf")
    parser.add_argument("--lr", type=float, default=5e-5, help="hf")
    parser.add_argument("--group-by-length", action="store_true", help="hf: HF's LengthGroupedSampler")
    parser.add_argument("--diagnose", nargs="+", choices=sorted(DIAGNOSES), default=[],
                        help="runs: arms beside the two, " + "; ".join(f"{k}: {v[0]!r}" for k, v in DIAGNOSES.items()))
    parser.add_argument("--store", type=Path, default=harness.REPO / "results" / "benchmarks" / "step_vs_hf_trainer")
    parser.add_argument("--before", type=Path, help="a store of runs of earlier code, summarised beside these")
    args = parser.parse_args()
    data_dir = harness.data_root(args.data_dir)
    if args.part == "hf":
        return hf(args.precision, args.result, data_dir, args.ray, args.rows, args.batch_size, args.max_length,
                  args.epochs, args.lr, args.group_by_length)
    if args.part == "report":
        return report(args.store, args.out, args.before)
    from xlt.hardware import precisions

    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "RAY_ADDRESS": "",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(harness.REPO / "platform"), os.environ.get("PYTHONPATH")]))}
    if args.part == "models":
        harness.stored(args.store / "models.json", lambda: models(data_dir))
        return report(args.store, args.out, args.before)
    if args.part == "profile":
        args.store.mkdir(parents=True, exist_ok=True)
        for precision in (p for p in args.precisions if p in precisions("cpu")):
            for arm in ARMS:
                harness.stored(args.store / f"profile-{precision}-{arm.replace(' ', '')}.json",
                               lambda: profile(arm, precision, env, args.store))
        return report(args.store, args.out, args.before)
    for i in range(1, args.runs + 1):
        for precision in (p for p in args.precisions if p in precisions("cpu")):
            for arm in (*ARMS, *(DIAGNOSES[name][0] for name in args.diagnose)):
                harness.stored(args.store / f"run-{i}-{precision}-{arm.replace(' ', '')}.json",
                               lambda: {"run": i, **run_arm(arm, precision, env)})
    report(args.store, args.out, args.before)


if __name__ == "__main__":
    main()
