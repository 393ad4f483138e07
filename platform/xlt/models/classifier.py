"""Classifier = encoder + dropout + linear head; ``predict`` gives label, confidence, probabilities.

``save_pretrained(directory)`` exports it for use outside xlt, ``Classifier.from_pretrained(directory)``
loads it back whole:

- the encoder as a sentence-transformers model (``modules.json``, the transformer's own files,
  ``1_Pooling/``; the prefix, e.g. e5's ``"query: "``, as its default prompt), so that
  ``SentenceTransformer(directory).encode(texts)`` gives the embeddings xlt gives, and as xlt's
  own ``local:`` checkpoint (``xlt_encoder.json``: pooling and prefix);
- the head as ``head.safetensors`` (``head.weight``, ``head.bias``: the classifier's own state-dict
  names) and ``classifier.json`` (label names in the head's order, pairs or not, the encoder settings
  ``from_pretrained`` rebuilds it with, and ``from_source``: the state-dict names the ``local:``
  encoder holds, which the head file leaves out, as a checkpoint leaves out frozen weights:
  ``xlt.models.state``). ``xlt.inference.ClassifierSpec`` reads the same pair of files.

Only a transformer encoder pooled the way sentence-transformers pools (``cls`` or ``mean`` of the
last layer) exports; an intermediate layer, ``avg_first_last`` or the bundled USE does not, and says so.

A classifier may read its features as a frozen probe reads them (``xlt.eval.adaptation``): L2-normalised
(``normalize``) and, for each language of ``languages``, centred on that language's mean and L2-normalised
(``language_means``, a buffer saved with the head; ``classifier.json`` names the languages in its rows' order).
Such a classifier predicts a text only with its language: ``predict(texts, langs)``.

``CombinedClassifier``: classifiers of the same labels as one, by the renormalised product of their
probabilities (``combine``; Blum & Mitchell 1998's co-training classifier, ``xlt.cotrain.classifier``). Its
export is a directory of its members' exports, one sub-directory each, and ``combination.json`` naming them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from .encoder import Item, TextEncoder, TransformerEncoder
from .loader import EncoderConfig, load_encoder
from .state import load_trained

CLASSIFIER_FILE, HEAD_FILE = "classifier.json", "head.safetensors"
ST_CONFIG_FILE = "sentence_bert_config.json"  # sentence-transformers' settings of the Transformer module
COMBINATION_FILE = "combination.json"  # a CombinedClassifier's export: its members, each a Classifier's export
FLOOR = 1e-6  # the least probability a combination reads (a rounded 0 does not veto the other members)


@dataclass(frozen=True)
class Predictions:
    """Predictions for N texts: label names (N,), confidence = max probability (N,), probabilities (N, C)."""

    labels: list[str]
    confidence: np.ndarray
    probabilities: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


class Classifier(nn.Module):
    """Sequence classifier over any ``TextEncoder``; a frozen encoder trains only the head.

    ``paired``: the inputs are ``(text, text_pair)`` items; the head reads the encoder's pair
    features (4D wide for a combining sentence encoder, see ``xlt.models.encoder``). ``normalize``,
    ``languages``: the features as a frozen probe reads them (module docstring); ``language_means``
    starts at zero, for ``load_state_dict`` or the probe (``xlt.eval.adaptation.Probe.classifier``) to fill.
    """

    def __init__(self, encoder: TextEncoder, labels: Sequence[str], dropout: float = 0.1,
                 paired: bool = False, normalize: bool = False, languages: Sequence[str] = ()) -> None:
        super().__init__()
        if len(labels) < 2 or len(set(labels)) != len(labels):
            raise ValueError(f"labels must be at least two distinct names, got {list(labels)}")
        if len(set(languages)) != len(languages):
            raise ValueError(f"languages must be distinct codes, got {list(languages)}")
        self.encoder, self.labels, self.paired = encoder, list(labels), paired
        self.normalize, self.languages = normalize, list(languages)
        self.dropout = nn.Dropout(dropout)
        dim = encoder.feature_dim(paired)
        self.head = nn.Linear(dim, len(labels))
        if self.languages:
            self.register_buffer("language_means", torch.zeros(len(self.languages), dim))

    def forward(self, texts: list[Item], langs: Sequence[str] | None = None) -> torch.Tensor:
        """Logits (B, C); ``langs``: each text's language, which a centred classifier needs."""
        if self.encoder.trainable:
            features = self.encoder.embed(texts)
        else:
            with torch.no_grad():
                features = self.encoder.embed(texts)
        return self.head(self.dropout(self.features(features.to(self.head.weight.device), langs)))

    def features(self, embeddings: torch.Tensor, langs: Sequence[str] | None) -> torch.Tensor:
        """The encoder's ``embeddings`` (B, D) as the head reads them: normalised and centred if configured."""
        if self.normalize:
            embeddings = nn.functional.normalize(embeddings, dim=-1)
        if not self.languages:
            return embeddings
        if langs is None or len(langs) != len(embeddings):
            given = "none" if langs is None else f"{len(langs)} for {len(embeddings)} texts"
            raise ValueError(f"this classifier centres each language on its own mean ({', '.join(self.languages)}): "
                             f"it needs the language of every text, one code each (given: {given}); pass them as "
                             f"predict(texts, langs=[...]), e.g. langs=[{self.languages[0]!r}] * len(texts), or a "
                             "'lang' column to its MLflow model")
        unknown = sorted(set(langs) - set(self.languages))
        if unknown:
            raise ValueError(f"this classifier centres each language on the mean of its unlabelled rows and has "
                             f"none for {unknown}; it knows {', '.join(self.languages)}")
        rows = torch.tensor([self.languages.index(lang) for lang in langs], device=embeddings.device)
        return nn.functional.normalize(embeddings - self.language_means[rows].to(embeddings.dtype), dim=-1)

    def add_languages(self, means: Mapping[str, np.ndarray | Sequence[float]]) -> None:
        """Centre each language of ``means`` on its mean from now on (a language's mean is that of its
        ``uncentred`` features: ``xlt.predict.centring``), beside the languages it knows."""
        if not self.languages:
            raise ValueError("this classifier centres no language: it has no means to add to")
        known = sorted(set(means) & set(self.languages))
        if known:
            raise ValueError(f"this classifier has a mean for {known} already")
        added = torch.as_tensor(np.stack([np.asarray(m, dtype=np.float32) for m in means.values()]),
                                device=self.language_means.device, dtype=self.language_means.dtype)
        if added.shape[1] != self.language_means.shape[1]:
            raise ValueError(f"a language mean has {added.shape[1]} dimensions; this classifier's features have "
                             f"{self.language_means.shape[1]}")
        self.languages += list(means)
        self.language_means = torch.cat([self.language_means, added])

    @torch.no_grad()
    def uncentred(self, texts: Sequence[Item], batch_size: int = 64, sort_by_length: bool = True,
                  tokens_per_batch: int = 0) -> torch.Tensor:
        """The features of ``texts`` before any language's mean is taken off (normalised if ``normalize``), in
        batches as ``predict`` encodes them."""
        features = self._encoded(texts, batch_size, sort_by_length, tokens_per_batch)
        return nn.functional.normalize(features, dim=-1) if self.normalize else features

    def _encoded(self, texts: Sequence[Item], batch_size: int, sort_by_length: bool,
                 tokens_per_batch: int) -> torch.Tensor:
        """The encoder's embeddings of ``texts`` in inference mode, on the head's device."""
        was_training = self.training
        self.eval()
        try:
            features = torch.from_numpy(self.encoder.encode(texts, batch_size=batch_size, sort_by_length=sort_by_length,
                                                            tokens_per_batch=tokens_per_batch))
        finally:
            self.train(was_training)
        return features.to(self.head.weight.device)

    @torch.no_grad()
    def predict(self, texts: Sequence[Item], batch_size: int = 64, sort_by_length: bool = True,
                tokens_per_batch: int = 0, langs: Sequence[str] | None = None) -> Predictions:
        """Inference in batches (length-bucketed unless ``sort_by_length`` is false, and within a
        token budget if ``tokens_per_batch`` > 0: the encoder's ``encode``), then the head;
        ``langs``: each text's language, which a centred classifier needs."""
        features = self.features(self._encoded(texts, batch_size, sort_by_length, tokens_per_batch), langs)
        probs = torch.softmax(self.head(features).float(), dim=-1).cpu().numpy()  # the head has no dropout of its own
        best = probs.argmax(1)
        return Predictions([self.labels[i] for i in best], probs.max(1), probs)

    def save_pretrained(self, directory: str | Path, card: str = "") -> Path:
        """Export to ``directory`` (module docstring), with ``card`` as its ``README.md``."""
        from safetensors.torch import save_file

        encoder = self.encoder
        directory = Path(directory)
        # xlt's encoder files (weights, tokenizer, pooling and prefix) are written first, by sentence_transformer;
        # its save then writes the tokenizer again, truncating at max_length: sentence-transformers 6 keeps
        # max_seq_length as the tokenizer's model_max_length, not in sentence_bert_config.json.
        sentence_transformer(encoder, directory).save(str(directory))
        if kwargs := backbone_kwargs(encoder):  # sentence-transformers builds the backbone as saved, quietly
            config = json.loads((directory / ST_CONFIG_FILE).read_text(encoding="utf-8"))
            (directory / ST_CONFIG_FILE).write_text(json.dumps({**config, "model_args": kwargs}, indent=2),
                                                     encoding="utf-8")
        head = {name: value.detach().cpu().contiguous() for name, value in self.state_dict().items()
                if not name.startswith("encoder.")}
        save_file(head, str(directory / HEAD_FILE))
        settings = {"labels": self.labels, "paired": self.paired, "max_length": encoder.max_length,
                    "pair_encoding": encoder.pair_encoding, "normalize": self.normalize, "languages": self.languages,
                    "from_source": sorted(name for name in self.state_dict() if name not in head)}
        (directory / CLASSIFIER_FILE).write_text(json.dumps(settings, indent=2), encoding="utf-8")
        if card:
            (directory / "README.md").write_text(card, encoding="utf-8")
        return directory

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> "Classifier":
        """The classifier ``save_pretrained`` wrote to ``directory``, in eval mode."""
        from safetensors.torch import load_file

        encoder_cfg, settings = exported(directory)
        return build_classifier_over(load_encoder(encoder_cfg), settings["labels"], paired=settings["paired"],
                                     normalize=settings.get("normalize", False),
                                     languages=settings.get("languages", ()),
                                     state=load_file(str(Path(directory) / HEAD_FILE)),
                                     from_source=settings["from_source"])


