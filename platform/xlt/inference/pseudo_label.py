"""Pseudo-labelling an unlabelled pool with a trained classifier: ``PseudoLabelUDF``, what every labeller runs.

Yu & Joty (2021, §3.1, Alg. 1) run, in every co-training iteration,
each classifier over the unlabelled target-language pool::

    for x_u in U:  (y_u, c_u) = f_θ(x_u)

and then keeps the items whose confidence score c_u exceeds a threshold t. ``PseudoLabelUDF``
is that loop over a batch: every row gets its pseudo label y_u and confidence c_u (selecting above t
is a pure function of those columns, done downstream).

Reading chosen: the paper says "confidence score" without defining it. We take c_u = the
maximum softmax probability of the classifier's dense + softmax head (the probability of the
predicted label), the usual reading and what ``Classifier.predict`` reports. The whole
distribution is kept too (``probabilities``), so a different score (margin, entropy) can be
computed later without running the model again.

The pool U can be far larger than memory and the model is expensive to load, so each labeller
loads the classifier once (``PseudoLabelUDF.load``) and the rows stream through in batches: a job
labels with ``labellers.Labellers``, one pool of actors for all its passes, or the driver.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..config import check
from ..hardware import autocast, inference_device, precisions, resolve_precision
from ..models import load_trained
from ..placement import this_node, this_worker
from ..ray_internals import autoscaler_max_resources
from .settings import EXACT, InferenceSettings
from .spec import ClassifierSpec, build_classifier, load_state

if TYPE_CHECKING:
    import pyarrow as pa

# The columns ``PseudoLabelUDF`` adds (replacing them if present, e.g. from an earlier iteration):
#   pseudo_label   string          the predicted label name (y_u)
#   confidence     float32         its probability, max_k p_k (c_u)
#   probabilities  list<float32>   p_k for every label, in ``ClassifierSpec.labels`` order
#   worker         dictionary<string>  the Ray actor that predicted the row (null in a driver or outside Ray)
#   node           dictionary<string>  its Ray node (null outside Ray): with ``worker``, the pass's placement
#   precision      dictionary<string>  what the actor computed in: fp32, bf16 or fp16 (``auto`` resolved on its
#                                      machine, which the driver's configuration cannot tell)
# With several classifiers (a mapping name -> spec) the first three come once per classifier,
# named ``<name>_pseudo_label`` etc. (``prediction_column``); the last three once.
logger = logging.getLogger(__name__)

PREDICTION_COLUMNS: tuple[str, ...] = ("pseudo_label", "confidence", "probabilities")
PLACEMENT_COLUMNS: tuple[str, ...] = ("worker", "node")
OUTPUT_COLUMNS: tuple[str, ...] = (*PREDICTION_COLUMNS, *PLACEMENT_COLUMNS, "precision")
LANG_COLUMN = "lang"  # each row's language: read by a classifier centred per language (``ClassifierSpec.languages``)


def prediction_column(column: str, name: str | None = None) -> str:
    """``column`` of classifier ``name``'s predictions (``None``: the only classifier)."""
    return column if name is None else f"{name}_{column}"


