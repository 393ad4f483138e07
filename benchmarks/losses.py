"""Time per call (forward + backward) of every objective vs its naive loop reference, at batch 16/64/256.

    python benchmarks/losses.py            # writes benchmarks/losses.md

"Batch" is the number of anchors: sentence objectives get B originals with two views each (N = 3B rows, 7 labels
like SIB-200; SA (Yu & Joty 2021, Eq. 4): each anchor with two same-label translations and two other-label sources,
N = 5B), parallel objectives B pairs, token objectives B pairs of 24 tokens with 8 aligned token pairs and 4 aligned
spans. The naive references, the tests' loop oracles (``tests/losses/naive_*.py``), are skipped where their time
extrapolated from a batch-4 probe and smaller batches exceeds ``--naive-budget`` seconds.
"""

from __future__ import annotations

import inspect
import math
import statistics
import sys
import time

import torch

import harness

sys.path.insert(0, str(harness.REPO))  # the naive references live with the tests that use them as oracles
from tests.losses import naive_parallel as NP
from tests.losses import naive_sentence as NS
from xlt.losses import build_objective
from xlt.report import markdown_table

DIM, TOKENS, ALIGNED, SPANS = 128, 24, 8, 4


def view_batch(b: int, seed: int) -> dict[str, torch.Tensor]:
    return NS.random_view_batch([2] * b, n_labels=7, dim=DIM, seed=seed, dtype=torch.float32)


def alignment_batch(b: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(7, (b,), generator=g)
    return {"features": torch.randn(5 * b, DIM, generator=g).requires_grad_(),
            "labels": torch.stack([y, y, y, (y + 1) % 7, (y + 2) % 7], dim=1).reshape(-1),
            "group": (torch.arange(b) * 5).repeat_interleave(5), "is_anchor": torch.arange(5 * b) % 5 == 0}


def parallel_batch(b: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(b, DIM, generator=g)
    views = [src, *(src + 0.5 * torch.randn(b, DIM, generator=g) for _ in range(3))]
    names = ("src_features", "tgt_features", "src_noisy_features", "tgt_noisy_features")
    return {k: v.requires_grad_() for k, v in zip(names, views)}


def token_batch(b: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    positions = torch.stack([torch.randperm(TOKENS - 2, generator=g)[:ALIGNED] + 1 for _ in range(2 * b)]).view(2, -1)
    alignment = torch.stack([torch.arange(b).repeat_interleave(ALIGNED), *positions], dim=1)  # pair, src, tgt
    starts = (torch.arange(SPANS) * 5 + 1).repeat(b)
    spans = torch.stack([torch.arange(b).repeat_interleave(SPANS), starts, starts + 3], dim=1)
    mask = torch.ones(b, TOKENS, dtype=torch.long)
    return {"src_tokens": torch.randn(b, TOKENS, DIM, generator=g).requires_grad_(),
            "tgt_tokens": torch.randn(b, TOKENS, DIM, generator=g).requires_grad_(), "src_mask": mask,
            "tgt_mask": mask.clone(), "alignment": alignment, "src_spans": spans, "tgt_spans": spans.clone()}


# name, constructor params, input builder; the naive reference ``naive_<name>`` gets what its signature names.
CASES = [
    ("multiview_alignment", {"similarity": "cosine"}, view_batch),
    ("contrastive_alignment", {"temperature": 1.0}, view_batch),
    ("supervised_contrastive_alignment", {"temperature": 1.0}, view_batch),
    ("label_alignment", {"temperature": 1.0}, view_batch),
    ("semantic_alignment", {"temperature": 1.0}, alignment_batch),
    ("parallel_info_nce", {"temperature": 0.07}, parallel_batch),
    ("cross_zero_nce", {"temperature": 0.07}, parallel_batch),
    ("noisy_sentence_contrast", {"temperature": 0.1}, parallel_batch),
    ("token_alignment", {"temperature": 0.1}, token_batch),
    ("word_hard_contrast", {"temperature": 0.1}, token_batch),
    ("word_soft_contrast", {"embed_dim": DIM, "num_heads": 8, "temperature": 0.1}, token_batch),
    ("span_contrast", {"temperature": 0.1}, token_batch),
]


def time_call(fn, batch: dict, reps: int) -> tuple[float, torch.Tensor]:
    """(median seconds of forward + backward, the loss); a call slower than a second is not repeated."""
    times: list[float] = []
    while len(times) < reps and not (times and times[-1] > 1.0):
        for v in batch.values():
            v.grad = None
        start = time.perf_counter()
        loss = fn()
        loss.backward()
        times.append(time.perf_counter() - start)
    return statistics.median(times), loss.detach()


def predict(times: dict[int, float], b: int) -> float:
    """Naive seconds at batch ``b``, extrapolated with the growth seen so far (quadratic until two points)."""
    sizes = sorted(times)[-2:]
    exponent = 2.0
    if len(sizes) == 2:  # noisy timings: keep the exponent sane
        exponent = min(3.0, max(1.0, math.log(times[sizes[1]] / times[sizes[0]]) / math.log(sizes[1] / sizes[0])))
    return times[sizes[-1]] * (b / sizes[-1]) ** exponent if sizes else 0.0


def main() -> None:
    parser = harness.parser(__doc__, "losses.md")
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--naive-budget", type=float, default=30.0, help="seconds a single naive call may take")
    args = parser.parse_args()
    torch.set_num_threads(2)
    machine = harness.Machine()
    rows = []
    for name, params, make in CASES:
        objective = build_objective(name, **params)
        naive = getattr(NS, f"naive_{name}", None) or getattr(NP, f"naive_{name}")
        naive_times: dict[int, float] = {}
        for b in sorted({4, *args.batches}):  # a batch-4 probe calibrates the extrapolation to larger batches
            batch = make(b, seed=b)
            fast, loss = time_call(lambda: objective(batch), batch, args.reps)
            predicted = predict(naive_times, b)
            row = {"objective": name, "batch": b, "vectorised ms": fast * 1e3, "naive ms": None, "speed-up": None,
                   "note": f"naive skipped (predicted {predicted:.0f} s)"}
            if predicted <= args.naive_budget:
                given = {**batch, "values": batch.get("features"), "attention": getattr(objective, "attention", None)}
                given = {k: v for k, v in {**given, **params}.items() if k in inspect.signature(naive).parameters}
                slow, expected = time_call(lambda: naive(**given), batch, args.reps)
                assert torch.allclose(loss, expected, rtol=1e-4, atol=1e-5), (name, b, loss, expected)
                naive_times[b] = slow
                row.update({"naive ms": slow * 1e3, "speed-up": slow / fast, "note": ""})
            rows.append(row)
            print(row, flush=True)
    harness.write(args.out, "\n\n".join([
        machine.header("Objectives: vectorised vs naive loop") + "float32.", __doc__.split("\n\n", 2)[2].strip(),
        f"Forward + backward per call, median of {args.reps} (a call over a second is not repeated). Where the naive "
        "reference ran, its loss agreed with the vectorised one (allclose).", markdown_table(rows, digits=2) + "\n"]),
        show=True)


if __name__ == "__main__":
    main()