def build_classifier_over(encoder: TextEncoder, labels: Sequence[str], *, paired: bool = False,
                          normalize: bool = False, languages: Sequence[str] = (),
                          state: Mapping[str, torch.Tensor] | None = None, from_source: Sequence[str] = (),
                          seed: int | None = None) -> Classifier:
    """The one way xlt makes a ``Classifier``: over ``encoder``, its head drawn from torch's generator (with
    ``seed``: from that seed, in a forked generator, so that every process builds the same head and the caller's
    stream is untouched), then ``state`` loaded into it, without the names ``from_source`` (the encoder's own,
    ``load_trained``). A fresh classifier (no ``state``) is left in training mode, a loaded one in eval mode."""
    def make() -> Classifier:
        return Classifier(encoder, labels, paired=paired, normalize=normalize, languages=languages)

    if seed is None:
        classifier = make()
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            classifier = make()
    if state is None:
        return classifier
    load_trained(classifier, state, from_source)
    return classifier.eval()


def exported(directory: str | Path) -> tuple[EncoderConfig, dict]:
    """The encoder config and ``classifier.json`` of an export (``Classifier.save_pretrained``)."""
    directory = Path(directory)
    if not (directory / CLASSIFIER_FILE).is_file():
        raise FileNotFoundError(f"{directory} is not an exported xlt classifier: no {CLASSIFIER_FILE}")
    settings = json.loads((directory / CLASSIFIER_FILE).read_text(encoding="utf-8"))
    return EncoderConfig(source=f"local:{directory.resolve()}", max_length=settings["max_length"],
                         pair_encoding=settings["pair_encoding"]), settings