class PseudoLabelUDF:
    """Ray Data batch UDF: ``pyarrow.Table`` -> the same table plus ``OUTPUT_COLUMNS``.

    Loads the classifier once, in ``__init__`` (i.e. once per actor), and predicts each batch's
    ``text_column`` with ``Classifier.predict`` in sub-batches of ``settings.encode_batch_size``. With
    ``sort_by_length`` the texts of a batch are encoded in length order, so each sub-batch pads
    to its own longest text (length bucketing; results are returned in input order either way).

    ``settings.precision``: ``fp32``, ``bf16``, ``fp16`` or ``auto`` (bf16 autocast where the CPU has
    native bf16: ``xlt.hardware``); the default settings are exact fp32 (``EXACT``), co-training's
    ``inference.precision`` is ``auto``. A precision this actor's device cannot compute in (fp16 asked of a GPU actor that
    landed on a CPU) runs as ``auto`` instead, with a warning.

    ``settings.tokens_per_batch`` > 0: sub-batches of at most that many padded tokens as well as
    ``encode_batch_size`` rows (``xlt.models.encoder.batch_bounds``): on a GPU, a budget that fills
    its memory with short sentences and still fits the long ones. The same predictions.

    ``num_threads``: torch intra-op threads of this actor; ``Labellers`` sets it from the
    CPUs reserved per actor so that actors sharing a node do not oversubscribe its cores
    (torch would otherwise start one thread per core in every actor). ``None`` leaves torch's
    setting alone, which is what a caller in its own process wants.

    Runs on the GPU when the process sees one (Ray makes a GPU visible to actors that reserve
    ``num_gpus``), else on the CPU. Can be called by hand on a ``pyarrow.Table``.

    A sentence-pair classifier (``ClassifierSpec.paired``) reads ``(text_column, pair_column)``.

    ``spec`` may be a mapping ``name -> ClassifierSpec``: every actor then loads each classifier
    once and every row gets each one's prediction (``prediction_column``) in one pass over the
    pool, which is how co-training pseudo-labels with both learners and judges their agreement
    row by row. They must agree on ``paired``: they read the same rows.
    """

    def __init__(self, spec: ClassifierSpec | Mapping[str, ClassifierSpec], settings: InferenceSettings = EXACT, *,
                 sort_by_length: bool = True, text_column: str = "text", pair_column: str = "text_pair",
                 num_threads: int | None = None) -> None:
        import torch

        specs = _named(spec)
        precision = settings.precision
        if num_threads is not None:
            check(num_threads >= 1, "num_threads", num_threads, "an integer >= 1, or None")
            torch.set_num_threads(num_threads)
        device = inference_device()
        self.specs = specs
        self.classifiers = {name: build_classifier(s).to(device) for name, s in specs.items()}
        if precision not in ("auto", *precisions(device)):
            logger.warning(f"inference.precision {precision}: not something the {device} this actor runs on computes "
                           "in; labelling at auto")
            precision = "auto"
        self.device, self.precision = device, resolve_precision(precision, device)
        self.encode_batch_size, self.sort_by_length, self.text_column = settings.encode_batch_size, sort_by_length, text_column
        self.tokens_per_batch = settings.tokens_per_batch
        self.pair_column = pair_column if next(iter(specs.values())).paired else None
        self.constants = {"worker": this_worker(), "node": this_node(), "precision": self.precision}

    def load(self, spec: ClassifierSpec | Mapping[str, ClassifierSpec]) -> None:
        """The classifiers of ``spec`` from now on: where one of the same name reads the same model, labels,
        items and frozen weights, only its weights are loaded into what is built (``load_state``: from the object
        store or a file), the encoder and tokenizer kept, as a co-training iteration's new fits need; the
        predictions are those of a UDF built anew from ``spec`` (its frozen weights, ``from_source``, are the
        model's own either way). Any other is built."""
        specs = _named(spec)
        for name, one in specs.items():
            old = self.specs.get(name)
            same = old is not None and replace(old, state=None) == replace(one, state=None)
            if not same or one.state is None:
                self.classifiers[name] = build_classifier(one).to(self.device)
            else:
                load_trained(self.classifiers[name], load_state(one), one.from_source)
        self.classifiers = {name: self.classifiers[name] for name in specs}
        self.specs = specs

    def _items(self, batch: pa.Table) -> list:
        """The batch's texts (pairs: ``(text, text_pair)``), checked."""
        import pyarrow as pa

        if not isinstance(batch, pa.Table):
            raise TypeError(f"PseudoLabelUDF takes pyarrow.Table batches, got {type(batch).__name__}; use "
                            "map_batches(..., batch_format='pyarrow') (pseudo_label does)")
        if self.text_column not in batch.column_names:
            raise KeyError(f"the batch has no text column {self.text_column!r}; columns: {batch.column_names} "
                           "(pass text_column= to name the column holding the texts)")
        columns = [c for c in (self.text_column, self.pair_column) if c is not None]
        for name in columns:
            if name not in batch.column_names:
                raise KeyError(f"the batch has no column {name!r} for the paired classifier; columns: "
                               f"{batch.column_names}")
            if batch.column(name).null_count:
                raise ValueError(f"{batch.column(name).null_count} of {batch.num_rows} rows have a null {name!r}; "
                                 "drop them before pseudo-labelling (a null has no prediction)")
        sides = [batch.column(name).to_pylist() for name in columns]
        return sides[0] if len(sides) == 1 else list(zip(*sides))

    @staticmethod
    def _langs(batch: pa.Table, name: str | None) -> list[str]:
        """Each row's language, which a classifier centred on each language's mean reads."""
        if LANG_COLUMN not in batch.column_names:
            raise KeyError(f"the batch has no {LANG_COLUMN!r} column, which classifier {name or ''} reads: it "
                           f"centres each language on its own mean; columns: {batch.column_names}")
        return batch.column(LANG_COLUMN).to_pylist()

    def language_sums(self, batch: pa.Table) -> dict[str | None, dict[str, tuple[np.ndarray, int]]]:
        """For each centred classifier, by language it has no mean for: the sum (float64) of the batch's rows'
        ``Classifier.uncentred`` features in that language, and how many rows (``xlt.predict.centring``)."""
        sums: dict[str | None, dict[str, tuple[np.ndarray, int]]] = {}
        items = None
        for name, classifier in self.classifiers.items():
            if not classifier.languages:
                continue
            langs = self._langs(batch, name)
            new = [i for i, lang in enumerate(langs) if lang not in classifier.languages]
            if not new:
                continue
            items = self._items(batch) if items is None else items
            with autocast(self.precision, self.device):
                features = classifier.uncentred([items[i] for i in new], batch_size=self.encode_batch_size,
                                                sort_by_length=self.sort_by_length,
                                                tokens_per_batch=self.tokens_per_batch)
            features = features.float().cpu().numpy().astype(np.float64)
            by_lang: dict[str, list[int]] = {}
            for row, i in enumerate(new):
                by_lang.setdefault(langs[i], []).append(row)
            sums[name] = {lang: (features[rows].sum(axis=0), len(rows)) for lang, rows in by_lang.items()}
        return sums

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow as pa

        items = self._items(batch)
        added = {}
        for name, classifier in self.classifiers.items():
            # centred on each language's mean: it reads the rows' languages
            langs = self._langs(batch, name) if classifier.languages else None
            with autocast(self.precision, self.device):
                pred = classifier.predict(items, batch_size=self.encode_batch_size, sort_by_length=self.sort_by_length,
                                          tokens_per_batch=self.tokens_per_batch, langs=langs)
            probabilities = np.asarray(pred.probabilities, dtype=np.float32)  # (B, C)
            n, c = probabilities.shape
            added |= {
                prediction_column("pseudo_label", name): pa.array(pred.labels, type=pa.string()),
                prediction_column("confidence", name): pa.array(np.asarray(pred.confidence, dtype=np.float32),
                                                                type=pa.float32()),
                prediction_column("probabilities", name): pa.ListArray.from_arrays(
                    pa.array(np.arange(0, n * c + 1, c, dtype=np.int32)),
                    pa.array(probabilities.reshape(-1), type=pa.float32())),
            }
        for name, value in self.constants.items():
            added[name] = pa.array([value] * batch.num_rows, type=pa.string()).dictionary_encode()
        for name, values in added.items():
            if name in batch.column_names:
                batch = batch.set_column(batch.column_names.index(name), name, values)
            else:
                batch = batch.append_column(name, values)
        return batch


