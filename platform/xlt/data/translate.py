"""Translators: the text -> text half of the cross-lingual augmentations (Wang et al. 2022, §3.1, §4.2).

``Translator`` is a protocol with three backends (design.md, "Augmentation"):

- ``ProvidedTranslations``: translations that exist in the data, looked up by ``source_id``
  (SIB-200 rows sharing a FLORES ``index_id`` are human translations of one another). Wang et al. (2022,
  §4.2) use the translated training set of XTREME; SIB-200's own translations play that role
  offline. Build it from the *train* split only (``from_sib200`` reads nothing else).
- ``DictionaryTranslator``: word-by-word with a ``BilingualDictionary`` (MUSE), keeping unknown
  words, case and punctuation.
- ``Seq2SeqTranslator``: a Hugging Face seq2seq model (MarianMT: one model per direction; NLLB:
  one model, target chosen by its FLORES code), batched ``generate``; ``translate_dataset``
  runs it over a ``ray.data.Dataset`` as an actor pool (``TranslateUDF``).

Every backend answers ``translate(texts, src_lang, tgt_lang, source_ids=None)`` with one entry
per text: the translation, or ``None`` when it has none for that text (a missing
``source_id``, a text in which no word is in the dictionary, an empty generation). Callers
count the ``None``s; nothing is dropped silently.
"""

from __future__ import annotations

import re

import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

from xlt.data.dictionary import BilingualDictionary
from xlt.text.languages import code_among, normalize_lang
from xlt.data.ray_data import batch_column, column_names, map_with_actor_pool, object_array, optional_str
from xlt.data.records import Example
from xlt.text.words import Segmenter, Word

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

WordChoice = Literal["first", "random"]


@runtime_checkable
class Translator(Protocol):
    """Translates lists of texts; ``None`` where it has no translation of a text.

    Attributes:
        languages: the target languages it can produce (canonical codes).
        translates_segments: whether it can translate any text, such as a span cut out of a
            sentence for partial translation (``False`` for ``ProvidedTranslations``, which
            only knows the whole texts stored in the data).
    """

    languages: frozenset[str]
    translates_segments: bool

    def supports(self, src_lang: str, tgt_lang: str) -> bool:
        """Whether it can translate ``src_lang`` -> ``tgt_lang`` at all."""
        ...

    def translate(self, texts: Sequence[str], src_lang: str, tgt_lang: str, *,
                  source_ids: Sequence[str | None] | None = None) -> list[str | None]:
        """One translation (or ``None``) per text. ``source_ids``: the texts' ``Example.source_id``;
        needed by ``ProvidedTranslations``, ignored by the other backends."""
        ...


def describe_support(translator: Translator, src_lang: str) -> str:
    """A sentence for error messages: what ``translator`` can translate ``src_lang`` into."""
    targets = sorted(t for t in translator.languages if translator.supports(src_lang, t))
    return (f"{type(translator).__name__} translates {src_lang} into: {', '.join(targets)}" if targets
            else f"{type(translator).__name__} cannot translate from {src_lang} at all "
                 f"(its target languages: {', '.join(sorted(translator.languages)) or 'none'})")


def _clean(translation: str | None) -> str | None:
    # An empty or blank output is no translation: as a view it would be an empty input.
    return translation if translation is not None and translation.strip() else None


# --------------------------------------------------------------------------------------------
# Word-level helpers, shared with code-switching (xlt.data.augment)
# --------------------------------------------------------------------------------------------

def match_case(surface: str, translation: str) -> str:
    """``translation`` in the case pattern of the source word ``surface``.

    MUSE entries are lowercase, so the source word's case is carried over: ``THE`` -> ``DIE``
    (all caps, two letters or more), ``The`` -> ``Die`` (capitalised), anything else unchanged.
    Caseless scripts (Han, Arabic, Devanagari) are unaffected by ``upper()``.
    """
    if len(surface) > 1 and surface.isupper():
        return translation.upper()
    if surface[:1].isupper():
        return translation[:1].upper() + translation[1:]
    return translation


