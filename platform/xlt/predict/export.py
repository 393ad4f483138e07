"""A trained classifier exported for use outside xlt (``jobs/export.py``): a directory that
sentence-transformers loads as the encoder and ``xlt.models.Classifier.from_pretrained`` as the whole
classifier (``Classifier.save_pretrained``), with a model card (``README.md``) saying what it is:
task, labels, languages, the scores its run reported per language, the objectives and the config.

``export_checkpoint`` exports what a model path names (``jobs/export.py``); ``export_run`` a run's
checkpoint where it lies, and logs the export as the run's MLflow model (``output.export`` of
fine-tuning and co-training, ``jobs/sweep.py --export``). ``export_cotrain`` exports a co-training run:
each learner as the run left it (a probe learner from its kept probe: ``xlt.cotrain.probe``), and the
job's classifier (``xlt.cotrain.classifier``) to ``export/classifier``: the learner it is, or the
``CombinedClassifier`` of the learners it combines, whose card says how it is rebuilt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import config_text
from ..cotrain.learner import LEARNERS_DIR, fit_model, learner_run
from ..engine.checkpoints import read_config, read_metrics
from ..eval.protocols import EvaluateConfig
from ..metrics import per_language
from ..report import markdown_table
from ..storage import join, staged
from ..train import FinetuneConfig, load_classifier
from .models import resolve_checkpoint

EXPORT_DIR = "export"  # a run's export: <output.dir>/export (a co-training run's: export/<learner>)

# The papers (docs/references.md's short names) of the objectives a fine-tuned classifier trains with.
PAPERS = {"multiview_alignment": "Wang et al. 2022, MVA", "contrastive_alignment": "Wang et al. 2022, CL",
          "supervised_contrastive_alignment": "Wang et al. 2022, SCL", "label_alignment": "Yu & Joty 2021, LA",
          "semantic_alignment": "Yu & Joty 2021, SA"}


def export_checkpoint(model: str | Path, directory: str | Path, learner: str | None = None) -> Path:
    """Export the classifier ``model`` names (``xlt.predict.models``) to ``directory``."""
    checkpoint = resolve_checkpoint(model, learner)
    classifier = load_classifier(checkpoint)
    return classifier.save_pretrained(directory, card=model_card(checkpoint, classifier.encoder.pooling))


def export_run(checkpoint: Any, directory: str, tracker: Any = None, name: str = "classifier") -> dict[str, str]:
    """Export a run's ``checkpoint`` (a ``ray.train.Checkpoint``, local or on a store) to ``directory``
    (local or URI) and log it as ``tracker``'s (an ``xlt.tracking.Tracker``) MLflow model ``name``;
    returns where both went, for the job's epilogue."""
    return exported_run(checkpoint, directory, tracker, name)[0]


def exported_run(checkpoint: Any, directory: str, tracker: Any = None,
                 name: str = "classifier") -> tuple[dict[str, str], Any]:
    """``export_run``, and the classifier it loaded from the checkpoint (read once)."""
    outputs = {f"export {name}": directory}
    with checkpoint.as_directory() as local, staged(directory) as out:
        classifier = load_classifier(local)
        card = model_card(Path(local), classifier.encoder.pooling, origin=checkpoint.path)
        classifier.save_pretrained(out, card=card)
        if tracker is not None and (model := tracker.model(out, name)) is not None:
            outputs[f"mlflow model {name}"] = model
    return outputs, classifier


