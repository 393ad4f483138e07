"""Contrastive alignment pretraining of the bundled e5 (issue 7): Tatoeba before/after on held-apart languages
(fr/ar/sw) and SIB-200 zero-shot transfer after fine-tuning, for three recipes and InfoNCE vs CZ-NCE at a small batch.
Each variant is ``jobs/pretrain.py``'s run of a ``configs/pretrain_*.yaml`` preset with its ``VARIANTS`` overrides,
then ``jobs/finetune.py``'s of ``configs/finetune_sib200.yaml`` on the exported encoder. Runs live under
``results/pretrain_alignment[-quick][-pairs<N>]/`` and resume from their latest checkpoint; a finished one is read back.
Evaluation never sees trained sentences: pairs holding a Tatoeba fr/ar/sw or SIB-200 dev/test sentence are dropped.

    python benchmarks/pretrain_alignment.py --pairs 500    # -> benchmarks/pretrain_alignment.md, .json; hours
    python benchmarks/pretrain_alignment.py --quick --model tiny:bert --only veco2   # a check of the script
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import harness
from xlt.eval.evaluators import EvalContext, EvalSpec, retrieval
from xlt.logs import quiet_libraries
from xlt.metrics import AVG_TARGET
from xlt.models import EncoderConfig, load_encoder
from xlt.pretrain import trainer as pretraining
from xlt.pretrain.config import load_pretrain_config
from xlt.pretrain.parallel import evaluation_rows
from xlt.report import markdown_table
from xlt.train import build_trainer, load_finetune_config, results_rows

CONFIGS = harness.REPO / "configs"
MODEL = "bundled:multilingual-e5-small"
TARGETS = ("ar", "de", "es", "fr", "hi", "ja", "ru", "sw", "zh")
HELD_APART = ("fr", "ar", "sw")
SMALL_BATCH = ("optim.batch_size=8", "optim.grad_accum_steps=1")  # Chen et al. 2022, §3: CZ-NCE is for small batches

# name -> (label, pretraining preset or None, overrides)
VARIANTS: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
    "base": ("no pretraining", None, ()),
    "ml-ctl-cz": ("ML-CTL, CZ-NCE, batch 8", "pretrain_ml_ctl.yaml", SMALL_BATCH),
    "ml-ctl-info": ("ML-CTL, InfoNCE, batch 8", "pretrain_ml_ctl.yaml",
                    (*SMALL_BATCH, "objectives[0].name=parallel_info_nce")),
    "mgc": ("MGC", "pretrain_mgc.yaml", ()),
    "veco2": ("VECO 2.0", "pretrain_veco2.yaml", ()),
}
QUICK_PRETRAIN = ("data.max_pairs=32", "data.eval_max_pairs=200", "optim.log_every_steps=5")
QUICK_FINETUNE = ("optim.epochs=1", "data.max_examples=64")


def tatoeba(model_cfg, data) -> dict[str, float]:
    """``val/tatoeba/<lang>`` and ``/avg`` on a ``PretrainData``'s held-apart pairs, as pretraining measures them."""
    rows = evaluation_rows(data, harness.data_root())
    columns = {key: [r[key] for r in rows] for key in ("lang", "src", "tgt")}
    spec = EvalSpec("retrieval", "val", data="tatoeba")
    return retrieval(load_encoder(model_cfg), columns, spec, EvalContext()).metrics


def pretrain(variant: str, storage: Path, quick: bool, model: str, pairs: int) -> dict:
    _, preset, overrides = VARIANTS[variant]
    overrides = [*overrides, *(QUICK_PRETRAIN if quick else ()), *([f"data.max_pairs={pairs}"] if pairs else ()),
                 f"model.source={model}", f"output.dir={storage}/{variant}"]
    cfg = load_pretrain_config(CONFIGS / preset, overrides)
    before = tatoeba(cfg.model, cfg.data)
    prepared = pretraining.prepare(cfg)
    start = time.monotonic()
    result = pretraining.build_trainer(prepared).fit()
    history = result.metrics_dataframe
    per_epoch = [{k: float(row[k]) for k in history.columns if k.startswith("val/tatoeba/")}
                 for _, row in history.iterrows()]
    o = cfg.optim
    objectives = " + ".join(f"{x.weight:g}·{x.name}" + (f"({', '.join(f'{k}={v}' for k, v in x.params.items())})"
                                                         if x.params else "") for x in cfg.objectives)
    settings = (f"{objectives}; lr {o.lr:g}, {o.batch_size} pairs x {o.grad_accum_steps} accumulated, "
                f"{o.epochs} epoch(s), max_length {cfg.model.max_length}")
    return {"source": f"local:{pretraining.encoder_dir(result.checkpoint.path)}", "overrides": overrides,
            "settings": settings, "minutes": (time.monotonic() - start) / 60,
            "train_pairs": prepared.config.data.train_rows, "excluded": prepared.mixture.excluded,
            "mixture": prepared.mixture.rows(), "steps": result.metrics["train/global_step"],
            "final_losses": {k: v for k, v in result.metrics.items() if k.startswith("train/loss")},
            "tatoeba_before": before, "tatoeba_per_epoch": per_epoch,
            "tatoeba_after": {k: v for k, v in result.metrics.items() if k.startswith("val/tatoeba/")}}