def replace_words(text: str, replacements: Sequence[tuple[Word, str]]) -> str:
    """``text`` with each word's characters replaced, everything between words (spaces,
    punctuation, words not listed) kept as it is. ``replacements`` in sentence order."""
    parts: list[str] = []
    at = 0
    for word, new in replacements:
        parts.append(text[at:word.start])
        parts.append(new)
        at = word.end
    parts.append(text[at:])
    return "".join(parts)


def source_segmenter(vocabularies: Iterable[Iterable[str]]) -> Segmenter:
    """A word ``Segmenter`` whose vocabulary (used for unspaced scripts, e.g. a Chinese or Japanese
    source sentence) is the union of ``vocabularies``; a ``BilingualDictionary`` iterates over its
    source words, so dictionaries can be passed as they are.
    """
    vocabulary: set[str] = set()
    for words in vocabularies:
        vocabulary.update(words)
    return Segmenter(vocabulary)


# --------------------------------------------------------------------------------------------
# Provided translations (SIB-200 index_id, any dataset with source_id links)
# --------------------------------------------------------------------------------------------

class ProvidedTranslations:
    """Translations present in the data: rows of several languages that share a ``source_id``.

    ``translate(texts, src, tgt, source_ids=...)`` returns, for each text, the ``tgt`` row with
    the same ``source_id`` — its ``text`` if the given text is the ``src`` row's ``text``, its
    ``text_pair`` if it is the ``src`` row's ``text_pair`` — and ``None`` when there is no such
    row or the text is neither (e.g. a span cut from the sentence: only whole stored texts have
    a translation here, hence ``translates_segments = False``). Matching the text, not only the
    id, guards against ``source_id``s that link to another dataset.

    Use training rows only: translations of dev/test rows would leak evaluation sentences into
    training (``from_sib200`` reads the train split and nothing else).
    """

    translates_segments = False

    def __init__(self, examples: Iterable[Example]) -> None:
        table: dict[str, dict[str, Example]] = {}
        for example in examples:
            if not isinstance(example, Example):
                raise TypeError(f"ProvidedTranslations takes Example records, got {type(example).__name__}")
            if example.source_id is None:
                raise ValueError(f"example {example.id!r} has no source_id; provided translations are "
                                 "looked up by source_id (SIB-200: the FLORES index_id)")
            by_id = table.setdefault(example.lang, {})
            other = by_id.get(example.source_id)
            if other is not None:
                raise ValueError(f"examples {other.id!r} and {example.id!r} are both {example.lang} with source_id "
                                 f"{example.source_id!r}; each language may hold one row per source_id")
            by_id[example.source_id] = example
        if not table:
            raise ValueError("ProvidedTranslations needs examples; got none")
        self._table = table
        self.languages = frozenset(table)

    @classmethod
    def from_sib200(cls, root: str | Path, languages: Iterable[str]) -> ProvidedTranslations:
        """The SIB-200 *train* rows of ``languages`` (include the source language, e.g. ``en``)."""
        from xlt.data.sib200 import read_sib200

        return cls(example for lang in languages for example in read_sib200(root, lang, "train"))

    def supports(self, src_lang: str, tgt_lang: str) -> bool:
        return src_lang in self.languages and tgt_lang in self.languages and src_lang != tgt_lang

    def translate(self, texts: Sequence[str], src_lang: str, tgt_lang: str, *,
                  source_ids: Sequence[str | None] | None = None) -> list[str | None]:
        src_lang, tgt_lang = normalize_lang(src_lang), normalize_lang(tgt_lang)
        if not self.supports(src_lang, tgt_lang):
            raise ValueError(f"no provided translations {src_lang}->{tgt_lang}: languages stored: "
                             f"{', '.join(sorted(self.languages))} (both sides must be stored)")
        if source_ids is None or len(source_ids) != len(texts):
            got = "none" if source_ids is None else f"{len(source_ids)} for {len(texts)} texts"
            raise ValueError(f"ProvidedTranslations looks translations up by source_id: pass one source_id per "
                             f"text (got {got})")
        sources, targets = self._table[src_lang], self._table[tgt_lang]
        out: list[str | None] = []
        for text, source_id in zip(texts, source_ids):
            src, tgt = sources.get(source_id), targets.get(source_id)
            if src is None or tgt is None:
                out.append(None)
            elif text == src.text:
                out.append(tgt.text)
            elif src.text_pair is not None and text == src.text_pair:
                out.append(tgt.text_pair)
            else:
                out.append(None)
        return out

    def __repr__(self) -> str:
        sizes = ", ".join(f"{lang}: {len(rows)}" for lang, rows in sorted(self._table.items()))
        return f"ProvidedTranslations({sizes})"


