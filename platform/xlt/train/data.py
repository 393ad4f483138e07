"""SIB-200 data for fine-tuning: the train rows of a setting, their views, and the evaluation rows.

Train rows are one per labelled example (``id, text, label, lang, source_id``):

- zero-shot: the source language's train split;
- translate-train: plus, for every target language, the translations of exactly those source
  sentences (SIB-200 rows sharing the FLORES ``index_id``), labelled like their source.

With ``data.augment``, ``train_dataset`` streams the source rows through the Ray Data
augmentation UDF (``xlt.data.augment``): each gets its views in list columns, made on the fly
as Ray Train consumes the dataset. Translate-train rows are already in a target language (the
UDF translates from the source language) and carry empty view lists, so the dataset has one
schema.

Everything is read from the train split only; dev and test are only evaluated.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, TypeVar

from ..data import Example, read_muse, read_sib200
from ..data.augment import VIEW_COLUMNS, AugmentConfig, build_augmented_dataset
from ..data.translate import DictionaryTranslator, ProvidedTranslations
from .config import DataSettings

if TYPE_CHECKING:
    import ray.data

T = TypeVar("T")


def evenly_spaced(items: Sequence[T], n: int) -> list[T]:
    """At most ``n`` items (0 = all), evenly spaced: published splits are often sorted by label."""
    if not n or len(items) <= n:
        return list(items)
    return list(items[:: len(items) // n][:n])


def example_row(example: Example) -> dict[str, Any]:
    return {"id": example.id, "text": example.text, "label": example.label, "lang": example.lang,
            "source_id": example.source_id}


def _translations(root: Path, lang: str, ids: set[str]) -> dict[str, Example]:
    """The train-split rows of ``lang`` whose ``source_id`` is in ``ids``, keyed by it."""
    return {ex.source_id: ex for ex in read_sib200(root, lang, "train") if ex.source_id in ids}


def train_rows(data: DataSettings, root: Path, target_langs: Sequence[str]) -> list[dict[str, Any]]:
    """The train rows of ``data.setting`` (see the module docstring), source language first."""
    source = evenly_spaced(read_sib200(root, data.source_lang, "train"), data.max_examples)
    rows = [example_row(ex) for ex in source]
    if data.setting == "translate-train":
        ids = {ex.source_id for ex in source}
        for lang in target_langs:
            rows.extend(example_row(ex) for ex in _translations(root, lang, ids).values())
    return rows


def augmentation_sources(augment: AugmentConfig, root: Path) -> dict[str, Any]:
    """The offline translators and dictionaries of ``augment`` (keyword arguments of
    ``build_augmented_dataset``): SIB-200's human translations for full views, MUSE dictionaries
    (``<root>/muse/<src>-<tgt>.txt``) for code-switching and for the word-by-word gloss of
    partial views (SIB-200 has no translation of a span). A language without what its views
    need fails here, naming it."""
    out: dict[str, Any] = {}
    if augment.t_f:
        out["translator"] = ProvidedTranslations.from_sib200(root, [augment.source_lang,
                                                                    *augment.languages_for("full")])
    dictionary_langs = [*(augment.languages_for("partial") if augment.t_p else ()),
                        *(augment.languages_for("codeswitch") if augment.t_c else ())]
    dictionaries = [read_muse(root, augment.source_lang, lang) for lang in dict.fromkeys(dictionary_langs)]
    if augment.t_c:
        out["dictionaries"] = dictionaries
    if augment.t_p:
        out["partial_translator"] = DictionaryTranslator(
            [d for d in dictionaries if d.tgt_lang in augment.languages_for("partial")])
    return out


def train_dataset(data: DataSettings, root: Path, rows: list[dict[str, Any]]) -> ray.data.Dataset:
    """``rows`` as a Ray dataset; with ``data.augment``, the source-language rows stream through
    the augmentation UDF and the others get empty view columns (see the module docstring)."""
    import pyarrow as pa
    import ray.data

    if data.augment is None:
        return ray.data.from_items(rows)
    source = [row for row in rows if row["lang"] == data.source_lang]
    others = [row for row in rows if row["lang"] != data.source_lang]
    augmented = build_augmented_dataset(ray.data.from_items(source), data.augment, num_cpus=data.augment_cpus,
                                        **augmentation_sources(data.augment, root))
    if not others:
        return augmented
    table = pa.Table.from_pylist(others)
    for name in VIEW_COLUMNS:  # as the UDF writes them for a single text: view_pairs is null
        values = [None if name == "view_pairs" else [] for _ in others]
        table = table.append_column(name, pa.array(values, type=pa.list_(pa.string())))
    return augmented.union(ray.data.from_arrow(table))


def eval_rows(root: Path, langs: Sequence[str], split: str, max_examples: int = 0) -> list[dict[str, Any]]:
    """``text, label, lang`` of ``split`` for each language (at most ``max_examples`` each, 0 = all)."""
    return [{"text": ex.text, "label": ex.label, "lang": ex.lang}
            for lang in langs for ex in evenly_spaced(read_sib200(root, lang, split), max_examples)]
