"""Label a corpus with a trained classifier: a fine-tuning checkpoint or run, a co-training learner, a
sweep's best trial or an export.

    python jobs/predict.py --set model.path=results/finetune/sib200-e5-zero-shot \\
        --set input.path=corpus.jsonl --set input.lang_field=lang --set output.dir=results/predict/corpus
    python jobs/predict.py --set model.path=results/cotrain/demo --set model.learner=emb ...
    python jobs/predict.py --set model.path=results/sweeps/scl ...   # the sweep's best trial
    python jobs/predict.py --set input.path=pairs.csv --set input.pair_field=hypothesis --set input.text_field=premise ...
    python jobs/predict.py --set format=csv ...        # parquet (default), csv, jsonl; output.dir may be s3://
    python jobs/predict.py --smoke                     # the fine-tuning smoke run's model (jobs/finetune.py --smoke)

Input: a corpus of any size (``input.path``: a file, a directory of files or a glob, local or ``s3://``; text
(one per line), CSV, TSV, JSONL or Parquet by suffix, ``.gz`` or ``.zst`` or not; ``input.text_field``,
``input.pair_field``, ``input.id_field``, each row's language in ``input.lang_field`` or the file's in
``input.lang``), or a task's split (``input.task``, ``input.split``). The rows stream through the driver shard by
shard, each checked as it passes (a bad row is an error at its ``file:line`` before its shard is written, or with
``input.on_bad_row: skip`` left out into the shard's ``_rejected.jsonl``); rows without an id get ``<file>:<line>``.
Output: ``<output.dir>/predictions/shard-*/`` in ``format``, one row per input row (id, lang, text, label,
confidence, p_<label>), written shard by shard: run the same command again after a stop and the
complete shards are kept (``xlt.predict.writer``). Labelled by one pool of labelling actors for the whole job
(``inference.*``: actors, CPUs, GPUs, precision, token budget; ``num_actors: 0``: in this process, without Ray).
"""

from __future__ import annotations

from pathlib import Path

from xlt.cli import epilogue, init_ray, job_overrides, job_parser, run_job

DEFAULT_PRESET = Path(__file__).resolve().parents[1] / "configs" / "predict_sib200.yaml"
SMOKE_PRESET = Path(__file__).resolve().parents[1] / "configs" / "predict_smoke.yaml"


def main() -> None:
    args = job_parser(__doc__).parse_args()
    # After the arguments: --help answers before torch and Ray are imported.
    from xlt.logs import configure_logging, quiet_libraries
    from xlt.predict import load_predict_config, predict, prepare
    from xlt.progress import progress
    from xlt.predict.finish import finish_prediction
    from xlt.report import Phases, command_line

    quiet_libraries()
    configure_logging(args.verbose)
    cfg = load_predict_config(args.config or DEFAULT_PRESET, job_overrides(args),
                              smoke=SMOKE_PRESET if args.smoke else None)
    phases = Phases()
    with phases("open the model and the input"):
        prepared = prepare(cfg)  # the model, the input's files and their formats, before Ray starts
    if args.dry_run:
        return plan(prepared)
    if cfg.inference.num_actors:
        with phases("start Ray"):
            init_ray(args.address, args.verbose)
    bar = progress(None, "predict", "row")  # a stream's total is known at its end: the bar shows the rate
    written = predict(prepared, done=bar.update, phases=phases)
    bar.close()
    finished = finish_prediction(prepared, written, phases)
    print("\n" + finished.text)
    print("\n" + epilogue(finished.outputs, f"{command_line()}  (again after a stop: complete shards are kept)", ()))


def plan(prepared) -> None:
    """``--dry-run``: where the predictions would go, the model found and the input opened."""
    from xlt.cli import dry_run
    from xlt.storage import names

    cfg, source = prepared.config, prepared.input
    kept = sum(1 for name in names(f"{cfg.output.dir.rstrip('/')}/predictions") if name.startswith("shard-"))
    dry_run("predict", cfg.output.dir, f"holds {kept} shards, which the command keeps" if kept else "new", cfg, {
        "model": f"{prepared.checkpoint} ({'pairs' if prepared.spec.paired else 'single texts'})",
        "input": f"{source.name}: {len(source.files)} file(s)" + (f", languages {', '.join(source.languages)}"
                                                                 if source.languages else ", a language per row"),
        "plan": f"{cfg.format} shards of {cfg.shard_rows} rows, "
                + (f"{cfg.inference.num_actors} labelling actors (Ray)" if cfg.inference.num_actors
                   else "labelled in this process"),
    })


if __name__ == "__main__":
    run_job(main)
