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

from pathlib import Path

from xlt.cli import epilogue, init_ray, job_overrides, resumable_job_args, run_job

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
DEFAULT_PRESET = CONFIGS / "pretrain_veco2.yaml"
SMOKE_PRESET = CONFIGS / "pretrain_smoke.yaml"


def main() -> None:
    args = resumable_job_args(__doc__)
    # After the arguments: --help answers before torch and Ray are imported.
    from xlt.engine import run_dir
    from xlt.pretrain.finish import finish_pretrain
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

    if args.dry_run:
        return plan(cfg)
    init_ray(args.address, args.verbose)
    prepared = prepare(cfg)
    cfg = prepared.config
    with Tracker("pretrain", cfg.output.name, run_dir(cfg), enabled=args.tracking) as tracker:
        tracker.params(cfg)
        finished = finish_pretrain(prepared, build_trainer(prepared, callbacks=tracker.callbacks()).fit(), tracker)
        print("\n" + finished.text)
        print(epilogue(finished.outputs, f"python jobs/pretrain.py --resume {run_dir(cfg)}  "
                       "(more epochs: --set optim.epochs=N)", tracker.how_to_look()))


def plan(cfg) -> None:
    """``--dry-run``: where the run would write, its parallel pairs (drawn as the run draws them), model and steps."""
    from xlt.cli import dry_run
    from xlt.data import resolve_data_dir
    from xlt.engine import run_dir
    from xlt.engine.runs import run_state
    from xlt.models.sources import availability
    from xlt.pretrain.parallel import build_mixture

    mixture = build_mixture(cfg.data, resolve_data_dir(cfg.data.data_dir), cfg.optim.seed)
    dry_run("pretrain", run_dir(cfg), run_state(cfg), cfg, {
        "pairs": f"{len(mixture.pairs)} parallel pairs: " + ", ".join(f"{k} {v}" for k, v in mixture.drawn.items()),
        "model": availability(cfg.model.source),
        "plan": f"{cfg.recipe} ({', '.join(cfg.objective_names)}): {cfg.optim.epochs} epoch(s), batch "
                f"{cfg.optim.batch_size}; Ray started",
    })


if __name__ == "__main__":
    run_job(main)
