"""Time per call (forward + backward) of every objective vs its naive loop reference, at batch 16/64/256.

    python benchmarks/losses.py            # writes benchmarks/losses.md
    python benchmarks/losses.py --batches 16 64 --naive-budget 5

"Batch" is the number of anchors: sentence objectives get B originals with two views each
(N = 3B rows, 7 labels like SIB-200; SA: each anchor with two translations and two other-label
sources, N = 5B), parallel objectives B pairs, token objectives B pairs of
L = 24 tokens with 8 aligned token pairs and 4 aligned spans each. The naive references are the
Python-loop oracles the tests compare against (``tests/losses/naive_*.py``). A naive run whose
predicted time (extrapolated from a batch-4 probe and its smaller batches) exceeds ``--naive-budget`` seconds is
not run and marked as such.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from typing import Callable

import torch

import harness

sys.path.insert(0, str(harness.REPO))  # the naive references live with the tests that use them as oracles
from tests.losses import naive_parallel as NP
from tests.losses import naive_sentence as NS
from xlt.losses import build_objective
from xlt.report import markdown_table

DIM, TOKENS, ALIGNED, SPANS = 128, 24, 8, 4
PROBE_BATCH = 4


def view_batch(b: int, seed: int) -> dict[str, torch.Tensor]:
    return NS.random_view_batch([2] * b, n_labels=7, dim=DIM, seed=seed, dtype=torch.float32)


def alignment_batch(b: int, seed: int) -> dict[str, torch.Tensor]:
    """SA layout (Yu & Joty 2021, Eq. 4): each anchor with 2 same-label translations and 2 other-label sources."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(7, (b,), generator=g)
    labels = torch.stack([y, y, y, (y + 1) % 7, (y + 2) % 7], dim=1).reshape(-1)  # (5B,)
    group = (torch.arange(b) * 5).repeat_interleave(5)
    is_anchor = torch.arange(5 * b) % 5 == 0
    return {"features": torch.randn(5 * b, DIM, generator=g).requires_grad_(), "labels": labels, "group": group,
            "is_anchor": is_anchor}


