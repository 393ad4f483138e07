"""A task's rows for fine-tuning: the train rows of a setting, their views, and the evaluation rows.

Train rows are one per labelled example (``xlt.tasks.row``: ``id, text, text_pair, label, lang,
source_id``):

- zero-shot: the source language's train split;
- translate-train: plus, for every target language, the translations of exactly those source
  examples through the task's links (``task.link``: line by line, by id, or by a linking column),
  each with its own label as the data gives it (a translated dataset may re-check labels per
  language).

With ``data.augment``, ``train_dataset`` streams the source rows through the Ray Data
augmentation UDF (``xlt.augment``): each gets its views in list columns, made once, before
training, and kept in the object store for every epoch (as pretraining keeps its annotated
pairs). A row's views are a function of the seed and its id (reading 6 of ``xlt.augment``),
so each epoch would make the same ones again, and a lazy dataset re-runs its actor pool (a
process, its imports and dictionaries: seconds) every epoch. Full-translation views come from
``data.translator``: ``provided`` (the task's own translations, train split only),
``dictionary`` (word by word with the MUSE dictionaries) or ``seq2seq`` (a Hugging Face
MarianMT / NLLB model, ``data.translator_model``, run in the UDF's actor pool). Partial views gloss a span and code-switching switches words, both
with MUSE (``<data_dir>/muse``). Translate-train rows are already in a target language and carry
empty view lists, so the dataset has one schema.

Everything trained is read from the train split; dev and test are only evaluated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..data import read_muse, resolve_data_dir
from ..augment import VIEW_COLUMNS, AugmentConfig, build_augmented_dataset
from ..translate import DictionaryTranslator, ProvidedTranslations, Seq2SeqTranslator
from ..tasks import Task, row
from .config import DataSettings

if TYPE_CHECKING:
    import ray.data


def train_rows(data: DataSettings, task: Task) -> list[dict[str, Any]]:
    """The train rows of ``data.setting`` (see the module docstring), source language first."""
    source = task.examples("train", task.source_lang, data.max_examples)
    rows = [row(ex) for ex in source]
    if data.setting == "translate-train":
        for lang in task.target_langs:
            rows.extend(row(ex) for ex in task.translations("train", lang, source).values())
    return rows


def augmentation_sources(data: DataSettings, task: Task) -> dict[str, Any]:
    """The translators and dictionaries of ``data.augment`` (keyword arguments of
    ``build_augmented_dataset``). A language without what its views need fails here, naming it."""
    augment = data.augment
    assert augment is not None
    root = resolve_data_dir(data.data_dir) if (augment.t_c or augment.t_p or data.translator == "dictionary") else None
    full = augment.languages_for("full") if augment.t_f else ()
    dictionary_langs = [*(augment.languages_for("partial") if augment.t_p else ()),
                        *(augment.languages_for("codeswitch") if augment.t_c else ()),
                        *(full if data.translator == "dictionary" else ())]
    dictionaries = {lang: read_muse(root, augment.source_lang, lang) for lang in dict.fromkeys(dictionary_langs)}
    out: dict[str, Any] = {}
    if full:
        out["translator"] = full_translator(data, task, full, dictionaries)
    if augment.t_c:
        out["dictionaries"] = [dictionaries[lang] for lang in augment.languages_for("codeswitch")]
    if augment.t_p:
        out["partial_translator"] = DictionaryTranslator([dictionaries[lang] for lang in
                                                          augment.languages_for("partial")])
    return out


def full_translator(data: DataSettings, task: Task, langs: Sequence[str], dictionaries: dict) -> Any:
    """The translator of full-translation views (``data.translator``)."""
    if data.translator == "provided":
        return ProvidedTranslations(ex for lang in (task.source_lang, *langs) for ex in task.examples("train", lang))
    if data.translator == "dictionary":
        return DictionaryTranslator([dictionaries[lang] for lang in langs])
    if "{lang}" in data.translator_model:  # one model per direction (MarianMT: opus-mt-en-{lang})
        return Seq2SeqTranslator({lang: data.translator_model.format(lang=lang) for lang in langs},
                                 src_lang=task.source_lang)
    return Seq2SeqTranslator(data.translator_model, src_lang=task.source_lang, languages=langs)  # NLLB-style


def train_dataset(data: DataSettings, task: Task, rows: list[dict[str, Any]]) -> ray.data.Dataset:
    """``rows`` as a Ray dataset; with ``data.augment``, the source-language rows go through the
    augmentation UDF once, here (Ray must be running), and the others get empty view columns (see
    the module docstring)."""
    import pyarrow as pa
    import ray.data

    if data.augment is None:
        return ray.data.from_items(rows)
    source = [r for r in rows if r["lang"] == task.source_lang]
    others = [r for r in rows if r["lang"] != task.source_lang]
    augmented = build_augmented_dataset(ray.data.from_items(source), data.augment, num_actors=data.augment_actors,
                                        num_cpus=data.augment_cpus, **augmentation_sources(data, task)).materialize()
    if not others:
        return augmented
    table = pa.Table.from_pylist(others)
    for name in VIEW_COLUMNS:  # as the UDF writes them: view_pairs is null for single texts
        values = [None if name == "view_pairs" and not task.paired else [] for _ in others]
        table = table.append_column(name, pa.array(values, type=pa.list_(pa.string())))
    return augmented.union(ray.data.from_blocks([table]))  # built here: no task (xlt.data.ray_data.map_with_udf)


def eval_rows(task: Task, split: str, max_examples: int = 0, langs: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """``id, text, text_pair, label, lang`` of ``split`` (``dev`` / ``test``) for every language of the task
    (or of ``langs``)."""
    keys = ("id", "text", "text_pair", "label", "lang")
    return [{k: r[k] for k in keys} for r in task.rows(split, task.langs if langs is None else langs, max_examples)]


def check_augment_languages(augment: AugmentConfig, task: Task, translator: str) -> None:
    """Full provided views need the task's translations in every view language."""
    if augment.t_f and translator == "provided":
        task.check({"train": augment.languages_for("full")})

