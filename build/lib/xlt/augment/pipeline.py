"""All three kinds of view as Wang et al. (2022, §4.1) mix them: the ``CrossLingualAugment`` UDF, its
driver-side check (``validate_augmentation``) and its Ray Data wiring (``build_augmented_dataset``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from xlt.augment.codeswitch import CodeSwitch, check_dictionaries
from xlt.augment.config import AugmentConfig
from xlt.augment.translation import FullTranslation, PartialTranslation, check_translator
from xlt.augment.views import BatchWords, ExampleRow, ViewAugmenter, Views
from xlt.data.dictionary import BilingualDictionary
from xlt.data.ray_data import map_with_udf, to_ray_dataset
from xlt.data.records import Example
from xlt.text.words import source_segmenter
from xlt.translate.translator import Translator

if TYPE_CHECKING:
    import ray.data


class CrossLingualAugment(ViewAugmenter):
    """t_f full-translation, t_p partial-translation and t_c code-switched views per example
    (Wang et al. 2022, §3.1, §4.1), in that order, as list columns of the example's own row.

    Args:
        t_f, t_p, t_c, r_c, languages, seed: see ``AugmentConfig``.
        translator: the ``Translator`` of full (and, unless ``partial_translator``, partial)
            translation; may be ``None`` when t_f = t_p = 0.
        dictionaries: ``BilingualDictionary``s ``source_lang -> language`` for code-switching
            (their source words also segment an unspaced source language).
        partial_languages, codeswitch_languages, partial_fraction, source_lang: see ``AugmentConfig``.
        partial_translator: the translator of partial translation when it must differ
            (``ProvidedTranslations`` cannot translate spans of single texts).

    Output row: the input columns untouched, plus ``VIEW_COLUMNS``. Raises ``ValueError`` at
    construction for a language without dictionary / translation direction.
    """

    kind = "all"  # not a view kind: the parts draw with their own kinds' streams

    def __init__(self, t_f: int = 1, t_p: int = 1, t_c: int = 1, r_c: float = 0.5,
                 languages: Sequence[str] = (), translator: Translator | None = None,
                 dictionaries: Iterable[BilingualDictionary] = (), seed: int = 0, *,
                 partial_languages: Sequence[str] | None = None, codeswitch_languages: Sequence[str] | None = None,
                 partial_translator: Translator | None = None, partial_fraction: float = 0.5,
                 source_lang: str = "en") -> None:
        dictionaries = list(dictionaries)
        cfg = AugmentConfig(t_f=t_f, t_p=t_p, t_c=t_c, r_c=r_c, languages=tuple(languages),
                            partial_languages=None if partial_languages is None else tuple(partial_languages),
                            codeswitch_languages=None if codeswitch_languages is None else tuple(codeswitch_languages),
                            partial_fraction=partial_fraction, source_lang=source_lang, seed=seed)
        validate_augmentation(cfg, translator=translator, dictionaries=dictionaries,
                              partial_translator=partial_translator)
        super().__init__(cfg.languages, t_f + t_p + t_c, seed, cfg.source_lang)
        self.config = cfg
        self.parts: list[ViewAugmenter] = []
        # One segmenter for code-switching and partial translation, so that ``BatchWords`` segments each
        # text once for both; the dictionaries' source words segment an unspaced source language.
        segmenter = source_segmenter(d for d in dictionaries if d.src_lang == cfg.source_lang)
        common = dict(seed=seed, source_lang=cfg.source_lang, segmenter=segmenter)
        if cfg.t_f:
            self.parts.append(FullTranslation(cfg.languages_for("full"), translator, n_views=cfg.t_f, seed=seed,
                                              source_lang=cfg.source_lang))
        if cfg.t_p:
            self.parts.append(PartialTranslation(cfg.languages_for("partial"), partial_translator or translator,
                                                 n_views=cfg.t_p, fraction=cfg.partial_fraction, **common))
        if cfg.t_c:
            self.parts.append(CodeSwitch(cfg.r_c, cfg.languages_for("codeswitch"), dictionaries, n_views=cfg.t_c,
                                         **common))

    @classmethod
    def from_config(cls, config: AugmentConfig, *, translator: Translator | None = None,
                    dictionaries: Iterable[BilingualDictionary] = (),
                    partial_translator: Translator | None = None) -> CrossLingualAugment:
        return cls(translator=translator, dictionaries=dictionaries, partial_translator=partial_translator,
                   **dataclasses.asdict(config))

    def generate(self, rows: list[ExampleRow], words: BatchWords) -> list[Views]:
        produced = [Views() for _ in rows]
        for part in self.parts:
            for views, more in zip(produced, part.generate(rows, words)):
                views.extend(more)
        return produced


def validate_augmentation(config: AugmentConfig, *, translator: Translator | None = None,
                          dictionaries: Iterable[BilingualDictionary] = (),
                          partial_translator: Translator | None = None) -> None:
    """Every configured language has what its views need, else a ``ValueError`` saying what is
    missing and what is available. Cheap (no model is loaded): run it on the driver before
    starting workers."""
    if config.t_f:
        check_translator("full", config.languages_for("full"), translator, config.source_lang)
    if config.t_p:
        check_translator("partial", config.languages_for("partial"), partial_translator or translator,
                         config.source_lang)
    if config.t_c:
        check_dictionaries(config.languages_for("codeswitch"), dictionaries, config.source_lang)


def build_augmented_dataset(examples: Sequence[Example] | ray.data.Dataset, config: AugmentConfig, *,
                            translator: Translator | None = None,
                            dictionaries: Iterable[BilingualDictionary] = (),
                            partial_translator: Translator | None = None, batch_size: int = 256,
                            num_actors: int | tuple[int, int] = 1, num_cpus: float = 1.0,
                            num_gpus: float = 0.0) -> ray.data.Dataset:
    """``to_ray_dataset(examples)`` -> ``map_batches(CrossLingualAugment)``, streaming and lazy.

    Validates the languages on the driver first (``validate_augmentation``), then runs the UDF
    in an actor pool of ``num_actors`` (a size, or ``(min, max)`` to autoscale), each actor
    loading dictionaries / models once; ``num_actors=0`` runs it in this process instead, at once
    (``xlt.data.ray_data.map_with_udf``): for a few hundred rows, where an actor's start-up is
    most of the time. ``num_gpus=1`` per actor for a seq2seq translator on
    GPU nodes. Batches are pyarrow tables so that the example columns pass through untouched.
    One output row per example (``udf_modifying_row_count=False``); nothing runs until the
    dataset is consumed (``iter_batches``, ``take_all``, a Ray Train ``datasets=`` entry).

    Each actor reserves ``num_cpus``. When the input is produced by read tasks (e.g.
    ``ray.data.range(n).map_batches(...)``), actors that reserve every CPU of the cluster leave
    those tasks no slot and the pipeline stalls: on a 2-CPU machine use ``num_cpus=0.5`` for two
    actors (``benchmarks/augment_throughput.py`` does).
    """
    import ray.data

    dictionaries = list(dictionaries)
    validate_augmentation(config, translator=translator, dictionaries=dictionaries,
                          partial_translator=partial_translator)
    ds = examples if isinstance(examples, ray.data.Dataset) else to_ray_dataset(examples)
    return map_with_udf(
        ds, CrossLingualAugment,
        dict(translator=translator, dictionaries=dictionaries, partial_translator=partial_translator,
             **dataclasses.asdict(config)),
        batch_size=batch_size, num_actors=num_actors, num_cpus=num_cpus, num_gpus=num_gpus,
    )