def gpus_or_none(num_gpus: float) -> float:
    """``num_gpus`` if the Ray cluster has a GPU or its autoscaler can start a node with one, else 0
    with one warning line: an actor reserving a GPU that can never exist would wait forever. (The
    autoscaler's node types: ``xlt.ray_internals.autoscaler_max_resources``.)"""
    if num_gpus <= 0:
        return num_gpus
    import ray

    if ray.cluster_resources().get("GPU", 0) > 0 or autoscaler_max_resources().get("GPU", 0) > 0:
        return num_gpus
    logger.warning(f"inference.num_gpus {num_gpus:g}: this Ray cluster has no GPU and cannot start one; "
                   "labelling on CPUs")
    return 0.0


def _named(spec: ClassifierSpec | Mapping[str, ClassifierSpec]) -> dict[str | None, ClassifierSpec]:
    """``spec`` as ``{name: spec}`` (``None``: the only one), checked."""
    specs: dict[str | None, ClassifierSpec] = dict(spec) if isinstance(spec, Mapping) else {None: spec}
    if not specs:
        raise ValueError("pseudo-labelling needs at least one classifier spec")
    for name, one in specs.items():
        if not isinstance(one, ClassifierSpec):
            raise TypeError(f"spec{'' if name is None else f' {name!r}'} must be a ClassifierSpec (see "
                            f"share_classifier), got {type(one).__name__}")
    if len({one.paired for one in specs.values()}) > 1:
        raise ValueError("the classifiers of one pass must all read single texts or all sentence pairs: "
                         f"paired = {', '.join(f'{name}: {one.paired}' for name, one in specs.items())}")
    return specs
