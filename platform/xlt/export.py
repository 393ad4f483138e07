"""A trained classifier exported for use outside xlt: a directory that sentence-transformers loads as the
encoder and ``xlt.models.load_pretrained`` as the classifier (``Classifier.save_pretrained``; a combination's,
``CombinedClassifier.save_pretrained``: each member's), with a model card (``README.md``) saying what it is:
task, labels, languages, the scores its run recorded, the objectives and the config.

Every export starts from a run's record (``xlt.record``): ``export_recorded`` exports the classifier a record
names (``jobs/export.py``; the jobs' ``output.export`` and a sweep's ``--export`` at their end), and the card
is written from the record alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .inference.entries import Combination, build_model, entry_spec, is_export, lookup
from .metrics import per_language
from .models.classifier import check_exportable
from .report import markdown_table
from .report.cards import card_metadata, card_use
from .storage import staged


# The papers (docs/references.md's short names) of the objectives a fine-tuned classifier trains with.
PAPERS = {"multiview_alignment": "Wang et al. 2022, MVA", "contrastive_alignment": "Wang et al. 2022, CL",
          "supervised_contrastive_alignment": "Wang et al. 2022, SCL", "label_alignment": "Yu & Joty 2021, LA",
          "semantic_alignment": "Yu & Joty 2021, SA"}


def export_model(model: str | Path, directory: str | Path, name: str | None = None, onnx: bool = False) -> str:
    """Export classifier ``name`` (default: the record's own) of the run in ``model`` to ``directory``
    (``jobs/export.py``), with ``onnx`` its encoder as ONNX too; returns where it went."""
    if is_export(model):
        raise ValueError(f"{model} is an export already: copy the directory, or export the run it came from")
    return export_recorded(model, {name: directory}, onnx=onnx)[f"export {name or 'classifier'}"]


def export_recorded(run: str | Path, exports: Mapping[str | None, str | Path], tracker: Any = None,
                    onnx: bool = False, backend: str = "torch") -> dict[str, str]:
    """Export each classifier ``exports`` names (``None``: the record's default) of the run in ``run`` to its
    directory (local or URI), logged as ``tracker``'s MLflow model of that name, labelling on ``backend``
    (``output.export_backend``); with ``onnx`` (or a backend other than torch), each encoder as ONNX beside its
    weights too, fp32 and int8 (``xlt.models.onnx_backbone``; a combination's in each member's sub-directory);
    returns where each went. Every classifier is built and checked for an export form first, so a refusal writes
    nothing."""
    onnx = onnx or backend != "torch"
    if onnx:
        from .models.onnx_backbone import onnxruntime

        onnxruntime("an ONNX export")
    built = {}
    for name, directory in exports.items():
        record, entry, where = lookup(run, name)
        spec = entry_spec(entry, where)
        model = build_model(spec)
        for member_name, member in _members(model).items():
            try:
                check_exportable(member.encoder)
            except ValueError as e:
                raise ValueError(f"{name or record['default']}{'' if member_name is None else f' (member {member_name})'} "
                                 f"of {run} has no export form: {e}") from e
        built[name] = (model, card(record, entry, name or record["default"], spec, model, str(run)))
    outputs: dict[str, str] = {}
    for name, directory in exports.items():
        model, text = built[name]
        label = name or "classifier"
        with staged(directory) as out:
            model.save_pretrained(out, card=text)
            if onnx:
                from .models.onnx_backbone import export_onnx

                for member_name, member in _members(model).items():
                    export_onnx(member.encoder, out if member_name is None else out / member_name)
            if tracker is not None and not hasattr(model, "members") and (logged := tracker.model(out, label, backend)):
                outputs[f"mlflow model {label}"] = logged
        outputs[f"export {label}"] = str(directory)
    return outputs


def _members(model: Any) -> dict[str | None, Any]:
    return dict(model.members) if hasattr(model, "members") else {None: model}


def card(record: Mapping[str, Any], entry: Mapping[str, Any], name: str, spec: Any, model: Any, run: str) -> str:
    """The card of classifier ``name`` (``spec``, built as ``model``) that ``record`` names by ``entry``; it opens
    with the metadata block a model hub indexes (library, pipeline, languages, metrics)."""
    import yaml

    config, job = record["config"], record["job"]
    task = config.get("task") or {}
    languages = [task.get("source_lang"), *(task.get("target_langs") or [])]
    metrics = entry.get("metrics") or record["metrics"]
    scores = [{"split": split, **{lang: f"{value:.3f}" for lang, value in per_language(metrics, split).items()}}
              for split in ("val", "test") if per_language(metrics, split)]
    members = _members(model)
    specs = spec.members if isinstance(spec, Combination) else {None: spec}
    encoders = "; ".join(f"{'' if n is None else f'{n}: '}`{specs[n].model.source}` (pooling `{m.encoder.pooling}`, "
                         f"max length {specs[n].model.max_length})" for n, m in members.items())
    objectives = "".join(f" + {o['weight']:g}·{o['name']} ({PAPERS.get(o['name'], 'xlt.losses')})"
                         for o in config.get("objectives") or [])
    centred = any(m.languages for m in members.values())
    loader = "CombinedClassifier" if len(members) > 1 else "Classifier"
    at = f", as iteration {entry['iteration']} of Yu & Joty 2021, Alg. 1 left it" if "iteration" in entry else ""
    return "\n".join([
        *card_metadata([lang for lang in languages if lang] or sorted({l for m in members.values() for l in m.languages})),
        f"# {task.get('name', name)}: a cross-lingual classifier trained with xlt", "",
        f"- What: `{name}` of the {job} run in `{run}` ({entry.get('what', job)}){at}.",
        f"- Encoder{'s' if len(members) > 1 else ''}: {encoders}, exported as a sentence-transformers model"
        + (" each, in its own sub-directory (the product of their probabilities, renormalised; Blum & Mitchell 1998)"
           if len(members) > 1 else "") + ".",
        f"- Labels: {', '.join(model.labels)}{' (sentence pairs)' if model.paired else ''}.",
        *([f"- Trained on `{languages[0]}`; evaluated on {', '.join(languages[1:])}."] if languages[0] else []),
        *([f"- Loss: cross-entropy{objectives}."] if job == "finetune" else []), "",
        "## Accuracy per language, as its run recorded it", "",
        markdown_table(scores) if scores else "No evaluation was recorded.", "",
        *card_use("predict(texts, langs=langs)" if centred else "predict(texts)",
                  "(each text's language is needed: the classifier centres it on that language's mean)" if centred
                  else "", loader),
        "## The config that trained it", "",
        "```yaml", yaml.safe_dump(config, sort_keys=False, allow_unicode=True).rstrip(), "```", "",
    ])
