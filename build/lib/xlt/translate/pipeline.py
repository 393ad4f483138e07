"""Translation in Ray Data: a batch UDF (``TranslateUDF``), run over a dataset by an actor pool
(``translate_dataset``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from xlt.data.ray_data import batch_column, column_names, map_with_udf, object_array, optional_str
from xlt.text.languages import normalize_lang
from xlt.translate.translator import Translator, clean_translation, describe_support, load_translator

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data


class TranslateUDF:
    """Ray Data batch UDF: adds ``output_column`` = translation of ``input_column`` (``None`` where
    the translator has none). Loads the translator once in ``__init__`` (``Seq2SeqTranslator.load``).

    Accepts numpy-dict batches (``ds.take_batch()``) and pyarrow batches; with pyarrow (what
    ``translate_dataset`` uses) the input columns pass through untouched, whereas a numpy round
    trip turns all-null columns (``text_pair`` of single texts) into float NaN.
    """

    def __init__(self, translator: Translator, src_lang: str, tgt_lang: str, *, input_column: str = "text",
                 output_column: str = "translation", source_id_column: str = "source_id") -> None:
        self.src_lang, self.tgt_lang = normalize_lang(src_lang), normalize_lang(tgt_lang)
        if not translator.supports(self.src_lang, self.tgt_lang):
            raise ValueError(f"cannot translate {self.src_lang}->{self.tgt_lang}: "
                             f"{describe_support(translator, self.src_lang)}")
        load_translator(translator)
        self.translator = translator
        self.input_column, self.output_column, self.source_id_column = input_column, output_column, source_id_column

    def __call__(self, batch: dict[str, np.ndarray] | pa.Table) -> dict[str, np.ndarray] | pa.Table:
        import pyarrow as pa

        texts = batch_column(batch, self.input_column)
        if texts is None:
            raise KeyError(f"the batch has no column {self.input_column!r}; columns: {column_names(batch)}")
        ids = batch_column(batch, self.source_id_column)
        source_ids = [optional_str(x) for x in ids] if ids is not None else [None] * len(texts)
        present = [i for i, t in enumerate(texts) if optional_str(t) is not None]
        translations: list[str | None] = [None] * len(texts)
        if present:
            done = self.translator.translate([texts[i] for i in present], self.src_lang, self.tgt_lang,
                                             source_ids=[source_ids[i] for i in present])
            for i, t in zip(present, done):
                translations[i] = clean_translation(t)
        if isinstance(batch, pa.Table):
            column = pa.array(translations, type=pa.string())
            if self.output_column in batch.column_names:
                return batch.set_column(batch.column_names.index(self.output_column), self.output_column, column)
            return batch.append_column(self.output_column, column)
        return {**batch, self.output_column: object_array(translations)}


def translate_dataset(ds: ray.data.Dataset, translator: Translator, src_lang: str, tgt_lang: str, *,
                      input_column: str = "text", output_column: str = "translation", batch_size: int = 32,
                      num_actors: int | tuple[int, int] = 1, num_cpus: float = 1.0,
                      num_gpus: float = 0.0) -> ray.data.Dataset:
    """``ds`` with ``output_column`` = the translation of ``input_column``, by an actor pool.

    Each actor builds one ``TranslateUDF`` (loading the model once) and translates batches of
    ``batch_size`` rows. ``num_actors``: a fixed pool size, or ``(min, max)`` for an autoscaling
    pool. On GPU nodes pass ``num_gpus=1`` (one GPU per actor). Ray 2.60 deprecates
    ``map_batches(concurrency=...)`` in favour of ``compute=ActorPoolStrategy(...)``, used here.
    Lazy: nothing runs until the dataset is consumed.
    """
    return map_with_udf(
        ds, TranslateUDF,
        dict(translator=translator, src_lang=src_lang, tgt_lang=tgt_lang,
             input_column=input_column, output_column=output_column),
        batch_size=batch_size, num_actors=num_actors, num_cpus=num_cpus, num_gpus=num_gpus,
    )