def parallel_batch(b: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(b, DIM, generator=g)
    out = {"src_features": src, "tgt_features": src + 0.5 * torch.randn(b, DIM, generator=g),
           "src_noisy_features": src + 0.5 * torch.randn(b, DIM, generator=g),
           "tgt_noisy_features": src + 0.5 * torch.randn(b, DIM, generator=g)}
    return {k: v.requires_grad_() for k, v in out.items()}


def token_batch(b: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    pair = torch.arange(b).repeat_interleave(ALIGNED)
    positions = torch.stack([torch.randperm(TOKENS - 2, generator=g)[:ALIGNED] + 1 for _ in range(2 * b)])
    alignment = torch.stack([pair, positions[:b].reshape(-1), positions[b:].reshape(-1)], dim=1)
    starts = torch.arange(SPANS) * 5 + 1
    span_pair = torch.arange(b).repeat_interleave(SPANS)
    spans = torch.stack([span_pair, starts.repeat(b), starts.repeat(b) + 3], dim=1)
    return {"src_tokens": torch.randn(b, TOKENS, DIM, generator=g).requires_grad_(),
            "tgt_tokens": torch.randn(b, TOKENS, DIM, generator=g).requires_grad_(),
            "src_mask": torch.ones(b, TOKENS, dtype=torch.long), "tgt_mask": torch.ones(b, TOKENS, dtype=torch.long),
            "alignment": alignment, "src_spans": spans, "tgt_spans": spans.clone()}


SENTENCE, LABELLED = ("features", "group", "is_anchor"), ("features", "labels", "group", "is_anchor")
PAIR, TOKEN = ("src_features", "tgt_features"), ("src_tokens", "tgt_tokens", "src_mask", "tgt_mask")
# name, constructor params, input builder, naive reference, its positional inputs (of the batch, or the objective's
# "attention"); the naive reference takes the temperature or similarity of the params too.
CASES: list[tuple[str, dict, Callable, Callable, tuple[str, ...]]] = [
    ("multiview_alignment", {"similarity": "cosine"}, view_batch, NS.naive_multiview_alignment, SENTENCE),
    ("contrastive_alignment", {"temperature": 1.0}, view_batch, NS.naive_contrastive_alignment, SENTENCE),
    ("supervised_contrastive_alignment", {"temperature": 1.0}, view_batch,
     NS.naive_supervised_contrastive_alignment, LABELLED),
    ("label_alignment", {"temperature": 1.0}, view_batch, NS.naive_label_alignment, ("features", "labels")),
    ("semantic_alignment", {"temperature": 1.0}, alignment_batch, NS.naive_semantic_alignment, LABELLED),
    ("parallel_info_nce", {"temperature": 0.07}, parallel_batch, NP.naive_parallel_info_nce, PAIR),
    ("cross_zero_nce", {"temperature": 0.07}, parallel_batch, NP.naive_cross_zero_nce, PAIR),
    ("noisy_sentence_contrast", {"temperature": 0.1}, parallel_batch, NP.naive_noisy_sentence_contrast,
     (*PAIR, "src_noisy_features", "tgt_noisy_features")),
    ("token_alignment", {"temperature": 0.1}, token_batch, NP.naive_token_alignment, (*TOKEN, "alignment")),
    ("word_hard_contrast", {"temperature": 0.1}, token_batch, NP.naive_word_hard_contrast, (*TOKEN, "alignment")),
    ("word_soft_contrast", {"embed_dim": DIM, "num_heads": 8, "temperature": 0.1}, token_batch,
     NP.naive_word_soft_contrast, (*TOKEN, "attention")),
    ("span_contrast", {"temperature": 0.1}, token_batch, NP.naive_span_contrast,
     ("src_tokens", "tgt_tokens", "src_spans", "tgt_spans")),
]


def time_call(fn: Callable[[], torch.Tensor], batch: dict, reps: int) -> tuple[float, torch.Tensor]:
    """(median seconds of forward + backward, the loss); a call slower than a second is not repeated."""
    times: list[float] = []
    for _ in range(reps):
        if times and times[-1] > 1.0:
            break
        for v in batch.values():
            if v.grad is not None:
                v.grad = None
        start = time.perf_counter()
        loss = fn()
        loss.backward()
        times.append(time.perf_counter() - start)
    return statistics.median(times), loss.detach()


def predict(times: dict[int, float], b: int) -> float:
    """Naive seconds at batch ``b``, extrapolated with the growth seen so far (quadratic until two points)."""
    if not times:
        return 0.0
    sizes = sorted(times)
    exponent = 2.0
    if len(sizes) >= 2:
        (b0, b1), (t0, t1) = sizes[-2:], (times[sizes[-2]], times[sizes[-1]])
        exponent = min(3.0, max(1.0, math.log(t1 / t0) / math.log(b1 / b0)))  # noisy timings: keep it sane
    return times[sizes[-1]] * (b / sizes[-1]) ** exponent


def main() -> None:
    parser = harness.parser(__doc__, "losses.md")
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--naive-budget", type=float, default=30.0, help="seconds a single naive call may take")
    args = parser.parse_args()
    torch.set_num_threads(2)
    machine = harness.Machine()
    rows = []
    for name, params, make, naive, inputs in CASES:
        objective = build_objective(name, **params)
        settings = {k: v for k, v in params.items() if k in ("temperature", "similarity")}
        naive_times: dict[int, float] = {}
        # A batch-4 probe always runs: it calibrates the extrapolation for the larger batches.
        for b in sorted({PROBE_BATCH, *args.batches}):
            batch = make(b, seed=b)
            fast, loss = time_call(lambda: objective(batch), batch, args.reps)
            predicted = predict(naive_times, b)
            slow = None
            if predicted <= args.naive_budget:
                slow, expected = time_call(lambda: naive(*[objective.attention if k == "attention" else batch[k]
                                                            for k in inputs], **settings), batch, args.reps)
                assert torch.allclose(loss, expected, rtol=1e-4, atol=1e-5), (name, b, loss, expected)
                naive_times[b] = slow
            rows.append({"objective": name, "batch": b, "vectorised ms": fast * 1e3,
                         "naive ms": None if slow is None else slow * 1e3,
                         "speed-up": None if slow is None else slow / fast,
                         "note": "" if slow is not None else f"naive skipped (predicted {predicted:.0f} s)"})
            print(rows[-1], flush=True)
    table = markdown_table(rows, digits=2)
    text = (f"{machine.header('Objectives: vectorised vs naive loop')}float32 (a load above ~1 means other work "
            "shared the CPU and absolute times are inflated)\n\n"
            f"{__doc__.split(chr(10) + chr(10), 2)[2]}\nForward + backward per call, median of {args.reps} "
            "(a call over a second is not repeated). Wherever the naive reference ran, its loss was checked to "
            "agree with the vectorised one (allclose).\n\n" + table + "\n")
    print(text)
    harness.write(args.out, text)


if __name__ == "__main__":
    main()
