"""What the contrastive term does to the vector the classifier reads, in the first steps on PAWS-X (issue 52).

    .venv/bin/python benchmarks/feature_collapse.py                       # 4 variants × 25 steps, ~15 min
    .venv/bin/python benchmarks/feature_collapse.py --model tiny:bert --steps 3 --probe-rows 8   # a check, seconds

From one seed, on ``scl-pawsx``'s ``scl-ft`` batches (16 English pairs a step, each with one full translation; SCL at
λ = 1, τ = 1): ``ce``, CE alone; ``scl``, CE + SCL on Φ, the mean-pooled vector the head reads; ``scl-projection``, on
a projection head's g(Φ) (Khosla et al. 2020); ``scl-cls``, on Φ pooled at [s] (Wang et al. 2022, §3.3). Per variant:
the mean pairwise cosine of Φ (dropout off) over ``--probe-rows`` train and English dev pairs before and after (near
0: Φ spread over the sphere, off the direction CE builds its two classes along); the CE term of the last five steps,
the SCL term of the first and last five; the accuracy after. Writes benchmarks/feature_collapse.json.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

import harness
from xlt.logs import quiet_libraries
from xlt.report import markdown_table
from xlt.train import load_finetune_config, prepare
from xlt.train.batches import flatten_batch
from xlt.train.data import eval_rows
from xlt.train.workload import finetune_training

# The full translation of every pair into PAWS-X's other languages (Wang et al. 2022, §4.1's "full" view).
PAWSX_FULL_TRANS = "data.augment={t_f: 1, t_p: 0, t_c: 0, languages: [de, es, fr, ja, zh]}"
CONFIG = harness.REPO / "configs" / "finetune_pawsx.yaml"
SCL = "objectives=[{name: supervised_contrastive_alignment, weight: 1.0, params: {temperature: 1.0%s}}]"
VARIANTS = {"ce": [], "scl": [SCL % ""], "scl-projection": [SCL % ", projection: {'dims': [384, 128]}"],
            "scl-cls": [SCL % "", "model.pooling=cls"]}


@torch.no_grad()
def probe(training, rows: list[dict], label_index: dict[str, int]) -> tuple[float, float]:
    """(mean pairwise cosine of Φ over ``rows``, accuracy of the head on them), dropout off."""
    training.model.eval()
    batch = flatten_batch({key: [r[key] for r in rows] for key in rows[0]}, label_index)
    features, logits, _ = training.model(batch.texts)
    z = F.normalize(features.float(), dim=-1)
    cosine = float(((z @ z.T).sum() - len(z)) / (len(z) * (len(z) - 1)))
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
    label_index = {label: i for i, label in enumerate(cfg.task.labels)}
    batches = harness.view_batches(prepared, batch_size)[: args.steps]
    bare = {"views": None, "view_kinds": None, "view_langs": None, "view_pairs": None}
    probes = {"train": [{**r, **bare} for r in prepared.train[: args.probe_rows]],
              "dev": [{**r, **bare} for r in eval_rows(prepared.task, "dev")
                      if r["lang"] == cfg.task.source_lang][: args.probe_rows]}

    machine = harness.Machine()
    results = []
    for name in args.variants:
        variant = load_finetune_config(CONFIG, [*base, *VARIANTS[name]])
        variant = dataclasses.replace(variant, task=cfg.task)  # resolved labels and languages
        torch.manual_seed(cfg.optim.seed)
        training = finetune_training(variant, steps_per_epoch=len(batches))
        before = {split: probe(training, rows, label_index)[0] for split, rows in probes.items()}
        steps = []
        seconds, _ = harness.timed(lambda: steps.extend(harness.train_step(training, b, cfg.optim.max_grad_norm)
                                                        for b in batches))
        (train_cos, train_acc), (dev_cos, dev_acc) = (probe(training, rows, label_index) for rows in probes.values())
        ce = [step["ce"] for step in steps][-5:]
        scl = [step.get("supervised_contrastive_alignment", float("nan")) for step in steps]
        results.append({"variant": name, "cos Φ train, before": before["train"], "after": train_cos,
                        "cos Φ dev, before": before["dev"], "after ": dev_cos, "CE, last 5 steps": sum(ce) / len(ce),
                        "SCL, first": scl[0], "SCL, last 5": sum(scl[-5:]) / len(scl[-5:]), "train acc": train_acc,
                        "dev acc": dev_acc, "s a step": seconds / len(batches)})
        print(f"{name}: cos Φ {before['train']:.3f} -> {train_cos:.3f}, train acc {train_acc:.3f}, "
              f"dev acc {dev_acc:.3f}", flush=True)
    print(markdown_table(results, digits=3))
    harness.write(args.out, {**machine.fields(), "model": args.model, "steps": len(batches),
                             "probe_rows": args.probe_rows, "rows": results})


if __name__ == "__main__":
    main()
