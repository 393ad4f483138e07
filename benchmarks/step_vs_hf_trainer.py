"""xlt's fine-tuning step against Hugging Face's ``Trainer`` on the same work, interleaved in one process.

    python benchmarks/step_vs_hf_trainer.py                       # 3 runs of each, -> step_vs_hf_trainer.md
    python benchmarks/step_vs_hf_trainer.py --runs 1 --rows 64    # a quick look

The work: ``bundled:multilingual-e5-small``, SIB-200's English training rows with e5's ``query: `` prefix, batch
16, max length 128, word embeddings frozen, fp32, AdamW at 5e-5 with a linear schedule, one epoch, no evaluation, 2
torch threads. xlt: ``jobs/finetune.py``'s path in this process; ``train/samples_per_s`` (the epoch's rows over its
wall time, data iteration included). HF: ``Trainer`` (``accelerate`` comes with the test extras) on
``BertForSequenceClassification`` from the same converted checkpoint (CLS pooler + dropout + linear head; xlt
mean-pools), dynamic padding, no checkpoint or logging; ``train_samples_per_second``. Runs alternate.
"""

from __future__ import annotations

import statistics
import tempfile
import time

import torch

import harness
from xlt.cli import init_ray
from xlt.metrics import TRAIN_EPOCH_TIME_S, TRAIN_SAMPLES_PER_S
from xlt.models.sources import bundled_e5_dir
from xlt.report import markdown_table
from xlt.train import build_trainer, load_finetune_config, prepare

THREADS = 2


def xlt_config(rows: int, out: str):
    return load_finetune_config(harness.REPO / "configs" / "finetune_sib200.yaml", [
        "scaling.num_workers=0", f"scaling.threads={THREADS}", "optim.epochs=1", "optim.precision=fp32", "evals=[]",
        f"data.max_examples={rows}", "task.target_langs=[de]", f"output.dir={out}"])


def run_xlt(rows: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="xlt-step-") as out:
        metrics = build_trainer(xlt_config(rows, out)).fit().metrics
    return {"examples/s": metrics[TRAIN_SAMPLES_PER_S], "epoch s": metrics[TRAIN_EPOCH_TIME_S]}


def run_hf(texts: list[str], labels: list[int], names: list[str]) -> dict[str, float]:
    import transformers
    from transformers import (AutoTokenizer, BertForSequenceClassification, DataCollatorWithPadding, Trainer,
                              TrainingArguments)

    checkpoint = str(bundled_e5_dir())
    transformers.logging.set_verbosity_error()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(checkpoint, num_labels=len(names))
    model.get_input_embeddings().weight.requires_grad_(False)
    data = [{**tokenizer(t, truncation=True, max_length=128), "labels": y} for t, y in zip(texts, labels)]
    with tempfile.TemporaryDirectory(prefix="hf-step-") as out:
        args = TrainingArguments(output_dir=out, per_device_train_batch_size=16, num_train_epochs=1, learning_rate=5e-5,
                                 weight_decay=0.01, lr_scheduler_type="linear", warmup_steps=0, max_grad_norm=1.0,
                                 eval_strategy="no", save_strategy="no", logging_strategy="no", report_to=[],
                                 use_cpu=True, seed=0, dataloader_num_workers=0, disable_tqdm=True)
        result = Trainer(model=model, args=args, train_dataset=data,
                         data_collator=DataCollatorWithPadding(tokenizer)).train()
    return {"examples/s": result.metrics["train_samples_per_second"], "epoch s": result.metrics["train_runtime"]}


def main() -> None:
    parser = harness.parser(__doc__, "step_vs_hf_trainer.md")
    parser.add_argument("--runs", type=int, default=3, help="runs of each, interleaved")
    parser.add_argument("--rows", type=int, default=0, help="English training rows (0: all 701)")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    init_ray(num_cpus=THREADS)
    machine = harness.Machine()
    prepared = prepare(xlt_config(args.rows, "/tmp/xlt-step-unused"))  # xlt's own rows and labels, for HF too
    names, train = list(prepared.config.task.labels), prepared.train
    texts, labels = [f"query: {r['text']}" for r in train], [names.index(r["label"]) for r in train]
    arms = {"xlt": lambda: run_xlt(args.rows), "HF Trainer": lambda: run_hf(texts, labels, names)}
    runs: list[dict] = []
    for i in range(args.runs):
        for name, run in arms.items():
            start = time.strftime("%H:%M:%S", time.gmtime())
            torch.set_num_threads(THREADS)
            runs.append({"run": i + 1, "arm": name, "UTC": start, **{k: round(v, 2) for k, v in run().items()}})
            print(runs[-1], flush=True)
    mean = {arm: statistics.mean(r["examples/s"] for r in runs if r["arm"] == arm) for arm in arms}
    ratios = [a["examples/s"] / b["examples/s"] for a, b in zip(runs[::2], runs[1::2])]
    text = "\n".join([
        machine.header("xlt's fine-tuning step against HF Trainer, on the same work"),
        f"{len(texts)} rows. The work and what each number is: the script's docstring. Runs alternate, xlt first.", "",
        markdown_table(runs), "",
        f"Mean examples/s: xlt {mean['xlt']:.2f}, HF Trainer {mean['HF Trainer']:.2f}; xlt / HF "
        f"{mean['xlt'] / mean['HF Trainer']:.2f}× (per pair of neighbouring runs: "
        f"{', '.join(f'{r:.2f}' for r in ratios)}).", ""])
    print(text)
    harness.write(args.out, text)


if __name__ == "__main__":
    main()
