"""What a job does once its work has ended, so that the job itself only parses, runs and prints:
its results written beside the run (``results.json``; co-training's tables and plot too; pretraining's
encoder tagged), tracked
(``xlt.tracking``), and its classifier exported where ``output.export`` asks (``xlt.predict.export``).
Evaluation, prediction, studies and sweeps likewise. Each returns the text the job prints and where
everything went, for the job's epilogue."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .config import save_config
from .cotrain.classifier import describe, kept_record, members
from .cotrain.learner import LEARNERS_DIR
from .cotrain.state import STATE_FILE
from .cotrain.tables import iteration_rows, language_rows, plot_iterations
from .engine import RESULTS_FILE, final_metrics, run_dir
from .eval.evaluators import TATOEBA
from .metrics import ACC, AVG_TARGET, F1, TRAIN_EPOCH, TRAIN_KEPT_EPOCH, metric_name, per_language
from .models import EncoderConfig
from .predict.export import EXPORT_DIR, export_cotrain, export_run, probe_card
from .predict.models import best_trial_checkpoint
from .predict.writer import PREDICTIONS
from .pretrain.trainer import encoder_dir
from .report import Phases, markdown_table, write_results
from .storage import join, staged
from .sweep.results import BEST_CONFIG, PLOT, RESULTS, TABLE, write_outputs
from .study.recipes import cotrain_rows, probe_scores
from .study.report import build, markdown, plot
from .study.units import imported_records, read_record
from .train import results_rows


@dataclass(frozen=True)
class Finished:
    """A finished job's printout (markdown) and what it wrote where (``xlt.cli.epilogue``)."""

    text: str
    outputs: dict[str, str]


def finish_finetune(cfg: Any, result: Any, tracker: Any) -> Finished:
    """A fine-tuning run's per-language table (of its final metrics: a finished run's rerun reports
    none, its last checkpoint's), ``results.json`` beside the checkpoints, its export."""
    metrics = final_metrics(result)
    rows = results_rows(metrics, cfg.task.source_lang)
    text = (f"## {cfg.output.name}: {cfg.task.name}, {cfg.model.source}, {cfg.data.setting}, "
            f"objectives: {', '.join(['ce'] + [o.name for o in cfg.objectives])}\n\n{markdown_table(rows)}")
    if TRAIN_KEPT_EPOCH in metrics:  # optim.keep: best-dev
        text += (f"\n\nThe weights of epoch {int(metrics[TRAIN_KEPT_EPOCH])} (of {int(metrics[TRAIN_EPOCH])} trained, "
                 f"{cfg.optim.epochs} set), the best {cfg.task.source_lang} dev accuracy (optim.keep: best-dev"
                 + (f", patience {cfg.optim.patience}" if cfg.optim.patience else "") + "): the scores above are theirs.")
    with staged(run_dir(cfg)) as out:  # beside the checkpoints, local or on a store
        tracker.artifacts(write_results(out / RESULTS_FILE, {
            "rows": rows, "metrics": metrics, "checkpoint": result.checkpoint.path, "config": asdict(cfg)}))
    tracker.tag("xlt.checkpoint", result.checkpoint.path)
    outputs = {"results": join(run_dir(cfg), RESULTS_FILE), "checkpoint": result.checkpoint.path}
    if cfg.output.export:  # the classifier for use outside xlt, and the run's MLflow model
        outputs |= export_run(result.checkpoint, join(run_dir(cfg), EXPORT_DIR), tracker)
    return Finished(text, outputs)