def finetune(variant: str, source: str, storage: Path, quick: bool) -> dict:
    overrides = [f"model.source={source}", f"output.dir={storage}/{variant}-sib200",
                 "optim.log_every_steps=0", *(QUICK_FINETUNE if quick else ())]
    trainer = build_trainer(load_finetune_config(CONFIGS / "finetune_sib200.yaml", overrides))
    start = time.monotonic()
    result = trainer.fit()
    return {"finetune_overrides": overrides, "finetune_minutes": (time.monotonic() - start) / 60,
            "rows": results_rows(result.metrics, trainer.config.task.source_lang)}


def run(variant: str, storage: Path, quick: bool, model: str, pairs: int) -> dict:
    """Pretrain (unless ``base``: the bundled e5 itself) and fine-tune one variant, or read back its record."""
    def record() -> dict:
        if VARIANTS[variant][1] is not None:
            pretrained = pretrain(variant, storage, quick, model, pairs)
        else:
            held = [f"data.eval_langs=[{', '.join(HELD_APART)}]", f"data.eval_max_pairs={200 if quick else 0}"]
            data = load_pretrain_config(CONFIGS / "pretrain_veco2.yaml", held).data
            pretrained = {"source": model, "tatoeba_before": tatoeba(EncoderConfig(source=model), data)}
        return {"variant": variant, **pretrained, **finetune(variant, pretrained["source"], storage, quick)}

    return harness.stored(storage / variant / "benchmark.json", record)


def accuracy(record: dict, lang: str) -> float:
    # "test acc" since results tables carry macro-F1 too; runs stored before that have "test".
    return next(row.get("test acc", row.get("test")) for row in record["rows"] if row["lang"] == lang)


def report(records: list[dict], machine: harness.Machine, quick: bool) -> str:
    labels = {name: label for name, (label, _, _) in VARIANTS.items()}
    tatoeba_rows = [{"variant": labels[r["variant"]],
                     **{f"{lang} {when}": r.get(f"tatoeba_{when}", {}).get(f"val/tatoeba/{lang}")  # base: no "after"
                        for lang in (*HELD_APART, "avg") for when in ("before", "after")}} for r in records]
    sib = [{"test acc": lang, **{labels[r["variant"]]: accuracy(r, lang) for r in records}}
           for lang in ("en", *TARGETS, AVG_TARGET, "transfer_gap")]
    runs = [{"variant": labels[r["variant"]], "train pairs": r.get("train_pairs"), "steps": r.get("steps"),
             "pretrain min": r.get("minutes"), "finetune min": r["finetune_minutes"],
             **{"loss" if k == "train/loss" else k.rsplit("/", 1)[1]: v for k, v in r.get("final_losses", {}).items()}}
            for r in records]
    settings = [f"- {labels[r['variant']]}: {r['settings']}" for r in records if "settings" in r]
    return "\n\n".join([
        machine.header("Alignment pretraining: Tatoeba and SIB-200 transfer" + (" (quick)" if quick else "")).rstrip(),
        "## Tatoeba accuracy on held-apart languages (mean of xx→en and en→xx)", markdown_table(tatoeba_rows),
        "## SIB-200 test accuracy after fine-tuning on English (configs/finetune_sib200.yaml)", markdown_table(sib),
        "## Runs", markdown_table(runs, columns=list(dict.fromkeys(k for r in runs for k in r))),  # base: no losses
        *(["## Pretraining settings", "\n".join(settings)] if settings else []),
    ]) + "\n"


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--only", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--quick", action="store_true", help="32 pairs per language pair, 200 Tatoeba pairs, "
                                                             "1 fine-tuning epoch on 64 examples per language")
    parser.add_argument("--pairs", type=int, default=0, help="data.max_pairs (default: the preset's, every pair)")
    parser.add_argument("--model", default=MODEL, help="the encoder to start from (tiny:bert to test the script)")
    parser.add_argument("--storage", type=Path, help="default results/pretrain_alignment[-quick][-pairs<N>]")
    parser.add_argument("--out", type=Path, help="default benchmarks/pretrain_alignment[_quick] (.md and .json)")
    args = parser.parse_args()
    os.environ["XLT_DATA_DIR"] = str(harness.data_root())  # the jobs' configs read it
    suffix = "-quick" if args.quick else ""
    # finished variants are read back from storage: runs on other data must not share it
    runs = f"pretrain_alignment{suffix}" + (f"-pairs{args.pairs}" if args.pairs else "")
    storage = (args.storage or harness.REPO / "results" / runs).resolve()
    out = args.out or harness.HERE / f"pretrain_alignment{suffix.replace('-', '_')}"
    quiet_libraries()
    machine, records = harness.Machine(), []
    with harness.local_ray(2):
        for variant in args.only:
            records.append(run(variant, storage, args.quick, args.model, args.pairs))
            print(f"{variant}: SIB-200 avg_target {accuracy(records[-1], AVG_TARGET):.3f}", flush=True)
    harness.write(out.with_suffix(".json"), {**machine.fields(), "records": records})
    harness.write(out.with_suffix(".md"), report(records, machine, args.quick), show=True)


if __name__ == "__main__":
    main()
