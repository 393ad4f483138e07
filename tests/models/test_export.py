"""``Classifier.save_pretrained`` / ``from_pretrained``: the encoder loads in sentence-transformers
with the embeddings xlt gives, and the whole classifier loads back predicting what it predicted."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xlt.models import Classifier, EncoderConfig, load_encoder

# The classifiers truncate at 12 tokens: most of these texts are longer, and an export must truncate where xlt does.
TEXTS = ["the rover found water on mars and drove on towards the crater rim for two more days",
         "das Finale endete zwei zu eins nach einer langen Verlängerung im ausverkauften Stadion", "un voyage à Rome",
         "中文句子很长很长很长很长很长很长很长很长很长", "ok"]
LABELS = ("science", "sports", "travel")
MAX_LENGTH = 12


def classifier(source: str, pooling: str | None = None) -> Classifier:
    torch.manual_seed(0)
    model = Classifier(load_encoder(EncoderConfig(source=source, pooling=pooling, max_length=MAX_LENGTH)), LABELS)
    torch.nn.init.normal_(model.head.weight, std=1.0)
    return model.eval()


@pytest.mark.parametrize("source, pooling", [("tiny:bert", "cls"), ("tiny:bert", "mean"),
                                             pytest.param("bundled:multilingual-e5-small", None, marks=pytest.mark.slow)])
def test_an_export_loads_in_sentence_transformers_and_back_as_the_classifier(tmp_path, source, pooling):
    from sentence_transformers import SentenceTransformer

    from safetensors.numpy import load_file

    model = classifier(source, pooling)
    model.save_pretrained(tmp_path / "export", card="# a card\n")
    assert max(len(model.encoder.tokenizer(text)["input_ids"]) for text in TEXTS) > MAX_LENGTH
    ours = model.encoder.encode(TEXTS, normalize=True)
    loaded_st = SentenceTransformer(str(tmp_path / "export"), device="cpu")
    assert loaded_st.max_seq_length == MAX_LENGTH
    theirs = loaded_st.encode(TEXTS, normalize_embeddings=True)
    assert (ours * theirs).sum(1).min() >= 0.9999  # e5: its "query: " prefix is the default prompt
    # A user's own loop: sentence-transformers' embeddings through head.safetensors in numpy.
    head = load_file(str(tmp_path / "export" / "head.safetensors"))
    logits = loaded_st.encode(TEXTS) @ head["head.weight"].T + head["head.bias"]
    probabilities = np.exp(logits - logits.max(1, keepdims=True))
    probabilities /= probabilities.sum(1, keepdims=True)
    assert np.abs(probabilities - model.predict(TEXTS).probabilities).max() < 1e-5
    loaded = Classifier.from_pretrained(tmp_path / "export")
    expected, got = model.predict(TEXTS), loaded.predict(TEXTS)
    assert got.labels == expected.labels and np.abs(got.probabilities - expected.probabilities).max() < 1e-6
    assert (tmp_path / "export" / "README.md").read_text() == "# a card\n"


def test_an_export_holds_exactly_the_weights_it_loads_and_every_library_loads_it_quietly(tmp_path, capfd):
    """No pooler (xlt pools itself): sentence-transformers, transformers (told ``add_pooling_layer=False``, as the
    card says) and xlt load it without a load report, with the embeddings xlt gave; an export written before, whose
    encoder sentence-transformers saved with a randomly initialised pooler, loads quietly in xlt too."""
    from safetensors import safe_open
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    model = classifier("tiny:bert", "mean")
    export = model.save_pretrained(tmp_path / "export")
    with safe_open(str(export / "model.safetensors"), framework="pt") as stored:
        assert not [name for name in stored.keys() if name.startswith("pooler.")]
    ours = model.encoder.encode(TEXTS)
    capfd.readouterr()
    assert np.abs(SentenceTransformer(str(export), device="cpu").encode(TEXTS) - ours).max() < 1e-5
    AutoModel.from_pretrained(export, add_pooling_layer=False)
    assert np.abs(Classifier.from_pretrained(export).encoder.encode(TEXTS) - ours).max() < 1e-6
    printed = capfd.readouterr()
    assert "LOAD REPORT" not in printed.out + printed.err
    AutoModel.from_pretrained(export).save_pretrained(export)  # as exports were: a pooler nobody trained
    capfd.readouterr()
    assert np.abs(Classifier.from_pretrained(export).encoder.encode(TEXTS) - ours).max() < 1e-6
    printed = capfd.readouterr()
    assert "LOAD REPORT" not in printed.out + printed.err


def test_what_sentence_transformers_cannot_pool_is_refused_and_a_non_export_is_named(tmp_path):
    with pytest.raises(ValueError, match="only a transformer encoder pooled by cls or mean of its last layer"):
        classifier("tiny:bert", "avg_first_last").save_pretrained(tmp_path / "export")
    with pytest.raises(FileNotFoundError, match="is not an exported xlt classifier: no classifier.json"):
        Classifier.from_pretrained(tmp_path)