def finish_pretrain(prepared: Any, result: Any, tracker: Any) -> Finished:
    """A pretraining run's mixture and held-apart retrieval tables, ``results.json`` beside the
    checkpoints, and its last checkpoint's encoder (a ``local:`` model, local or on a store) tagged."""
    cfg = prepared.config
    metrics = final_metrics(result)
    tatoeba = [{"lang": lang, "accuracy": value} for lang, value in per_language(metrics, "val", TATOEBA).items()]
    encoder = encoder_dir(join(run_dir(cfg), Path(result.checkpoint.path).name))
    text = (f"## {cfg.output.name}: {cfg.recipe} ({', '.join(cfg.objective_names)}) from {cfg.model.source}\n\n"
            f"### Training pairs (q_i ∝ p_i^{cfg.data.alpha}; {prepared.mixture.excluded} excluded as evaluation "
            f"sentences; {cfg.data.train_rows} annotated)\n\n{markdown_table(prepared.mixture.rows())}\n")
    if tatoeba:
        text += f"\n### Tatoeba accuracy after epoch {cfg.optim.epochs} (held apart)\n\n{markdown_table(tatoeba)}\n"
    with staged(run_dir(cfg)) as out:  # beside the checkpoints, local or on a store
        tracker.artifacts(write_results(out / RESULTS_FILE, {
            "mixture": prepared.mixture.rows(), "excluded": prepared.mixture.excluded, "tatoeba": tatoeba,
            "metrics": metrics, "checkpoint": result.checkpoint.path, "encoder": str(encoder),
            "config": asdict(cfg)}))
    tracker.tag("xlt.checkpoint", result.checkpoint.path)
    tracker.tag("xlt.encoder", f"local:{encoder}")
    return Finished(text, {"results": join(run_dir(cfg), RESULTS_FILE), "checkpoint": result.checkpoint.path,
                           "encoder": f"local:{encoder}"})


def overlap(cfg: Any) -> str:
    """How an iteration's two fits share the time (in-process fits take turns: ``xlt.engine.context``)."""
    if cfg.lm.scaling.num_workers and cfg.emb.scaling.num_workers:
        return "the two fits of an iteration run at the same time"
    if cfg.lm.scaling.num_workers or cfg.emb.scaling.num_workers:
        return "the two fits of an iteration run at the same time, one in this process"
    return "both learners fit in this process, one after the other"


def finish_cotrain(cfg: Any, data: Any, state: Any, phases: Phases, tracker: Any) -> Finished:
    """A co-training run's tables (per iteration; per language, the job's classifier, the learners and each probe
    of ``cfg.probes``, frozen, and of ``cfg.adapted_probes``, adapted to the job's pools, fitted and scored on the
    rows the learners saw), written with ``results.json`` and the
    plot into ``output.dir``, and each learner exported as the run left it (``output.export``)."""
    with phases("probes"):
        # the rows the learners saw, once
        rows = cotrain_rows(cfg, data.task) if cfg.probes or cfg.adapted_probes else None
        probes = {f"frozen probe: {source}": probe_scores(rows, EncoderConfig(source=source,
                                                                              max_length=cfg.lm.model.max_length))
                  for source in cfg.probes}
        probes |= {f"adapted probe: {source}": probe_scores(rows, EncoderConfig(source=source,
                                                                                max_length=cfg.lm.model.max_length),
                                                            cfg.probe_adapt)
                   for source in cfg.adapted_probes}
    split, source = cfg.data.metric_split, data.task.source_lang
    label = "co-training" if cfg.mode == "cotrain" else "self-training"
    langs = (source, *data.targets)

    chosen = kept_record(state.history, cfg.classifier.keep, source)
    kept = int(chosen["iteration"])

    def language_table(score: str) -> str:
        probe_rows = [{"model": model, **{lang: scores[score][lang] for lang in (*langs, AVG_TARGET)}}
                      for model, scores in probes.items()]
        return markdown_table(language_rows(state.history, split, langs, label, score=score, kept=kept) + probe_rows)

    selection = cfg.selection
    text = (f"## {label} on {data.task.config.name}: lm {cfg.lm.model.source}, emb {cfg.emb.model.source}, "
            f"policy {selection.policy}{' per language' if selection.per_language else ''}, t = {selection.threshold}"
            f"{', by the classifier' if selection.confidence == 'classifier' else ''}\n\n"
            f"The job's classifier: {describe(cfg.classifier, members(chosen), source)}, iteration {kept} "
            f"({'the last' if cfg.classifier.keep == 'last' else f'the best {source} dev accuracy, ties to the earliest'}"
            f"): {split} average target accuracy {chosen.get(metric_name(split, ACC, AVG_TARGET), float('nan')):.3f}."
            "\n\n"
            f"### Per iteration ({split} accuracy)\n\n{markdown_table(iteration_rows(state.history, split, source))}\n\n"
            f"### Per language ({split} accuracy)\n\n{language_table(ACC)}\n\n"
            f"### Per language ({split} macro-F1)\n\n{language_table(F1)}\n\n"
            f"### Where the time went (this run; {overlap(cfg)})\n\n{phases.table()}\n")
    with staged(cfg.output.dir) as out:  # a URI output gets these files when the block ends
        (out / "results.md").write_text(text, encoding="utf-8")
        plot = plot_iterations(state.history, split, out / "accuracy_per_iteration.png", label)
        write_results(out / "results.json", {"history": state.history, "probes": probes, "config": asdict(cfg),
                                             "classifier": {"learners": list(members(chosen)),
                                                            "iteration": kept, "metrics": chosen},
                                             "phases": phases.rows()})
        tracker.artifacts(out / "results.json", out / "results.md", plot)
    outputs = {what: join(cfg.output.dir, name) for what, name in (
        ("results", "results.json"), ("tables", "results.md"), ("plot", "accuracy_per_iteration.png"),
        ("loop state", STATE_FILE), ("learner runs", LEARNERS_DIR))}
    if cfg.output.export:  # each learner as it ended and the job's classifier, for use outside xlt, as MLflow models
        outputs |= export_cotrain(cfg, data.task, state.history, tracker)
    return Finished(text, outputs)


