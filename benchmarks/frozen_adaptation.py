"""Screening for issue 71: the frozen e5 probe, adapted to each target language without its labels.

    python benchmarks/frozen_adaptation.py                      # SIB-200 at the demo's 150 labels, and NusaX
    python benchmarks/frozen_adaptation.py --tasks nusax --pools disjoint --out /tmp/fa.md

Rows: a study's (``xlt.study.recipes``): the demo's draw (``configs/cotrain_demo.yaml``: 150 English sentences; Arabic,
Japanese, Swahili, 200 test and 200 pool sentences each) and NusaX's (``configs/finetune_nusax.yaml``: 500 English
reviews; ten local languages, 400 test and 500 pool reviews each). Features: the bundled multilingual-e5-small's
normalised embeddings. Logistic-regression probes, C chosen on English dev as the study's probe arm: on the embeddings
as they are; language-centred (``xlt.eval.adaptation``: each language's mean removed, English's of its labelled rows, a
target's of its pool); with class-balanced self-training; both. The job's pool holds translations of the English rows
the probe learns from, which may favour centring; the disjoint pool is the control. A screen: one draw of rows
(deterministic probes), not three seeds. Accuracy; the target columns are reported, never used to choose.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import harness
from xlt.report import markdown_table

C_GRID = (0.1, 1, 10, 100)
SCHEDULES = ((1, 0.5), (3, 0.5), (3, 0.8))  # (rounds, fraction)
POOLS = {"job": "the job's pool: each target's translations of the English train rows the job draws",
         "disjoint": "a disjoint pool: no translation of an English row the probe learns from (SIB-200: 200 other "
                     "train sentences a language; NusaX: each target's 100 valid reviews)"}
NAMES = {"sib150": "SIB-200, the demo's 150 labels (Arabic, Japanese, Swahili)", "nusax": "NusaX (ten local languages)"}


def task_rows(which: str, pool: str):
    """The study's rows of ``which`` and each target language's unlabelled pool (``POOLS``; labels never read)."""
    from xlt.cotrain.config import load_cotrain_config
    from xlt.cotrain.probes import cotrain_rows
    from xlt.data.sample import sample
    from xlt.eval.baselines import finetune_rows
    from xlt.train import load_finetune_config

    if which == "sib150":
        cfg = load_cotrain_config(harness.REPO / "configs" / "cotrain_demo.yaml", [])
        rows = cotrain_rows(cfg)
    else:
        cfg = load_finetune_config(harness.REPO / "configs" / "finetune_nusax.yaml", [])
        rows = finetune_rows(cfg, "test")
    task, n = rows.task, cfg.data.max_examples
    if pool == "job":
        return rows, {lang: task.examples("pool", lang, n) for lang in task.target_langs}
    if which == "nusax":  # all 500 English train reviews are labelled: the targets' valid split, 100 reviews each
        return rows, {lang: task.examples("dev", lang) for lang in task.target_langs}
    # SIB-200: a target's train sentences outside the job's English draw (its 150 labelled sentences among them);
    # a row's index is its place in its split, the same for its translation in every language.
    index = lambda example: example.id.rsplit("/", 1)[-1]  # noqa: E731
    drawn = {index(ex) for ex in task.examples("train", task.source_lang, n)}
    return rows, {lang: sample([ex for ex in task.examples("pool", lang) if index(ex) not in drawn], n, key=index)
                  for lang in task.target_langs}


def screen(which: str, pool: str, cache: Path) -> list[dict]:
    from xlt.eval.adaptation import ProbeAdaptation, adapted_probe
    from xlt.models import load_encoder

    rows, pool_rows = task_rows(which, pool)
    task, encoder = rows.task, None

    def features(name: str, examples) -> np.ndarray:
        """Normalised e5 embeddings of ``examples``, computed once and cached as ``<task>-<name>.npy``."""
        nonlocal encoder
        path = cache / f"{which}-{name}.npy"
        if not path.is_file():
            encoder = encoder or load_encoder(rows.model)
            start = time.perf_counter()
            x = encoder.encode([ex.text for ex in examples], batch_size=64, normalize=True, progress=False)
            print(f"{which} {name}: {len(examples)} rows embedded in {time.perf_counter() - start:.0f} s", flush=True)
            cache.mkdir(parents=True, exist_ok=True)
            np.save(path, x)
        return np.load(path)

    labels = lambda examples: np.array([task.labels.index(ex.label) for ex in examples])  # noqa: E731
    x_train, y_train = features("train", rows.train), labels(rows.train)
    x_dev, y_dev = features("dev", rows.dev), labels(rows.dev)
    tests = {lang: (features(f"test-{lang}", rows.scored[lang]), labels(rows.scored[lang])) for lang in task.langs}
    pools = {lang: features(f"{'' if pool == 'job' else pool + '-'}pool-{lang}", examples)
             for lang, examples in pool_rows.items()}
    results = []
    for view, center in (("as they are", False), ("language-centred", True)):
        arms = [("probe", ProbeAdaptation(center))]
        arms += [(f"self-training, {r} round{'s' * (r > 1)}, fraction {f}", ProbeAdaptation(center, r, f))
                 for r, f in SCHEDULES]
        for arm, adapt in arms:
            probe = adapted_probe(x_train, y_train, x_dev, y_dev, task.source_lang, pools, adapt, C_GRID)
            accuracy = {lang: float(np.mean(probe.predict(x, lang) == y)) for lang, (x, y) in tests.items()}
            results.append({"features": view, "arm": arm, "C": f"{probe.c:g}",
                            "en dev": f"{np.mean(probe.predict(x_dev, task.source_lang) == y_dev):.3f}",
                            "en test": f"{accuracy[task.source_lang]:.3f}",
                            "avg target": f"{np.mean([accuracy[lang] for lang in pools]):.3f}",
                            **{lang: f"{accuracy[lang]:.2f}" for lang in pools}})
            print(results[-1], flush=True)
    return results


def main() -> None:
    parser = harness.parser(__doc__, "frozen_adaptation.md")
    parser.add_argument("--tasks", nargs="+", default=["sib150", "nusax"], choices=["sib150", "nusax"])
    parser.add_argument("--pools", nargs="+", default=list(POOLS), choices=list(POOLS))
    parser.add_argument("--cache", type=Path, default=harness.REPO / "results" / "benchmarks" / "frozen_adaptation")
    args = parser.parse_args()
    machine = harness.Machine()
    text = [machine.header("The frozen e5 probe, adapted to each target language without its labels (issue 71 screen)"),
            __doc__.split("\n\n", 2)[2].strip()]
    for which in args.tasks:
        for pool in args.pools:
            text += ["", f"## {NAMES[which]}; {POOLS[pool]}", "", markdown_table(screen(which, pool, args.cache))]
    harness.write(args.out, "\n".join(text) + "\n", show=True)


if __name__ == "__main__":
    main()