def model_card(checkpoint: Path, pooling: str, origin: str | None = None) -> str:
    """The card of the local ``checkpoint`` (its encoder pooled by ``pooling``), which came from ``origin`` (a
    store's URI) if given; it opens with the metadata block a model hub indexes (library, pipeline, languages,
    metrics)."""
    origin = origin or str(checkpoint)
    cfg = read_config(checkpoint, FinetuneConfig)
    metrics = read_metrics(checkpoint) if (checkpoint / "metrics.json").is_file() else {}
    scores = [{"split": split, **{lang: f"{value:.3f}" for lang, value in per_language(metrics, split).items()}}
              for split in ("val", "test") if per_language(metrics, split)]
    objectives = "".join(f" + {o.weight:g}·{o.name} ({PAPERS.get(o.name, 'xlt.losses')})" for o in cfg.objectives)
    cotrain = f"/{LEARNERS_DIR}/" in origin  # a co-training run's learner (xlt.predict.models)
    return "\n".join([
        *_metadata([cfg.task.source_lang, *cfg.task.target_langs]),
        f"# {cfg.task.name}: a cross-lingual classifier trained with xlt", "",
        f"- Encoder: `{cfg.model.source}`, exported as a sentence-transformers model (pooling "
        f"`{pooling}`, max length {cfg.model.max_length}).",
        f"- Labels: {', '.join(cfg.task.labels)}{' (sentence pairs)' if cfg.task.paired else ''}.",
        f"- Trained on `{cfg.task.source_lang}`; evaluated on {', '.join(cfg.task.target_langs)}.",
        f"- Loss: cross-entropy{objectives}."
        + (" A co-training learner: its fits on labelled and pseudo-labelled rows follow Yu & Joty 2021, Alg. 1."
           if cotrain else ""),
        f"- Checkpoint: `{origin}` (epoch {metrics.get('train/epoch', '?')}).", "",
        "## Accuracy per language, as its run reported it", "",
        markdown_table(scores) if scores else "No evaluation was recorded with this checkpoint.", "",
        *_use("predict(texts)"),
        "## The config that trained it", "",
        "```yaml", config_text(cfg).rstrip(), "```", "",
    ])


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
        *_metadata(languages),
        f"# {cfg.task.name}: a frozen-encoder probe trained with xlt", "",
        f"- Encoder: `{source}`, frozen, exported as a sentence-transformers model.",
        f"- Labels: {', '.join(cfg.task.labels)}{' (sentence pairs)' if cfg.task.paired else ''}.",
        f"- Head: logistic regression on the {'L2-normalised ' if cfg.normalize else ''}embeddings of "
        f"`{cfg.task.source_lang}` labelled rows, C = {rows[0]['probe_c']:g} chosen on its dev rows.{adapted}", "",
        "## Accuracy and macro-F1 per language, as its evaluation reported them", "",
        markdown_table([{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items() if k != "model"}
                        for r in rows]), "",
        *_use("predict(texts, langs=langs)" if a.center else "predict(texts)", centred),
        "## The config that trained it", "",
        "```yaml", config_text(cfg).rstrip(), "```", "",
    ])


def _metadata(languages: list[str]) -> list[str]:
    """The card's opening block, which a model hub indexes."""
    import yaml

    metadata = {"library_name": "sentence-transformers", "pipeline_tag": "text-classification",
                "language": list(dict.fromkeys(languages)),
                "tags": ["xlt", "cross-lingual-transfer", "text-classification"], "metrics": ["accuracy", "f1"]}
    return ["---", yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True).rstrip(), "---", ""]


def _use(call: str, note: str = "") -> list[str]:
    """The card's "Use" section: ``Classifier.from_pretrained(DIR).<call>``."""
    return ["## Use", "",
            "```python",
            "from sentence_transformers import SentenceTransformer",
            "embeddings = SentenceTransformer(DIR).encode(texts)            # the encoder",
            "from xlt.models import Classifier",
            f"predictions = Classifier.from_pretrained(DIR).{call}   # labels, confidence, probabilities",
            "```", *([note.strip(" ()").capitalize() + ".", ""] if note else [""])]


def export_cotrain(cfg: Any, task: Any, history: list[dict[str, Any]], tracker: Any = None) -> dict[str, str]:
    """Export the co-training run of ``cfg`` (``xlt.cotrain.CotrainConfig``) on ``task``, whose loop ``history``
    says which iteration its classifier keeps: ``export/<learner>`` for each learner at its last fit, and
    ``export/classifier``, its learners as that iteration left them. Every learner the classifier needs is checked
    for an export form first, so a refusal writes nothing."""
    from ..cotrain.classifier import kept_record, members
    from ..cotrain.config import LEARNERS
    from ..models.classifier import CombinedClassifier, check_exportable
    from ..models import load_encoder

    record = kept_record(history, cfg.classifier.keep, task.source_lang)
    kept, combined = int(record["iteration"]), members(record)
    last = max(h["iteration"] for h in history)
    for name in combined:
        try:
            check_exportable(load_encoder(cfg.learner(name).model))
        except ValueError as e:
            raise ValueError(f"the job's classifier combines learner {name!r} ({cfg.learner(name).model.source}), "
                             f"which has no export form: {e}") from e

    def learner_classifier(name: str, iteration: int) -> Any:
        if cfg.learner(name).kind == "probe":
            return probe_classifier(cfg.learner(name).model, task, learner_run(cfg.output.dir, name), iteration)
        with fit_model(cfg.output.dir, name, iteration, last).as_directory() as local:
            return load_classifier(local)

    outputs: dict[str, str] = {}
    classifiers = {}
    for name in LEARNERS:
        directory = join(cfg.output.dir, EXPORT_DIR, name)
        if cfg.learner(name).kind == "probe":
            classifiers[name] = learner_classifier(name, last)
            with staged(directory) as out:
                classifiers[name].save_pretrained(out, card=cotrain_card(cfg, task, name, history, last))
                if tracker is not None and (model := tracker.model(out, name)) is not None:
                    outputs[f"mlflow model {name}"] = model
            outputs[f"export {name}"] = directory
        else:
            exported, classifiers[name] = exported_run(fit_model(cfg.output.dir, name, last, last), directory,
                                                       tracker, name=name)
            outputs |= exported
    at_kept = {name: classifiers[name] if kept == last else learner_classifier(name, kept) for name in combined}
    job = at_kept[combined[0]] if len(combined) == 1 else CombinedClassifier(at_kept)
    directory = join(cfg.output.dir, EXPORT_DIR, CLASSIFIER_NAME)
    with staged(directory) as out:
        job.save_pretrained(out, card=cotrain_card(cfg, task, CLASSIFIER_NAME, history, kept))
    outputs[f"export {CLASSIFIER_NAME}"] = directory
    return outputs


