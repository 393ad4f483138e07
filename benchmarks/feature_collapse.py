"""What the contrastive term does to the vector the classifier reads, in the first steps on PAWS-X.

    .venv/bin/python benchmarks/feature_collapse.py                       # 4 variants × 25 steps, ~15 min
    .venv/bin/python benchmarks/feature_collapse.py --model tiny:bert --steps 3 --probe-rows 8   # a check, seconds

Issue 52's diagnosis of CE + SCL at chance on PAWS-X (``benchmarks/fidelity/scl-pawsx.md``): from
the same initialisation, 25 steps of CE alone raise the mean pairwise cosine of the pooled
features of the training pairs, while CE + SCL drives it towards 0, and afterwards CE fits the
training pairs and not the test. This repeats that measurement for the settings the issue names
as candidate causes, each from the same seed, on the same batches (``scl-pawsx``'s ``scl-ft``
setting: 16 English pairs a step, each with one full translation, SCL at λ = 1, τ = 1):

- ``ce``: CE alone;
- ``scl``: CE + SCL on Φ, the mean-pooled vector the linear head reads (xlt's setting until issue 52);
- ``scl-projection``: CE + SCL on g(Φ), a projection head of its own (``params.projection``,
  Khosla et al. 2020's setting; the head still reads Φ);
- ``scl-cls``: CE + SCL on Φ pooled at [s] (``model.pooling=cls``, Wang et al. 2022, §3.3's
  contrasted state, without XLM-R head's dense + tanh layer).

Reported per variant: the mean pairwise cosine of Φ over ``--probe-rows`` training pairs (dropout
off) before and after the steps, and the same of the English dev pairs ``dev[1200:]`` the runs
never train on; the CE term of the last five steps, the SCL term (unweighted) of the first and
the last five; and the accuracy on those training and dev pairs after the steps. A cosine near 0 is Φ spread over the sphere by the contrast: no longer
the shared direction CE builds its two classes along.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from encoder_passes import with_views
import harness
from xlt.data import resolve_data_dir
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


REPO = Path(__file__).resolve().parents[1]
SCL = {"temperature": 1.0}
VARIANTS = {
    "ce": [],
    "scl": [objective("supervised_contrastive_alignment", 1.0, **SCL)],
    "scl-projection": [objective("supervised_contrastive_alignment", 1.0, **SCL, projection={"dims": [384, 128]})],
    "scl-cls": [objective("supervised_contrastive_alignment", 1.0, **SCL), "model.pooling=cls"],
}


def get_args() -> argparse.Namespace:
    parser = harness.parser(__doc__, "feature_collapse.json", data_dir=True)
    parser.add_argument("--model", default="bundled:multilingual-e5-small")
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--probe-rows", type=int, default=128, help="pairs whose features are compared")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    return parser.parse_args()


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
    args = get_args()
    quiet_libraries()
    batch_size = 16
    base = [f"model.source={args.model}", f"data.data_dir={resolve_data_dir(args.data_dir)}",
            f"data.max_examples={max(args.steps * batch_size, args.probe_rows)}", f"optim.batch_size={batch_size}",
            "optim.epochs=1", PAWSX_FULL_TRANS]
    prepared = prepare(load_finetune_config(REPO / "configs" / "finetune_pawsx.yaml", base))
    cfg = prepared.config
    torch.set_num_threads(cfg.scaling.torch_threads)
    rows = with_views(prepared.train, cfg, prepared.task)
    label_index = {label: i for i, label in enumerate(cfg.task.labels)}
    batches = [flatten_batch(b, label_index) for b in batches_of(rows, batch_size)][: args.steps]
    originals = [{**r, "views": None, "view_kinds": None, "view_langs": None, "view_pairs": None}
                 for r in prepared.train[: args.probe_rows]]
    held = [{**r, "views": None, "view_kinds": None, "view_langs": None, "view_pairs": None}
            for r in eval_rows(prepared.task, "dev") if r["lang"] == cfg.task.source_lang][: args.probe_rows]

    machine = harness.Machine()
    results = []
    for name in args.variants:
        variant = load_finetune_config(REPO / "configs" / "finetune_pawsx.yaml", [*base, *VARIANTS[name]])
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