# --------------------------------------------------------------------------------------------
# Word-by-word dictionary translation
# --------------------------------------------------------------------------------------------

class DictionaryTranslator:
    """Word-by-word translation with bilingual dictionaries (one per direction).

    Each word (``xlt.text.words.Segmenter``: runs of letters/marks/digits; dictionary
    words inside unspaced scripts) with an entry is replaced by a translation — the first one
    (MUSE's most frequent; ``choice="first"``) or one drawn with a generator seeded by
    ``(seed, direction, text)`` (``choice="random"``), so the same text always translates the
    same way whatever batch it is in. Words without an entry, spaces and punctuation are kept;
    case follows ``match_case``. A text in which no word changes gets ``None``: it was not
    translated. Word order and morphology are the source's: this is a gloss, not a translation.
    """

    translates_segments = True

    def __init__(self, dictionaries: BilingualDictionary | Iterable[BilingualDictionary], *,
                 choice: WordChoice = "first", seed: int = 0) -> None:
        if choice not in ("first", "random"):
            raise ValueError(f"choice={choice!r} is not valid; valid: 'first', 'random'")
        if isinstance(dictionaries, BilingualDictionary):
            dictionaries = [dictionaries]
        self._dicts: dict[tuple[str, str], BilingualDictionary] = {}
        for d in dictionaries:
            key = (d.src_lang, d.tgt_lang)
            if key in self._dicts:
                raise ValueError(f"two dictionaries for {key[0]}->{key[1]}; pass one per direction")
            self._dicts[key] = d
        if not self._dicts:
            raise ValueError("DictionaryTranslator needs at least one BilingualDictionary")
        self.choice, self.seed = choice, seed
        self.languages = frozenset(tgt for _, tgt in self._dicts)
        sources = {src for src, _ in self._dicts}
        self._segmenters = {src: source_segmenter(d for (s, _), d in self._dicts.items() if s == src)
                            for src in sources}

    def supports(self, src_lang: str, tgt_lang: str) -> bool:
        return (src_lang, tgt_lang) in self._dicts

    def translate(self, texts: Sequence[str], src_lang: str, tgt_lang: str, *,
                  source_ids: Sequence[str | None] | None = None) -> list[str | None]:
        src_lang, tgt_lang = normalize_lang(src_lang), normalize_lang(tgt_lang)
        dictionary = self._dicts.get((src_lang, tgt_lang))
        if dictionary is None:
            raise ValueError(f"no {src_lang}->{tgt_lang} dictionary; {describe_support(self, src_lang)}")
        segment = self._segmenters[src_lang]
        out: list[str | None] = []
        for text in texts:
            rng = random.Random(f"{self.seed}:{src_lang}:{tgt_lang}:{text}") if self.choice == "random" else None
            replacements = []
            for word in segment(text):
                surface = text[word.start:word.end]
                options = dictionary.translations(surface)
                if options:
                    target = options[0] if rng is None else rng.choice(options)
                    replacements.append((word, match_case(surface, target)))
            translated = replace_words(text, replacements)
            out.append(translated if translated != text else None)
        return out

    def __repr__(self) -> str:
        pairs = ", ".join(f"{s}->{t}" for s, t in sorted(self._dicts))
        return f"DictionaryTranslator({pairs}, choice={self.choice!r})"


