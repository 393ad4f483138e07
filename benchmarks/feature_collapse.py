"""What the contrastive term does to the vector the classifier reads, in the first steps on PAWS-X (issue 52).

    .venv/bin/python benchmarks/feature_collapse.py                       # 4 variants × 25 steps, ~15 min
    .venv/bin/python benchmarks/feature_collapse.py --model tiny:bert --steps 3 --probe-rows 8   # a check, seconds

From the same seed, on the same batches (``scl-pawsx``'s ``scl-ft``: 16 English pairs a step, each with one full
translation, SCL at λ = 1, τ = 1): ``ce``, CE alone; ``scl``, CE + SCL on Φ, the mean-pooled vector the head reads;
``scl-projection``, SCL on a projection head's g(Φ) (Khosla et al. 2020); ``scl-cls``, SCL on Φ pooled at [s] (Wang
et al. 2022, §3.3). Per variant: the mean pairwise cosine of Φ (dropout off) over ``--probe-rows`` training pairs and
English dev pairs the runs never train on, before and after the steps; the CE term of the last five steps, the SCL
term of the first and last five; the accuracy on those pairs after. A cosine near 0 is Φ spread over the sphere by
the contrast: no longer the shared direction CE builds its two classes along. Writes benchmarks/feature_collapse.json.
"""

from __future__ import annotations

import dataclasses
import time

import torch
import torch.nn.functional as F

from encoder_passes import with_views
import harness
from xlt.logs import quiet_libraries
from xlt.report import markdown_table
from xlt.train import load_finetune_config, prepare
from xlt.train.batches import batches_of, flatten_batch
from xlt.train.data import eval_rows
from xlt.train.workload import finetune_training

# The full translation of every pair into PAWS-X's other languages (Wang et al. 2022, §4.1's "full" view).
PAWSX_FULL_TRANS = "data.augment={t_f: 1, t_p: 0, t_c: 0, languages: [de, es, fr, ja, zh]}"


def objective(name: str, weight: float, **params: float) -> str:
    """The override that makes ``name`` (weight ``weight``, its ``params``) the run's one objective."""
    inner = ", ".join(f"{k}: {v}" for k, v in params.items())
    return f"objectives=[{{name: {name}, weight: {weight}, params: {{{inner}}}}}]"


CONFIG = harness.REPO / "configs" / "finetune_pawsx.yaml"
SCL = {"temperature": 1.0}
VARIANTS = {
    "ce": [],
    "scl": [objective("supervised_contrastive_alignment", 1.0, **SCL)],
    "scl-projection": [objective("supervised_contrastive_alignment", 1.0, **SCL, projection={"dims": [384, 128]})],
    "scl-cls": [objective("supervised_contrastive_alignment", 1.0, **SCL), "model.pooling=cls"],
}


@torch.no_grad()
def probe(training, rows: list[dict], label_index: dict[str, int]) -> tuple[float, float]:
    """(mean pairwise cosine of Φ over ``rows``, accuracy of the head on them), dropout off."""
    training.model.eval()
    batch = flatten_batch({key: [r[key] for r in rows] for key in rows[0]}, label_index)
    features, logits, _ = training.model(batch.texts)
    z = F.normalize(features.float(), dim=-1)
    n = len(z)
    cosine = float(((z @ z.T).sum() - n) / (n * (n - 1)))
    accuracy = float((logits.argmax(-1) == batch.labels).float().mean())
    training.model.train()
    return cosine, accuracy


def main() -> None:
    parser = harness.parser(__doc__, "feature_collapse.json", data_dir=True)
    parser.add_argument("--model", default="bundled:multilingual-e5-small")
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--probe-rows", type=int, default=128, help="pairs whose features are compared")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = parser.parse_args()
    quiet_libraries()
    batch_size = 16
    base = [f"model.source={args.model}", f"data.data_dir={harness.data_root(args.data_dir)}",
            f"data.max_examples={max(args.steps * batch_size, args.probe_rows)}", f"optim.batch_size={batch_size}",
            "optim.epochs=1", PAWSX_FULL_TRANS]
    prepared = prepare(load_finetune_config(CONFIG, base))
    cfg = prepared.config
    torch.set_num_threads(cfg.scaling.torch_threads)
    rows = with_views(prepared.train, cfg, prepared.task)
    label_index = {label: i for i, label in enumerate(cfg.task.labels)}
    batches = [flatten_batch(b, label_index) for b in batches_of(rows, batch_size)][: args.steps]
    bare = {"views": None, "view_kinds": None, "view_langs": None, "view_pairs": None}
    originals = [{**r, **bare} for r in prepared.train[: args.probe_rows]]
    held = [{**r, **bare} for r in eval_rows(prepared.task, "dev")
            if r["lang"] == cfg.task.source_lang][: args.probe_rows]

    machine = harness.Machine()
    results = []
    for name in args.variants:
        variant = load_finetune_config(CONFIG, [*base, *VARIANTS[name]])
        variant = dataclasses.replace(variant, task=cfg.task)  # resolved labels and languages
        torch.manual_seed(cfg.optim.seed)
        training = finetune_training(variant, steps_per_epoch=len(batches))
        before_train, _ = probe(training, originals, label_index)
        before_dev, _ = probe(training, held, label_index)
        start = time.perf_counter()
        steps = [harness.train_step(training, batch, cfg.optim.max_grad_norm) for batch in batches]
        ce = [step["ce"] for step in steps]
        scl = [step.get("supervised_contrastive_alignment", float("nan")) for step in steps]
        seconds = time.perf_counter() - start
        after_train, train_acc = probe(training, originals, label_index)
        after_dev, dev_acc = probe(training, held, label_index)
        results.append({"variant": name, "cos Φ train, before": before_train, "after": after_train,
                        "cos Φ dev, before": before_dev, "after ": after_dev,
                        "CE, last 5 steps": sum(ce[-5:]) / len(ce[-5:]), "SCL, first": scl[0],
                        "SCL, last 5": sum(scl[-5:]) / len(scl[-5:]), "train acc": train_acc,
                        "dev acc": dev_acc, "s a step": seconds / len(batches)})
        print(f"{name}: cos Φ {before_train:.3f} -> {after_train:.3f}, train acc {train_acc:.3f}, "
              f"dev acc {dev_acc:.3f}", flush=True)

    print(f"\n## {args.model}, PAWS-X, {len(batches)} steps of {batch_size} pairs + one full translation each, "
          f"from {machine.date}\n")
    print(markdown_table(results, digits=3))
    print(f"\nmachine: {machine.line()}")
    harness.write(args.out, {**machine.fields(), "model": args.model, "steps": len(batches),
                             "probe_rows": args.probe_rows, "rows": results})


if __name__ == "__main__":
    main()
