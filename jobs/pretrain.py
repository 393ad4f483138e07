"""Contrastive alignment pretraining on parallel text with Ray Train; the result is a ``local:`` encoder.

    python jobs/pretrain.py --config configs/pretrain_veco2.yaml
    python jobs/pretrain.py --config configs/pretrain_ml_ctl.yaml --set optim.grad_accum_steps=4
    python jobs/pretrain.py --config configs/pretrain_mgc.yaml --set scaling.num_workers=2
    python jobs/pretrain.py --resume results/pretrain/veco2-e5 --set optim.epochs=3
    python jobs/pretrain.py --smoke
    ray job submit --working-dir . -- python jobs/pretrain.py --config configs/pretrain_veco2.yaml

Recipes (``recipe:``): ``ml-ctl`` (Chen et al. 2022: CZ-NCE or InfoNCE over concatenated contextual
embeddings of word-positioned samples + α·MLM), ``mgc`` (Li et al. 2021: word hard/soft, span and
noisy-sentence contrast + MLM on concatenated pairs), ``veco2`` (Zhang et al. 2023: sequence + token
contrast + TLM), or ``custom`` with any weighted ``objectives``. Parallel pairs come from
Tatoeba, SIB-200 train rows joined on ``index_id``, JSONL/TSV/CSV/Parquet files or Hugging Face
datasets, mixed with q_i ∝ p_i^α; Tatoeba accuracy on held-apart languages after every epoch.

Checkpoints (one per epoch) and ``config.yaml`` go to ``output.dir``;
running the same command again resumes that run, ``--resume DIR`` continues it from its saved
config. Each checkpoint holds ``encoder/``, the encoder as a ``local:`` model:

    python jobs/finetune.py --set model.source=local:<checkpoint>/encoder

``--smoke`` merges configs/pretrain_smoke.yaml over the preset: tiny:bert, a few Tatoeba pairs,
2 epochs, into ``results/smoke/<preset>``. Prints a line per epoch on stderr, then the language mixture and the Tatoeba table on
stdout, and writes ``results.json`` into the run directory. Ray: $RAY_ADDRESS or ``--address``,
else a new local instance.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from xlt.cli import epilogue, init_ray, job_overrides, resumable_job_args, run_job

if TYPE_CHECKING:  # annotations only: the modules load after the arguments
    from xlt.tracking import Tracker

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
DEFAULT_PRESET = CONFIGS / "pretrain_veco2.yaml"
SMOKE_PRESET = CONFIGS / "pretrain_smoke.yaml"


def main() -> None:
    args = resumable_job_args(__doc__)
    # After the arguments: --help answers before torch and Ray are imported.
    from xlt.engine import run_dir
    from xlt.logs import configure_logging, quiet_libraries
    from xlt.pretrain.config import load_pretrain_config
    from xlt.pretrain.trainer import build_trainer, prepare, resume_config
    from xlt.tracking import Tracker

    quiet_libraries()
    configure_logging(args.verbose)
    overrides = job_overrides(args)
    if args.resume:
        cfg = resume_config(args.resume, overrides)
    else:
        cfg = load_pretrain_config(args.config or DEFAULT_PRESET, overrides,
                                   smoke=SMOKE_PRESET if args.smoke else None)

    init_ray(args.address, args.verbose)
    prepared = prepare(cfg)
    cfg = prepared.config
    with Tracker("pretrain", cfg.output.name, run_dir(cfg), enabled=args.tracking) as tracker:
        tracker.params(cfg)
        result = build_trainer(prepared, callbacks=tracker.callbacks()).fit()
        print_results(prepared, result, tracker)


def print_results(prepared, result, tracker: Tracker) -> None:
    from xlt.engine import RESULTS_FILE, final_metrics, run_dir
    from xlt.eval.evaluators import TATOEBA
    from xlt.metrics import per_language
    from xlt.pretrain.trainer import encoder_dir
    from xlt.report import markdown_table, write_results
    from xlt.storage import join, staged

    cfg = prepared.config
    metrics = final_metrics(result)  # a finished run's rerun reports none: its last checkpoint's
    tatoeba = [{"lang": lang, "accuracy": value} for lang, value in per_language(metrics, "val", TATOEBA).items()]
    encoder = encoder_dir(join(run_dir(cfg), Path(result.checkpoint.path).name))  # local, or on the store
    print(f"\n## {cfg.output.name}: {cfg.recipe} ({', '.join(cfg.objective_names)}) from {cfg.model.source}\n")
    print(f"### Training pairs (q_i ∝ p_i^{cfg.data.alpha}; {prepared.mixture.excluded} excluded as evaluation "
          f"sentences; {cfg.data.train_rows} annotated)\n\n{markdown_table(prepared.mixture.rows())}\n")
    if tatoeba:
        print(f"### Tatoeba accuracy after epoch {cfg.optim.epochs} (held apart)\n\n{markdown_table(tatoeba)}\n")
    with staged(run_dir(cfg)) as out:  # beside the checkpoints, local or on a store
        tracker.artifacts(write_results(out / RESULTS_FILE, {
            "mixture": prepared.mixture.rows(), "excluded": prepared.mixture.excluded, "tatoeba": tatoeba,
            "metrics": metrics, "checkpoint": result.checkpoint.path, "encoder": str(encoder),
            "config": asdict(cfg)}))
    path = join(run_dir(cfg), RESULTS_FILE)
    tracker.tag("xlt.checkpoint", result.checkpoint.path)
    tracker.tag("xlt.encoder", f"local:{encoder}")
    print(epilogue({"results": path, "checkpoint": result.checkpoint.path, "encoder": f"local:{encoder}"},
                   f"python jobs/pretrain.py --resume {run_dir(cfg)}  (more epochs: --set optim.epochs=N)",
                   tracker.how_to_look()))


if __name__ == "__main__":
    run_job(main)
