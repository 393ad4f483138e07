"""How ``jobs/evaluate.py`` ends: a table per model, ``<protocol>.json`` and ``config.yaml`` in ``output.dir``, one
tracked metric per model, language and score, each frozen-linear probe exported with its card where
``output.export`` asks, and the run's record naming those exports (a model path for ``jobs/predict.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import config_text, save_config
from ..record import EXPORT_DIR, FINISHED, export_entry, write_record
from ..report import Finished, dropped_rows, markdown_table, write_results
from ..report.cards import card_metadata, card_use
from .protocols import EvaluateConfig

if TYPE_CHECKING:
    from ..tracking import Tracker


def finish_evaluation(cfg: EvaluateConfig, result: dict[str, Any], tracker: Tracker) -> Finished:
    """An evaluation's tables, files and exports (module docstring); ``result``: ``run_evaluation``'s, whose
    ``classifiers`` (the probes, where ``output.export`` asked) it takes."""
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
    if result.get("dropped rows"):
        parts.append(dropped_rows(result["dropped rows"]))
    out = Path(cfg.output.dir)
    save_config(cfg, out / "config.yaml")
    classifiers = result.pop("classifiers", {})
    path = write_results(out / f"{cfg.protocol}.json", {**result, "config": cfg})
    for row in result["rows"]:  # one metric per model, language and score, e.g. "tiny:bert/de/accuracy"
        tracker.metrics(row, 0, prefix=f"{row['model']}/{row.get('lang', 'all')}/")
    tracker.artifacts(path, out / "config.yaml")
    outputs = {"results": str(path), "config": str(out / "config.yaml")}
    entries = {}
    for source, classifier in classifiers.items():
        name = source.partition(":")[2].rstrip("/").rpartition("/")[2]  # hf:org/name, local:/dir/name -> name
        card = probe_card(cfg, source, [r for r in result["rows"] if r["model"] == source])
        outputs[f"export {name}"] = str(classifier.save_pretrained(out / EXPORT_DIR / name, card=card))
        if cfg.output.export_backend != "torch":  # what its MLflow model labels with (output.export_backend)
            from ..models.onnx_backbone import export_onnx

            export_onnx(classifier.encoder, outputs[f"export {name}"])
        entries[name] = export_entry(outputs[f"export {name}"], out, what=f"the frozen-linear probe of {source}")
        if (model := tracker.model(outputs[f"export {name}"], name, cfg.output.export_backend)) is not None:
            outputs[f"mlflow model {name}"] = model
    write_record(out, "evaluate", cfg, FINISHED, classifiers=entries,
                 default=next(iter(entries)) if len(entries) == 1 else None, outputs=outputs)
    return Finished("\n\n".join(parts), outputs)


def probe_card(cfg: EvaluateConfig, source: str, rows: list[dict[str, Any]]) -> str:
    """The card of the frozen-linear probe of ``source`` that ``jobs/evaluate.py`` fitted as ``cfg`` says, with
    its table ``rows`` (``lang``, ``accuracy``, ``f1``, ...)."""
    assert cfg.task is not None
    a = cfg.adapt
    languages = [r["lang"] for r in rows if r["lang"] not in ("avg_target", "transfer_gap")]
    adapted = (f" Adapted to each target language's unlabelled pool, without its labels (xlt.eval.adaptation): "
               f"{'every language centred on its own mean, ' if a.center else ''}{a.rounds} round(s) of "
               f"class-balanced self-training (fraction {a.fraction:g})." if a.active else "")
    centred = " (each text's language is needed: the classifier centres it on that language's mean)" if a.center else ""
    return "\n".join([
        *card_metadata(languages),
        f"# {cfg.task.name}: a frozen-encoder probe trained with xlt", "",
        f"- Encoder: `{source}`, frozen, exported as a sentence-transformers model.",
        f"- Labels: {', '.join(cfg.task.labels)}{' (sentence pairs)' if cfg.task.paired else ''}.",
        f"- Head: logistic regression on the {'L2-normalised ' if cfg.normalize else ''}embeddings of "
        f"`{cfg.task.source_lang}` labelled rows, C = {rows[0]['probe_c']:g} chosen on its dev rows.{adapted}", "",
        "## Accuracy and macro-F1 per language, as its evaluation reported them", "",
        markdown_table([{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items() if k != "model"}
                        for r in rows]), "",
        *card_use("predict(texts, langs=langs)" if a.center else "predict(texts)", centred),
        "## The config that trained it", "",
        "```yaml", config_text(cfg).rstrip(), "```", "",
    ])
