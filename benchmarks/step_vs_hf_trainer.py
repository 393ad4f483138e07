"""xlt's fine-tuning step against Hugging Face's ``Trainer`` on the same work, interleaved in one process.

    python benchmarks/step_vs_hf_trainer.py        # 3 runs of each -> step_vs_hf_trainer.md; --runs 1 --rows 64: a look

The work: ``bundled:multilingual-e5-small`` on SIB-200's English training rows (``query: `` prefix), batch 16, max
length 128, word embeddings frozen, fp32, AdamW at 5e-5 with a linear schedule, one epoch, no evaluation, 2 torch
threads. xlt: ``jobs/finetune.py``'s path in this process, ``train/samples_per_s`` (data iteration included). HF:
``Trainer`` on ``BertForSequenceClassification`` of the same checkpoint (CLS pooler + dropout + linear head; xlt
mean-pools), dynamic padding, no checkpoint or logging, ``train_samples_per_second``."""

from __future__ import annotations

import statistics
import tempfile
import time

import torch
import transformers
from transformers import (AutoTokenizer, BertForSequenceClassification, DataCollatorWithPadding, Trainer,
                          TrainingArguments)

import harness
from xlt.cli import init_ray
from xlt.metrics import TRAIN_EPOCH_TIME_S, TRAIN_SAMPLES_PER_S
from xlt.models.sources import bundled_e5_dir
from xlt.report import markdown_table
from xlt.train import build_trainer, load_finetune_config, prepare


def xlt_config(rows: int, out: str):
    return load_finetune_config(harness.REPO / "configs" / "finetune_sib200.yaml", [
        "scaling.num_workers=0", "scaling.threads=2", "optim.epochs=1", "optim.precision=fp32", "evals=[]",
        f"data.max_examples={rows}", "task.target_langs=[de]", f"output.dir={out}"])


def run_xlt(rows: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="xlt-step-") as out:
        metrics = build_trainer(xlt_config(rows, out)).fit().metrics
    return {"examples/s": metrics[TRAIN_SAMPLES_PER_S], "epoch s": metrics[TRAIN_EPOCH_TIME_S]}


def run_hf(texts: list[str], labels: list[int], names: list[str]) -> dict[str, float]:
    transformers.logging.set_verbosity_error()
    tokenizer = AutoTokenizer.from_pretrained(bundled_e5_dir())
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(bundled_e5_dir(), num_labels=len(names))
    model.get_input_embeddings().weight.requires_grad_(False)
    data = [{**tokenizer(t, truncation=True, max_length=128), "labels": y} for t, y in zip(texts, labels)]
    with tempfile.TemporaryDirectory(prefix="hf-step-") as out:
        args = TrainingArguments(output_dir=out, per_device_train_batch_size=16, num_train_epochs=1, learning_rate=5e-5,
                                 weight_decay=0.01, lr_scheduler_type="linear", max_grad_norm=1.0, save_strategy="no",
                                 logging_strategy="no", report_to=[], use_cpu=True, seed=0, disable_tqdm=True)
        metrics = Trainer(model=model, args=args, train_dataset=data,
                          data_collator=DataCollatorWithPadding(tokenizer)).train().metrics
    return {"examples/s": metrics["train_samples_per_second"], "epoch s": metrics["train_runtime"]}


def main() -> None:
    parser = harness.parser(__doc__, "step_vs_hf_trainer.md")
    parser.add_argument("--runs", type=int, default=3, help="runs of each, interleaved")
    parser.add_argument("--rows", type=int, default=0, help="English training rows (0: all 701)")
    args = parser.parse_args()
    init_ray(num_cpus=2)
    torch.set_num_threads(2)  # HF's threads; xlt's are scaling.threads
    machine = harness.Machine()
    prepared = prepare(xlt_config(args.rows, "/tmp/xlt-step-unused"))  # xlt's own rows and labels, for HF too
    names, train = list(prepared.config.task.labels), prepared.train
    texts, labels = [f"query: {r['text']}" for r in train], [names.index(r["label"]) for r in train]
    arms = {"xlt": lambda: run_xlt(args.rows), "HF Trainer": lambda: run_hf(texts, labels, names)}
    runs: list[dict] = []
    for i in range(args.runs):
        for name, run in arms.items():  # the start's time first, then the run
            runs.append({"run": i + 1, "arm": name, "UTC": time.strftime("%H:%M:%S", time.gmtime()),
                         **{k: round(v, 2) for k, v in run().items()}})
            print(runs[-1], flush=True)
    xlt, hf = (statistics.mean(r["examples/s"] for r in runs if r["arm"] == arm) for arm in arms)
    ratios = ", ".join(f"{a['examples/s'] / b['examples/s']:.2f}" for a, b in zip(runs[::2], runs[1::2]))
    harness.write(args.out, machine.header("xlt's fine-tuning step against HF Trainer, on the same work")
                  + f"\n{len(texts)} rows. The work and what each number is: the script's docstring. Runs alternate, "
                  f"xlt first.\n\n{markdown_table(runs)}\n\nMean examples/s: xlt {xlt:.2f}, HF Trainer {hf:.2f}; "
                  f"xlt / HF {xlt / hf:.2f}× (per pair of neighbouring runs: {ratios}).\n", show=True)


if __name__ == "__main__":
    main()