CLASSIFIER_NAME = "classifier"  # export/classifier: the job's classifier (xlt.cotrain.classifier.CLASSIFIER)


def probe_classifier(model: Any, task: Any, run: str, iteration: int) -> Any:
    """A probe learner's classifier of ``iteration``, from what its run kept (``xlt.cotrain.probe``)."""
    from ..cotrain.probe import load_probe
    from ..models import Classifier, load_encoder, load_trained

    state, settings = load_probe(run, iteration)
    classifier = Classifier(load_encoder(model), task.labels, paired=task.paired, normalize=True,
                            languages=settings["languages"])
    load_trained(classifier, state, settings["from_source"])
    return classifier.eval()


def cotrain_card(cfg: Any, task: Any, name: str, history: list[dict[str, Any]], iteration: int) -> str:
    """The card of a co-training run's learner ``name`` (or of its classifier) as iteration ``iteration`` left it."""
    from ..cotrain.classifier import describe, members

    record = next(h for h in history if h["learner"] == name and h["iteration"] == iteration)
    scores = [{"split": split, **{lang: f"{value:.3f}" for lang, value in per_language(record, split).items()}}
              for split in ("val", "test") if per_language(record, split)]
    combined = members(record) if name == CLASSIFIER_NAME else (name,)
    if name == CLASSIFIER_NAME:
        what = (f"The co-training job's classifier: {describe(cfg.classifier, combined, task.source_lang)}"
                + (" (each learner in its own sub-directory, a classifier's export; renormalised, Blum & Mitchell "
                   "1998). Rebuilt by `xlt.models.CombinedClassifier.from_pretrained(DIR)`" if len(combined) > 1 else ""))
        loader = "CombinedClassifier" if len(combined) > 1 else "Classifier"
    else:
        learner = cfg.learner(name)
        what = (f"A co-training learner ({'a frozen-encoder probe, each language centred on its mean' if learner.kind == 'probe' else 'fine-tuned'}) "
                f"on `{learner.model.source}`")
        loader = "Classifier"
    centred = any(cfg.learner(n).kind == "probe" and cfg.learner(n).probe.center
                  for n in combined)
    call = "predict(texts, langs=langs)" if centred else "predict(texts)"
    return "\n".join([
        *_metadata([task.source_lang, *task.target_langs]),
        f"# {task.config.name}: a cross-lingual classifier co-trained with xlt", "",
        f"- {what}, as iteration {iteration} of Yu & Joty 2021, Alg. 1 left it.",
        f"- Labels: {', '.join(task.labels)}{' (sentence pairs)' if task.paired else ''}.",
        f"- Labelled `{task.source_lang}`; unlabelled {', '.join(task.target_langs)}.", "",
        "## Accuracy per language, as its run reported it", "",
        markdown_table(scores) if scores else "No evaluation was recorded.", "",
        "## Use", "", "```python", f"from xlt.models import {loader}",
        f"predictions = {loader}.from_pretrained(DIR).{call}   # labels, confidence, probabilities", "```", "",
        "## The config that trained it", "",
        "```yaml", config_text(cfg).rstrip(), "```", "",
    ])
