"""How ``jobs/cotrain.py`` ends: the tables (per iteration; per language: the job's classifier, the learners and
the probes of ``probes:`` / ``adapted_probes:``), ``results.json``, ``results.md`` and the plot in
``output.dir``, the exports (``output.export``) and the run's record updated with what it wrote."""

from __future__ import annotations

from dataclasses import asdict

from ..export import export_recorded
from ..metrics import ACC, AVG_TARGET, F1, metric_name
from ..record import EXPORT_DIR, update_record
from ..report import Finished, Phases, dropped_rows, markdown_table, write_results
from ..storage import join, staged
from ..tracking import Tracker
from .classifier import CLASSIFIER, describe, kept_record, members
from .config import LEARNERS, CotrainConfig
from .learner import LEARNERS_DIR
from .loop import PreparedCotrain
from .probes import probe_table
from .state import STATE_FILE, LoopState
from .tables import iteration_rows, language_rows, plot_iterations


def overlap(cfg: CotrainConfig) -> str:
    """How an iteration's two fits share the time (in-process fits take turns: ``xlt.engine.context``)."""
    if cfg.lm.scaling.num_workers and cfg.emb.scaling.num_workers:
        return "the two fits of an iteration run at the same time"
    if cfg.lm.scaling.num_workers or cfg.emb.scaling.num_workers:
        return "the two fits of an iteration run at the same time, one in this process"
    return "both learners fit in this process, one after the other"


def finish_cotrain(cfg: CotrainConfig, data: PreparedCotrain, state: LoopState, phases: Phases,
                   tracker: Tracker) -> Finished:
    """A co-training run's tables (per iteration; per language, the job's classifier, the learners and each probe
    of ``cfg.probes``, frozen, and of ``cfg.adapted_probes``, adapted to the job's pools, fitted and scored on the
    rows the learners saw), written with ``results.json`` and the plot into ``output.dir``, and each learner and
    the job's classifier exported as the run's record names them (``output.export``)."""
    with phases("probes"):
        probes = probe_table(cfg, data.task)
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
            + (f"{dropped_rows(data.task.dropped)}\n\n" if data.task.dropped else "")
            + f"### Where the time went (this run; {overlap(cfg)})\n\n{phases.table()}\n")
    with staged(cfg.output.dir) as out:  # a URI output gets these files when the block ends
        (out / "results.md").write_text(text, encoding="utf-8")
        plot = plot_iterations(state.history, split, out / "accuracy_per_iteration.png", label)
        write_results(out / "results.json", {"history": state.history, "probes": probes, "config": asdict(cfg),
                                             "classifier": {"learners": list(members(chosen)),
                                                            "iteration": kept, "metrics": chosen},
                                             "dropped rows": dict(data.task.dropped), "phases": phases.rows()})
        tracker.artifacts(out / "results.json", out / "results.md", plot)
    outputs = {what: join(cfg.output.dir, name) for what, name in (
        ("results", "results.json"), ("tables", "results.md"), ("plot", "accuracy_per_iteration.png"),
        ("loop state", STATE_FILE), ("learner runs", LEARNERS_DIR))}
    if cfg.output.export:  # each learner as it ended and the job's classifier, for use outside xlt, as MLflow models
        outputs |= export_cotrain(cfg, tracker)
    update_record(cfg.output.dir, outputs=outputs)
    return Finished(text, outputs)


def export_cotrain(cfg: CotrainConfig, tracker: Tracker | None = None) -> dict[str, str]:
    """Each learner and the job's classifier, as the run's record names them, to ``<output.dir>/export/<name>``
    (``xlt.export``; nothing is written if one has no export form); returns where each went."""
    return export_recorded(cfg.output.dir, {name: join(cfg.output.dir, EXPORT_DIR, name)
                                            for name in (*LEARNERS, CLASSIFIER)}, tracker,
                           backend=cfg.output.export_backend)
