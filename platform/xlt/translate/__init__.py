"""Translators: the text -> text half of the cross-lingual augmentations (Wang et al. 2022, §3.1, §4.2).

``Translator`` (``translator``) is a protocol with three backends:

- ``ProvidedTranslations`` (``provided``): translations that exist in the data, looked up by
  ``source_id`` (SIB-200 rows sharing a FLORES ``index_id`` are human translations of one another).
  Wang et al. (2022, §4.2) use the translated training set of XTREME; SIB-200's own translations
  play that role offline. Build it from the *train* split only (a task's ``train`` role).
- ``DictionaryTranslator`` (``dictionary``): word-by-word with a ``BilingualDictionary`` (MUSE),
  keeping unknown words, case and punctuation.
- ``Seq2SeqTranslator`` (``seq2seq``): a Hugging Face seq2seq model (MarianMT: one model per
  direction; NLLB: one model, target chosen by its FLORES code), batched ``generate``; the augmentation UDFs
  (``xlt.augment``) call it over a ``ray.data.Dataset``'s batches.

Every backend answers ``translate(texts, src_lang, tgt_lang, source_ids=None)`` with one entry
per text: the translation, or ``None`` when it has none for that text (a missing
``source_id``, a text in which no word is in the dictionary, an empty generation). Callers
count the ``None``s; nothing is dropped silently.
"""

from __future__ import annotations

from xlt.translate.dictionary import DictionaryTranslator
from xlt.translate.provided import ProvidedTranslations
from xlt.translate.seq2seq import Seq2SeqTranslator
from xlt.translate.translator import Translator, describe_support

__all__ = [
    "DictionaryTranslator",
    "ProvidedTranslations",
    "Seq2SeqTranslator",
    "Translator",
    "describe_support",
]
