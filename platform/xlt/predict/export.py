"""A trained classifier exported for use outside xlt (``jobs/export.py``): a directory that
sentence-transformers loads as the encoder and ``xlt.models.Classifier.from_pretrained`` as the whole
classifier (``Classifier.save_pretrained``), with a model card (``README.md``) saying what it is:
task, labels, languages, the scores its run reported per language, the objectives and the config.
"""

from __future__ import annotations

from pathlib import Path

from ..config import config_text
from ..engine.checkpoints import read_config, read_metrics
from ..metrics import per_language
from ..report import markdown_table
from ..train import FinetuneConfig, load_classifier
from .models import resolve_checkpoint

# The papers (docs/references.md's short names) of the objectives a fine-tuned classifier trains with.
PAPERS = {"multiview_alignment": "Wang et al. 2022, MVA", "contrastive_alignment": "Wang et al. 2022, CL",
          "supervised_contrastive_alignment": "Wang et al. 2022, SCL", "label_alignment": "Yu & Joty 2021, LA",
          "semantic_alignment": "Yu & Joty 2021, SA"}


def export_checkpoint(model: str | Path, directory: str | Path, learner: str = "lm") -> Path:
    """Export the classifier ``model`` names (``xlt.predict.models``) to ``directory``."""
    checkpoint = resolve_checkpoint(model, learner)
    return load_classifier(checkpoint).save_pretrained(directory, card=model_card(checkpoint))


def model_card(checkpoint: Path) -> str:
    cfg = read_config(checkpoint, FinetuneConfig)
    metrics = read_metrics(checkpoint) if (checkpoint / "metrics.json").is_file() else {}
    scores = [{"split": split, **{lang: f"{value:.3f}" for lang, value in per_language(metrics, split).items()}}
              for split in ("val", "test") if per_language(metrics, split)]
    objectives = "".join(f" + {o.weight:g}·{o.name} ({PAPERS.get(o.name, 'xlt.losses')})" for o in cfg.objectives)
    cotrain = "learners" in Path(checkpoint).parts  # a co-training run's learner (xlt.predict.models)
    return "\n".join([
        f"# {cfg.task.name}: a cross-lingual classifier trained with xlt", "",
        f"- Encoder: `{cfg.model.source}`, exported as a sentence-transformers model (pooling "
        f"`{cfg.model.pooling or 'the source default'}`, max length {cfg.model.max_length}).",
        f"- Labels: {', '.join(cfg.task.labels)}{' (sentence pairs)' if cfg.task.paired else ''}.",
        f"- Trained on `{cfg.task.source_lang}`; evaluated on {', '.join(cfg.task.target_langs)}.",
        f"- Loss: cross-entropy{objectives}."
        + (" A co-training learner: its fits on labelled and pseudo-labelled rows follow Yu & Joty 2021, Alg. 1."
           if cotrain else ""),
        f"- Checkpoint: `{checkpoint}` (epoch {metrics.get('train/epoch', '?')}).", "",
        "## Accuracy per language, as its run reported it", "",
        markdown_table(scores) if scores else "No evaluation was recorded with this checkpoint.", "",
        "## Use", "",
        "```python",
        "from sentence_transformers import SentenceTransformer",
        "embeddings = SentenceTransformer(DIR).encode(texts)            # the encoder",
        "from xlt.models import Classifier",
        "predictions = Classifier.from_pretrained(DIR).predict(texts)   # labels, confidence, probabilities",
        "```", "",
        "## The config that trained it", "",
        "```yaml", config_text(cfg).rstrip(), "```", "",
    ])
