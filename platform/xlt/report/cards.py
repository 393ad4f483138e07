"""What every model card of an export shares: the metadata block a model hub indexes, and how to use it."""

from __future__ import annotations

from collections.abc import Sequence


def card_metadata(languages: Sequence[str]) -> list[str]:
    """The card's opening block, which a model hub indexes."""
    import yaml

    metadata = {"library_name": "sentence-transformers", "pipeline_tag": "text-classification",
                "language": list(dict.fromkeys(languages)),
                "tags": ["xlt", "cross-lingual-transfer", "text-classification"], "metrics": ["accuracy", "f1"]}
    return ["---", yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True).rstrip(), "---", ""]


def card_use(call: str, note: str = "", loader: str = "Classifier") -> list[str]:
    """The card's "Use" section: ``<loader>.from_pretrained(DIR).<call>``."""
    encoder = ["from sentence_transformers import SentenceTransformer",
               "embeddings = SentenceTransformer(DIR).encode(texts)            # the encoder"] if loader == "Classifier" else []
    return ["## Use", "",
            "```python", *encoder,
            f"from xlt.models import {loader}",
            f"predictions = {loader}.from_pretrained(DIR).{call}   # labels, confidence, probabilities",
            "```", *([note.strip(" ()").capitalize() + ".", ""] if note else [""]),
            *(["The encoder holds no pooler (xlt pools the hidden states itself): through transformers, "
               "`AutoModel.from_pretrained(DIR, add_pooling_layer=False)` for an architecture that has one (BERT, "
               "XLM-R).", ""] if loader == "Classifier" else [])]
