"""A co-training learner that is a probe: a frozen encoder, each language centred on its own mean, a logistic regression.

The adapted probe (``xlt.eval.adaptation``) as the second view of Alg. 1 (``kind: probe``): every fit
is a logistic regression on the frozen encoder's L2-normalised embeddings of the learner's labelled
rows (the original D and the pseudo-labels received so far), each row centred on its language's mean
(``ProbeSettings.center``: the source language's from D, a target's from its unlabelled pool, both
fixed for the job), with C the best of ``c_values`` on the source language's dev rows (ties: the
smallest). It fits in seconds in the driver, holds no worker, and re-fits from nothing each iteration,
as a fine-tuned learner re-fits from the pretrained encoder (``xlt.cotrain.learner``).

Each text is embedded once for the job (a cache by text), the pools once for their means (streamed,
one language at a time, nothing kept but the sum). What a fit hands on is what a fine-tuned learner's
does (``Fit``): metrics and predictions (with probabilities) of the evaluation split and the source
dev, and the weights as a ``Classifier`` (``Probe.classifier``: the regression as its head, each
language's mean as its ``language_means``), which the job's labellers rebuild over the same encoder to
pseudo-label the pool and which predicts what the probe predicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import placement
from ..engine.context import torch_threads
from ..eval.adaptation import Probe, centred, fit_probe
from ..metrics import TRAIN_LOSS
from ..placement import this_node
from ..storage import fetched, join, read_text, staged
from ..tasks import Task
from .classifier import DEV, scores
from .config import ProbeSettings
from .learner import Fit

ENCODE_BATCH = 64


class ProbeLearner:
    """Learner ``name`` of ``kind: probe`` for a whole job: ``fit(rows, iteration)`` -> ``Fit``. A context
    manager, as a fine-tuned learner's ``FitService`` is (nothing to start or stop)."""

    def __init__(self, name: str, model: Any, settings: ProbeSettings, task: Task, labeled: Sequence[Mapping[str, Any]],
                 evaluation: Sequence[Mapping[str, Any]], dev: Sequence[Mapping[str, Any]], split: str,
                 pool_limit: int, seed: int = 0, directory: str | None = None, disjoint: bool = False,
                 threads: int = 1) -> None:
        from ..models import load_encoder

        self.name, self.model, self.settings, self.task, self.split, self.seed = name, model, settings, task, split, seed
        self.threads = threads  # torch's, while it encodes (the job's inference.threads)
        self.directory = directory  # where each fit's probe is kept (``probe_path``), for the job's exports
        self.encoder = load_encoder(model)
        self.evaluation = {split: list(evaluation)}
        if split != DEV:
            self.evaluation[DEV] = list(dev)
        self.dev = [r for r in (evaluation if split == DEV else dev) if r["lang"] == task.source_lang]
        self._cache: dict[Any, np.ndarray] = {}
        self.means: dict[str, np.ndarray] = {}
        if settings.center:
            source = task.source_lang
            self.means[source] = self.embed([r for r in labeled if r["lang"] == source]).mean(axis=0)
            for lang in task.target_langs:
                self.means[lang] = self._pool_mean(lang, pool_limit, disjoint)

    def __enter__(self) -> ProbeLearner:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def item(self, row: Mapping[str, Any]) -> Any:
        return (row["text"], row["text_pair"]) if self.task.paired else row["text"]

    def embed(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """The normalised embeddings of ``rows``, each text embedded once for the job."""
        items = [self.item(r) for r in rows]
        new = list(dict.fromkeys(i for i in items if i not in self._cache))
        if new:
            for item, vector in zip(new, self.encode(new)):
                self._cache[item] = vector
        dim = self.encoder.feature_dim(self.task.paired)
        return np.stack([self._cache[i] for i in items]) if items else np.empty((0, dim), dtype=np.float32)

    def encode(self, items: Sequence[Any]) -> np.ndarray:
        """The encoder's normalised embeddings of ``items`` on ``threads`` torch threads."""
        with torch_threads(self.threads):
            return self.encoder.encode(items, batch_size=ENCODE_BATCH, normalize=True)

    def _pool_mean(self, lang: str, limit: int, disjoint: bool) -> np.ndarray:
        """The mean normalised embedding of ``lang``'s pool (the job's: ``Task.pool``), streamed (nothing cached)."""
        examples = self.task.pool(lang, limit, disjoint=disjoint, keep=False)
        if not examples:
            raise ValueError(f"a probe learner centres {lang} on its unlabelled pool, which has no rows")
        total = None
        for start in range(0, len(examples), 1024):
            chunk = [(ex.text, ex.text_pair) if self.task.paired else ex.text for ex in examples[start:start + 1024]]
            part = self.encode(chunk).sum(axis=0, dtype=np.float64)
            total = part if total is None else total + part
        return (total / len(examples)).astype(np.float32)

    def features(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """What the regression reads: each row's embedding, centred on its language's mean."""
        x = self.embed(rows)
        if not self.means:
            return x
        langs = np.asarray([r["lang"] for r in rows], dtype=object)
        for lang in dict.fromkeys(langs.tolist()):
            at = langs == lang
            x[at] = centred(x[at], self.means[lang])
        return x

    def fitted(self, rows: Sequence[Mapping[str, Any]]) -> tuple[Probe, dict[str, Any], dict[str, dict[str, list]]]:
        """The probe on ``rows`` (``id, text, text_pair, label, lang``), its metrics and its predictions of
        every evaluated split."""
        labels = list(self.task.labels)
        y = np.array([labels.index(r["label"]) for r in rows])
        x = self.features(rows)
        model = fit_probe(x, y, self.features(self.dev), np.array([labels.index(r["label"]) for r in self.dev]),
                          self.settings.c_values, self.settings.max_iter, self.seed)
        predictions = {split: self._predictions(model, split_rows) for split, split_rows in self.evaluation.items()}
        fitted = _full(model, x, len(labels))[np.arange(len(y)), y]  # the cross-entropy of its training rows
        metrics = {TRAIN_LOSS: float(-np.log(np.clip(fitted, 1e-12, 1.0)).mean()),
                   "train/rows": float(len(rows)), "probe/c": float(model.C),
                   placement.key("train"): placement.as_text([this_node()]),
                   **scores(predictions, self.task.source_lang)}
        return Probe(model, self.means), metrics, predictions

    def fit(self, rows: Sequence[Mapping[str, Any]], iteration: int) -> Any:
        """``fitted`` as a ``Fit``: the probe's classifier without the encoder (``from_source``) in the object store."""
        import ray

        probe, metrics, predictions = self.fitted(rows)
        state = probe.classifier(self.encoder, list(self.task.labels), self.task.paired, normalize=True).state_dict()
        from_source = tuple(k for k in state if k.startswith("encoder."))
        head = {k: v for k, v in state.items() if k not in from_source}
        if self.directory is not None:
            save_probe(self.directory, iteration, head, tuple(self.means), from_source)
        return Fit(metrics, ray.put(head), from_source, predictions, normalize=True, languages=tuple(self.means))

    def _predictions(self, model: Any, rows: Sequence[Mapping[str, Any]]) -> dict[str, list]:
        labels = list(self.task.labels)
        probabilities = _full(model, self.features(rows), len(labels))
        return {"id": [r["id"] for r in rows], "lang": [r["lang"] for r in rows], "label": [r["label"] for r in rows],
                "predicted": [labels[k] for k in probabilities.argmax(axis=1)], "labels": labels,
                "probabilities": np.round(probabilities, 4).tolist()}


def _full(model: Any, x: np.ndarray, num_labels: int) -> np.ndarray:
    """The regression's probabilities over every label (N, C): a label absent from its training rows gets 0."""
    out = np.zeros((len(x), num_labels))
    out[:, model.classes_.astype(int)] = model.predict_proba(x)
    return out


def probe_path(directory: str, iteration: int, suffix: str = ".pt") -> str:
    """Where a probe learner's run directory keeps the probe of ``iteration``: its head and language means as a
    state dict (``.pt``, what ``xlt.inference.ClassifierSpec.state`` reads), and beside it (``.json``) the
    languages of the means and the encoder's names the state leaves out (``from_source``)."""
    return join(directory, f"probe-iteration{iteration}{suffix}")


def save_probe(directory: str, iteration: int, head: Mapping[str, Any], languages: tuple[str, ...],
               from_source: tuple[str, ...]) -> None:
    import json

    import torch

    with staged(directory) as local:
        torch.save(dict(head), local / f"probe-iteration{iteration}.pt")
        (local / f"probe-iteration{iteration}.json").write_text(
            json.dumps({"languages": list(languages), "from_source": list(from_source)}), encoding="utf-8")


def load_probe(directory: str, iteration: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """What ``save_probe`` kept: the head's state, and its settings (``languages``, ``from_source``)."""
    import json

    import torch

    settings = read_text(probe_path(directory, iteration, ".json"))
    with fetched(probe_path(directory, iteration)) as local:
        if local is None or settings is None:
            raise FileNotFoundError(f"{probe_path(directory, iteration)} does not exist: the probe learner's run "
                                    "keeps each iteration's probe there")
        return torch.load(local, map_location="cpu", weights_only=True), json.loads(settings)