# --------------------------------------------------------------------------------------------
# Hugging Face seq2seq models (MarianMT, NLLB)
# --------------------------------------------------------------------------------------------

_FLORES_TOKEN = re.compile(r"[a-z]{3}_[A-Z][a-z]{3}")  # deu_Latn


def language_token(tokenizer: Any, lang: str, source: str = "the model") -> str:
    """The language token of a multilingual seq2seq tokenizer (NLLB's FLORES-200 codes, ``deu_Latn``)
    that normalises to ``lang``, found among its special tokens."""
    tokens = getattr(tokenizer, "additional_special_tokens", None) or [
        t for t in tokenizer.get_vocab() if _FLORES_TOKEN.fullmatch(t)]
    try:
        return code_among(lang, tokens, "language tokens")
    except LookupError as e:
        raise ValueError(f"{source}: the tokenizer has no language token for {lang}; a multilingual model must "
                         f"select targets by FLORES-200 code tokens (NLLB): {e}") from e


class Seq2SeqTranslator:
    """Machine translation with Hugging Face seq2seq models, batched ``generate``.

    Two layouts:

    - ``model`` a mapping ``{target language: model}``: one model per direction, as MarianMT
      publishes them (``{"de": "Helsinki-NLP/opus-mt-en-de", "fr": "Helsinki-NLP/opus-mt-en-fr"}``);
    - ``model`` one name/path and ``languages`` given: one multilingual model that selects the
      target by forcing its first generated token to the target's FLORES-200 code token
      (``deu_Latn``), and reads the source language from ``tokenizer.src_lang`` — NLLB's
      convention (``facebook/nllb-200-distilled-600M``).

    Models are loaded by ``load()`` (called on first use): constructing a translator is cheap and
    pickles without weights, so it can be passed to Ray Data actors that load it once each in
    their ``__init__``. Texts are translated in batches of ``batch_size`` sorted by length (less
    padding), truncated to ``max_length`` tokens; greedy decoding unless ``num_beams`` > 1.
    ``generate_kwargs`` go to ``model.generate`` as they are. An empty output is ``None``.
    """

    translates_segments = True

    def __init__(self, model: str | Path | Mapping[str, str | Path], *, src_lang: str = "en",
                 languages: Iterable[str] | None = None, batch_size: int = 16, max_length: int = 256,
                 max_new_tokens: int = 256, num_beams: int = 1, device: str | None = None,
                 generate_kwargs: Mapping[str, Any] | None = None) -> None:
        if isinstance(model, Mapping):
            if languages is not None:
                raise ValueError("languages is implied by the {target language: model} mapping; do not pass both")
            if not model:
                raise ValueError("the {target language: model} mapping is empty")
            self._sources: dict[str, str] = {normalize_lang(lang): str(path) for lang, path in model.items()}
            self.multilingual = False
        else:
            if languages is None:
                raise ValueError(f"one model ({model}) serves several targets only if languages is given "
                                 "(NLLB style); for one model per direction pass {target language: model}")
            self._sources = {normalize_lang(lang): str(model) for lang in languages}
            self.multilingual = True
            if not self._sources:
                raise ValueError("languages is empty; name the target languages the model should produce")
        for name, value in (("batch_size", batch_size), ("max_length", max_length),
                            ("max_new_tokens", max_new_tokens), ("num_beams", num_beams)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} is not valid: expected an integer >= 1")
        self.src_lang = normalize_lang(src_lang)
        if self.src_lang in self._sources:
            raise ValueError(f"target languages include the source language {self.src_lang}")
        self.languages = frozenset(self._sources)
        self.batch_size, self.max_length = batch_size, max_length
        self.max_new_tokens, self.num_beams = max_new_tokens, num_beams
        self.device = device
        self.generate_kwargs = dict(generate_kwargs or {})
        self._loaded: dict[str, tuple[Any, Any]] | None = None  # target -> (tokenizer, model)

    def __getstate__(self) -> dict[str, Any]:
        # Ship the settings, not the weights: each Ray actor loads the models itself.
        return {**self.__dict__, "_loaded": None}

    def supports(self, src_lang: str, tgt_lang: str) -> bool:
        return src_lang == self.src_lang and tgt_lang in self.languages

    def load(self) -> None:
        """Load tokenizers and models (once; models shared between targets are loaded once)."""
        if self._loaded is not None:
            return
        import torch
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        cache: dict[str, tuple[Any, Any]] = {}
        loaded: dict[str, tuple[Any, Any]] = {}
        for lang, source in self._sources.items():
            if source not in cache:
                try:
                    tokenizer = AutoTokenizer.from_pretrained(source)
                    model = AutoModelForSeq2SeqLM.from_pretrained(source).to(device).eval()
                except (OSError, ValueError) as e:
                    raise OSError(f"cannot load the seq2seq model {source!r} (for {self.src_lang}->{lang}): {e}") from e
                if self.multilingual and hasattr(tokenizer, "src_lang"):
                    tokenizer.src_lang = language_token(tokenizer, self.src_lang, source)
                cache[source] = (tokenizer, model)
            tokenizer, model = cache[source]
            if self.multilingual:
                language_token(tokenizer, lang, source)
            loaded[lang] = (tokenizer, model)
        self._loaded = loaded
        self._device = device

    def translate(self, texts: Sequence[str], src_lang: str, tgt_lang: str, *,
                  source_ids: Sequence[str | None] | None = None) -> list[str | None]:
        import torch

        src_lang, tgt_lang = normalize_lang(src_lang), normalize_lang(tgt_lang)
        if not self.supports(src_lang, tgt_lang):
            raise ValueError(f"Seq2SeqTranslator cannot translate {src_lang}->{tgt_lang}; "
                             f"{describe_support(self, self.src_lang)}")
        self.load()
        assert self._loaded is not None
        tokenizer, model = self._loaded[tgt_lang]
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "num_beams": self.num_beams,
                                  **self.generate_kwargs}
        if self.multilingual:
            kwargs["forced_bos_token_id"] = tokenizer.convert_tokens_to_ids(language_token(tokenizer, tgt_lang))
        out: list[str | None] = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # length-bucketed batches
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            enc = tokenizer([texts[i] for i in chunk], return_tensors="pt", padding=True, truncation=True,
                            max_length=self.max_length).to(self._device)
            with torch.inference_mode():
                generated = model.generate(**enc, **kwargs)
            for i, decoded in zip(chunk, tokenizer.batch_decode(generated, skip_special_tokens=True)):
                out[i] = _clean(decoded.strip())
        return out

    def __repr__(self) -> str:
        models = ", ".join(f"{lang}: {src}" for lang, src in sorted(self._sources.items()))
        return f"Seq2SeqTranslator({self.src_lang} -> {{{models}}})"


# --------------------------------------------------------------------------------------------
# Ray Data: translation as a batch UDF / actor pool
# --------------------------------------------------------------------------------------------

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
        load = getattr(translator, "load", None)
        if callable(load):
            load()
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
                translations[i] = _clean(t)
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
    return map_with_actor_pool(
        ds, TranslateUDF,
        dict(translator=translator, src_lang=src_lang, tgt_lang=tgt_lang,
             input_column=input_column, output_column=output_column),
        batch_size=batch_size, num_actors=num_actors, num_cpus=num_cpus, num_gpus=num_gpus,
    )