def sentence_transformer(encoder: TextEncoder, directory: str | Path, *, prompts: bool = True):
    """``encoder`` as a ``sentence_transformers.SentenceTransformer`` whose weights are saved in
    ``directory``: the same transformer, pooling and maximum length, and (``prompts``) its prefix as the
    default prompt, so that ``encode(texts)`` gives the embeddings xlt gives. Only a transformer pooled
    by ``cls`` or ``mean`` of its last layer has such a form."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    check_exportable(encoder)
    assert isinstance(encoder, TransformerEncoder)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    encoder.save(directory)
    modules = [Transformer(str(directory), max_seq_length=encoder.max_length, model_kwargs=backbone_kwargs(encoder)),
               Pooling(encoder.dim, pooling_mode=encoder.pooling)]
    named = {"query": encoder.prefix} if prompts and encoder.prefix else None
    return SentenceTransformer(modules=modules, prompts=named, default_prompt_name="query" if named else None,
                               device="cpu")


def backbone_kwargs(encoder: TransformerEncoder) -> dict[str, Any]:
    """What rebuilds ``encoder``'s backbone with exactly the weights it has: xlt pools the hidden states itself and
    builds a BERT-like backbone without its pooler (``add_pooling_layer=False``), which ``AutoModel`` adds unless told
    (as random weights, or as weights a checkpoint holds that nothing trained)."""
    return {"add_pooling_layer": False} if getattr(encoder.backbone, "pooler", ...) is None else {}


def check_exportable(encoder: TextEncoder) -> None:
    """Raise unless ``encoder`` has a sentence-transformers form (``sentence_transformer``): a transformer pooled
    by ``cls`` or ``mean`` of its last layer."""
    if not isinstance(encoder, TransformerEncoder) or encoder.layer != -1 or encoder.pooling not in ("cls", "mean"):
        raise ValueError(f"only a transformer encoder pooled by cls or mean of its last layer has a "
                         f"sentence-transformers form; this one is {type(encoder).__name__} with pooling "
                         f"{getattr(encoder, 'pooling', None)!r}, layer {getattr(encoder, 'layer', None)}")


def combine(probabilities: Sequence[np.ndarray]) -> np.ndarray:
    """The renormalised product of several classifiers' probabilities (N, C) of the same rows, in log space,
    each probability floored at ``FLOOR``."""
    log = sum(np.log(np.clip(np.asarray(p, dtype=np.float64), FLOOR, 1.0)) for p in probabilities)
    log = log - log.max(axis=1, keepdims=True)
    product = np.exp(log)
    return product / product.sum(axis=1, keepdims=True)


class CombinedClassifier:
    """Classifiers of the same labels and input (``members``, by name) as one: the product of their
    probabilities, renormalised (``combine``)."""

    def __init__(self, members: dict[str, Classifier]) -> None:
        first = next(iter(members.values()))
        for name, member in members.items():
            if member.labels != first.labels or member.paired != first.paired:
                raise ValueError(f"member {name!r} has labels {member.labels} (paired {member.paired}); a combination "
                                 f"needs every member's to be {first.labels} (paired {first.paired})")
        self.members, self.labels, self.paired = dict(members), list(first.labels), first.paired
        self.languages = sorted({lang for m in members.values() for lang in m.languages})

    def predict(self, texts: Sequence[Item], batch_size: int = 64, sort_by_length: bool = True,
                tokens_per_batch: int = 0, langs: Sequence[str] | None = None) -> Predictions:
        probs = combine([m.predict(texts, batch_size, sort_by_length, tokens_per_batch, langs).probabilities
                         for m in self.members.values()])
        best = probs.argmax(1)
        return Predictions([self.labels[i] for i in best], probs.max(1), probs)

    def save_pretrained(self, directory: str | Path, card: str = "") -> Path:
        """Each member's export in ``directory/<name>``, and ``combination.json``."""
        directory = Path(directory)
        for name, member in self.members.items():
            member.save_pretrained(directory / name)
        (directory / COMBINATION_FILE).write_text(json.dumps(
            {"members": list(self.members), "rule": "product of the members' probabilities, renormalised",
             "labels": self.labels}, indent=2), encoding="utf-8")
        if card:
            (directory / "README.md").write_text(card, encoding="utf-8")
        return directory

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> "CombinedClassifier":
        settings = json.loads((Path(directory) / COMBINATION_FILE).read_text(encoding="utf-8"))
        return cls({name: Classifier.from_pretrained(Path(directory) / name) for name in settings["members"]})


def export_inputs(directory: str | Path) -> tuple[bool, bool, list[str]]:
    """What the texts an export labels come with, from its files alone: ``(paired, centred, labels)``: pairs
    (``text_pair``), each text's language (a classifier centred per language, or a combination with one), and its
    labels in the head's order."""
    directory = Path(directory)
    if (directory / COMBINATION_FILE).is_file():
        names = json.loads((directory / COMBINATION_FILE).read_text(encoding="utf-8"))["members"]
        members = [export_inputs(directory / name) for name in names]
        return members[0][0], any(centred for _, centred, _ in members), members[0][2]
    settings = json.loads((directory / CLASSIFIER_FILE).read_text(encoding="utf-8"))
    return bool(settings["paired"]), bool(settings.get("languages")), list(settings["labels"])


def load_pretrained(directory: str | Path) -> "Classifier | CombinedClassifier":
    """Whichever export ``directory`` holds: a classifier's, or a combination's."""
    if (Path(directory) / COMBINATION_FILE).is_file():
        return CombinedClassifier.from_pretrained(directory)
    return Classifier.from_pretrained(directory)
