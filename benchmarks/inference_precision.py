"""Inference precision on this CPU: the e5 encoder in fp32, under bf16 autocast (with native bf16, or
``--all-dtypes``) and dynamically quantised to int8 (every ``nn.Linear``), timed on the same SIB-200 test rows of
every language and checked against fp32's labels (issue 48's bar: >= 99 % agreement in every language). The labels
are one linear head's, fitted on fp32 embeddings of English train rows, as pseudo-labelling runs a learner's head.

    python benchmarks/inference_precision.py    # ~5 minutes on 2 idle cores -> inference_precision.md and .json
    python benchmarks/inference_precision.py --rows-per-lang 8 --reps 1 --out /tmp/x.md   # a check
"""

from __future__ import annotations

import copy
import os
import statistics
import time

import numpy as np
import torch

import harness
from machine_limit import encoder_flops_per_token, fraction_of_limit, gemm_gflops
from xlt.eval.classification import accuracy_by_language
from xlt.hardware import native_bf16
from xlt.models import EncoderConfig, load_encoder
from xlt.report import markdown_table


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, "inference_precision.md", data_dir=True)
    parser.add_argument("--model", default="bundled:multilingual-e5-small")
    parser.add_argument("--max-length", type=int, default=128, help="the encoder's max_length (cotrain_sib200's)")
    parser.add_argument("--rows-per-lang", type=int, default=204, help="test rows per language (all 204 by default)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--head-steps", type=int, default=300)
    parser.add_argument("--all-dtypes", action="store_true", help="time bf16 autocast without native bf16 too")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    machine = harness.Machine()
    task = harness.sib200(harness.data_root(args.data_dir))
    index = {name: i for i, name in enumerate(task.labels)}
    langs = sorted(task.langs)
    rows = [e for lang in langs for e in task.examples("test", lang)[:args.rows_per_lang]]
    texts, gold, row_langs = [e.text for e in rows], np.array([index[e.label] for e in rows]), [e.lang for e in rows]

    encoder = load_encoder(EncoderConfig(source=args.model, max_length=args.max_length)).eval()
    english = task.examples("train", "en")
    x = torch.from_numpy(encoder.encode([e.text for e in english], batch_size=args.batch_size))
    y = torch.tensor([index[e.label] for e in english])
    torch.manual_seed(0)
    head = torch.nn.Linear(x.shape[1], len(index))
    optimizer = torch.optim.AdamW(head.parameters(), lr=1e-2)
    for _ in range(args.head_steps):  # full-batch AdamW on the cross-entropy
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(head(x), y).backward()
        optimizer.step()

    bf16 = native_bf16()
    variants = {"fp32": (encoder, None)}
    if bf16 or args.all_dtypes:
        variants["bf16 autocast"] = (encoder, torch.bfloat16)
    quantized = torch.ao.quantization.quantize_dynamic(copy.deepcopy(encoder), {torch.nn.Linear}, dtype=torch.qint8)
    variants["int8 dynamic"] = (quantized, None)

    def encode(name: str, subset: list[str]):
        model, dtype = variants[name]
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            return model.encode(subset, batch_size=args.batch_size)

    times, features = {name: [] for name in variants}, {}
    for name in variants:
        encode(name, texts[:args.batch_size])  # warm-up: kernels picked, memory touched
    for _ in range(args.reps):
        for name in variants:
            start = time.perf_counter()
            features[name] = encode(name, texts)
            times[name].append(time.perf_counter() - start)

    with torch.no_grad():
        probs = {name: torch.softmax(head(torch.from_numpy(f)), dim=-1).numpy() for name, f in features.items()}
    predicted = {name: p.argmax(axis=1) for name, p in probs.items()}
    tokens = sum(encoder.text_lengths(texts))
    flops = encoder_flops_per_token(args.model, round(tokens / len(texts)))["forward_flops_per_token"]
    limit = {name: gemm_gflops(dtype, threads=args.threads)
             for name, dtype in (("fp32", "float32"), ("bf16 autocast", "bfloat16")) if name in variants}
    table, figures = [], {}
    for name in variants:
        median = statistics.median(times[name])
        rate = len(texts) / median
        agree = accuracy_by_language(predicted["fp32"], predicted[name], row_langs)  # fp32's labels as the gold
        worst = min(agree, key=agree.get)
        f = figures[name] = {
            "seconds": times[name], "rows_per_s": rate, "speedup": statistics.median(times["fp32"]) / median,
            "fraction_of_limit": fraction_of_limit(rate, tokens / len(texts), flops, limit.get(name, limit["fp32"])),
            "agreement": agree, "accuracy": accuracy_by_language(gold, predicted[name], row_langs),
            "max_abs_prob_diff": float(np.abs(probs[name] - probs["fp32"]).max())}
        table.append({"variant": name, "median s": f"{median:.2f}", "best s": f"{min(times[name]):.2f}",
                      "rows/s": f"{rate:.1f}", "speed-up": f"{f['speedup']:.2f}",
                      "fraction of limit": f"{f['fraction_of_limit']:.2f}",
                      "least agreement with fp32 (language)": f"{agree[worst]:.4f} ({worst})",
                      "mean accuracy": f"{np.mean(list(f['accuracy'].values())):.4f}",
                      "max |Δ prob|": f"{f['max_abs_prob_diff']:.1e}"})

    per_lang = [{"lang": lang, **{n: f"{figures[n]['agreement'][lang]:.4f} / {figures[n]['accuracy'][lang]:.3f}"
                                  for n in variants}} for lang in langs]
    harness.write(args.out, "\n".join([
        machine.header("Inference precision: fp32, bf16 autocast, int8 dynamic (issue 48)"),
        f"- Rows: {len(texts)} SIB-200 test sentences of {len(langs)} languages ({args.rows_per_lang} each at most), "
        f"{tokens:,} real tokens; `{args.model}`, max_length {args.max_length}, batches of {args.batch_size}, "
        "length-bucketed",
        f"- Head: linear, fitted on the fp32 embeddings of {len(english)} English train sentences "
        f"({args.head_steps} full-batch AdamW steps); fp32 test accuracy over the languages "
        f"{np.mean(list(figures['fp32']['accuracy'].values())):.3f}",
        f"- Native bf16: {'yes' if bf16 else 'no'}. Limit: GEMM "
        + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in limit.items()) + f" on {args.threads} threads; "
        f"{flops / 1e6:.1f} MFLOP per token forward (int8 counted against the fp32 rate)",
        f"- Passes per variant: {args.reps}, round-robin after a warm-up; raw seconds: "
        + "; ".join(f"{n} {'/'.join(f'{t:.2f}' for t in times[n])}" for n in variants), "",
        markdown_table(table), "", "### Per language: agreement with fp32 / accuracy", "",
        markdown_table(per_lang), ""]), show=True)
    harness.write(args.out.with_suffix(".json"), {
        **machine.fields(), "threads": args.threads, "native_bf16": bf16, "rows": len(texts), "tokens": tokens,
        "flops_per_token": flops, "gemm_gflops": limit, "variants": figures})


if __name__ == "__main__":
    main()