def finish_evaluation(cfg: Any, result: dict, tracker: Any) -> Finished:
    """An evaluation's tables (one per model), ``<protocol>.json`` and ``config.yaml`` in ``output.dir``,
    one tracked metric per model, language and score, and each frozen-linear probe exported with its
    card where ``output.export`` asked (``result["classifiers"]``)."""
    a = cfg.adapt
    adapted = (f" (adapted to each target's unlabelled pool: {'centred, ' if a.center else ''}{a.rounds} "
               f"self-training round{'s' * (a.rounds != 1)} of fraction {a.fraction:g})"
               if cfg.protocol == "frozen-linear" and a.active else "")
    parts = []
    for source in dict.fromkeys(r["model"] for r in result["rows"]):
        rows = [r for r in result["rows"] if r["model"] == source]
        parts.append(f"## {cfg.protocol} on {result['task']}: {source}{adapted}\n\n"
                     + markdown_table([{k: v for k, v in r.items() if k not in ("model", "protocol")} for r in rows])
                     + "".join(f"\n\nProtocol: {protocol}"
                               for protocol in dict.fromkeys(r["protocol"] for r in rows if "protocol" in r)))
    out = Path(cfg.output.dir)
    save_config(cfg, out / "config.yaml")
    classifiers = result.pop("classifiers", {})
    path = write_results(out / f"{cfg.protocol}.json", {**result, "config": cfg})
    for row in result["rows"]:  # one metric per model, language and score, e.g. "tiny:bert/de/accuracy"
        tracker.metrics(row, 0, prefix=f"{row['model']}/{row.get('lang', 'all')}/")
    tracker.artifacts(path, out / "config.yaml")
    outputs = {"results": path, "config": out / "config.yaml"}
    for source, classifier in classifiers.items():
        name = source.partition(":")[2].rstrip("/").rpartition("/")[2]  # hf:org/name, local:/dir/name -> name
        card = probe_card(cfg, source, [r for r in result["rows"] if r["model"] == source])
        outputs[f"export {name}"] = classifier.save_pretrained(out / EXPORT_DIR / name, card=card)
        if (model := tracker.model(outputs[f"export {name}"], name)) is not None:
            outputs[f"mlflow model {name}"] = model
    return Finished("\n\n".join(parts), outputs)


def finish_prediction(prepared: Any, written: Any, phases: Phases) -> Finished:
    """A prediction's labels by language and its phases, ``results.json`` and ``config.yaml`` in
    ``output.dir`` (local or on a store) beside the shards."""
    cfg = prepared.config
    langs = sorted({lang for lang, _ in written.labels})
    table = [{"lang": lang, "rows": sum(n for (l, _), n in written.labels.items() if l == lang),
              **{label: written.labels.get((lang, label), 0) for label in prepared.spec.labels}} for lang in langs]
    text = (f"## {written.rows} rows labelled by {prepared.checkpoint}"
            + (f" ({written.skipped} shard(s) kept from an earlier run)" if written.skipped else "")
            + (f"; {written.rejected} bad row(s) skipped: predictions/shard-*/_rejected.jsonl" if written.rejected else "")
            + f"\n\n{markdown_table(table)}\n\n### Where the time went\n\n{phases.table()}")
    with staged(cfg.output.dir) as out:
        save_config(cfg, out / "config.yaml")
        write_results(out / "results.json", {"model": prepared.checkpoint, "rows": written.rows,
                                             "rejected": written.rejected, "by_language": table,
                                             "phases": phases.rows(),
                                             "format": cfg.format, "precision": cfg.inference.precision})
    return Finished(text, {"predictions": join(cfg.output.dir, PREDICTIONS, f"shard-*/ ({cfg.format})"),
                           "results": join(cfg.output.dir, "results.json")})


STUDY_RESULTS, STUDY_TABLE, STUDY_PLOT = "results.json", "results.md", "results.png"


@dataclass(frozen=True)
class FinishedStudy(Finished):
    missing: tuple[str, ...] = ()  # units without a record: what the same command runs again


def finish_study(study: Any, command: str, errors: dict[str, str], tracker: Any) -> FinishedStudy:
    """A study's report of the units finished (and imported) so far, ``command`` the line that made it:
    ``results.md``, ``results.json`` and the plot in the study's output (local or on a store), tracked."""
    records = [r for r in (read_record(study.output, u.name) for u in study.units()) if r is not None]
    records += imported_records(study.output)
    if not records:
        raise RuntimeError(f"no unit of {study.source} finished: {errors}")
    missing = tuple(u.name for u in study.units() if read_record(study.output, u.name) is None)
    content = build(study, records)
    reading = Path(study.reading).read_text(encoding="utf-8") if study.reading else None
    text = markdown(study, content, command, STUDY_PLOT, list(missing), errors, reading)
    with staged(study.output) as local:
        (local / STUDY_TABLE).write_text(text, encoding="utf-8")
        write_results(local / STUDY_RESULTS, {**content, "missing": list(missing), "failed": errors})
        plot(study, content, str(local / STUDY_PLOT))
        tracker.artifacts(local / STUDY_TABLE, local / STUDY_RESULTS, local / STUDY_PLOT)
    tracker.metrics({f"{arm}/avg_target": v["mean"] for arm, v in content["avg_target"].items()}, step=0)
    outputs = {name: join(study.output, file) for name, file in
               (("table", STUDY_TABLE), ("results", STUDY_RESULTS), ("plot", STUDY_PLOT), ("units", "units"))}
    return FinishedStudy(text, outputs, missing)


def finish_sweep(sweep: Any, records: list, export: bool, tracker: Any) -> Finished:
    """A sweep's table, best config, results and plot in its directory (``xlt.sweep.results``), and with
    ``export`` its best trial's classifier exported as that trial left it."""
    directory = sweep.settings.directory
    text = write_outputs(sweep, records, tracker)
    outputs = {name: join(directory, file) for name, file in
               (("best config", BEST_CONFIG), ("table", TABLE), ("results", RESULTS), ("plot", PLOT))}
    if export:
        outputs |= export_run(best_trial_checkpoint(directory), join(directory, EXPORT_DIR), tracker)
    return Finished(text, outputs)
