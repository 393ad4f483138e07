"""Cross-lingual data augmentation as Ray Data batch UDFs (Wang et al. 2022, §3.1, §4.1–4.2).

Wang et al. (2022, §3.1) build three kinds of cross-lingual *views* of every training example:

- full translation (sentence level): the example translated into a target language;
- partial translation (segment level, after Singh et al. 2019): "a portion of input" replaced
  by its translation, the rest kept as anchor;
- code-switching (word level, after Qin et al. 2020, CoSDA-ML): words replaced by their
  translations from a bilingual dictionary (MUSE, §4.2).

§4.1: "we first randomly sample a target language and then adapt the generating method for
each data augmentation method"; every example gets t_f full, t_p partial and t_c code-switched
views (PAWS-X: t_f = t_p = t_c = 1, r_c = 0.5; XNLI: t_f = t_p = 2, t_c = 1, r_c = 0.75).

Readings chosen where the paper leaves it open:

1. Target language: drawn per *view*, uniformly from the configured languages; the t_k views
   of one kind use distinct languages while there are enough (draws without replacement,
   repeated in rounds when t_k exceeds the number of languages), so that two translations of
   one example are not the same translation twice.
2. Code-switching ratio r_c: each word of the text *that has a translation* in the view's
   dictionary is replaced independently with probability r_c (a Bernoulli draw per word);
   words without one are kept, so the replaced share of all words is r_c × dictionary
   coverage. Identity entries (MUSE maps half its English words to themselves: names,
   numbers) are no translation here: switching a word to itself changes nothing. The
   replacement is drawn uniformly among the word's translations (CoSDA-ML's random choice).
   Case and punctuation are preserved (``translate.match_case``, ``translate.replace_words``).
3. Partial translation: for a text pair (``text_pair`` set) one side, drawn uniformly, is
   translated whole and the other kept (Figure 1: the premise or the hypothesis); for a single
   text a contiguous span of ``max(1, round(partial_fraction × n))`` of its n words (at most
   n − 1, so that an anchor remains), at a uniformly drawn start, is replaced by the
   translation of that span (its characters from the first word's start to the last word's
   end, inner punctuation included). A span needs a translator that translates arbitrary
   text (``translates_segments``): dictionary or seq2seq, not ``ProvidedTranslations``.
4. Full translation of a pair translates both sides; code-switching of a pair switches both
   sides into the same language.
5. Missing views are reported, not hidden: languages with no dictionary / no translation
   direction are a ``ValueError`` at construction, naming the language and what is available
   (Wang et al. 2022, §4.2, drop languages MUSE lacks from code-switching: say so explicitly with
   ``codeswitch_languages`` / ``partial_languages``); a view that cannot be made for one text
   (no provided translation for its ``source_id``, no dictionary word in it or in its span) is
   left out of ``views`` and recorded as ``"<kind>:<lang>"`` in ``view_missing``, which
   ``augment_report`` totals per kind and language.
6. Determinism: the randomness of a row comes from ``random.Random(f"{seed}:{kind}:{row id}")``
   (SHA-512 seeding, independent of ``PYTHONHASHSEED``), so views depend on the seed and the
   row's ``id`` only, never on batch boundaries or on which worker ran the batch; each kind has
   its own stream, so changing t_c leaves the translation views unchanged. (A seq2seq model's
   output is only as batch-independent as its numerics: padding can change greedy decoding in
   the last float bits.)

Output: ONE ROW PER EXAMPLE, its input columns untouched, plus list columns (see
``VIEW_COLUMNS``) so that a training batch always holds an example with all of its views.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import dataclasses
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from xlt.config import check
from xlt.data.dictionary import BilingualDictionary
from xlt.text.languages import normalize_lang
from xlt.data.ray_data import (batch_column, column_names, map_with_actor_pool, object_array, optional_str,
                               to_ray_dataset)
from xlt.data.records import Example
from xlt.data.translate import Translator, describe_support, match_case, replace_words, source_segmenter

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

    from xlt.text.words import Segmenter, Word

ViewKind = Literal["full", "partial", "codeswitch"]
VIEW_KINDS: tuple[str, ...] = ("full", "partial", "codeswitch")

# The columns every augmentation UDF adds (one list per row, aligned across the first four):
#   views         list[str]        the view texts (the view of ``text``)
#   view_pairs    list[str] | None the view of ``text_pair`` for each view; None for single texts
#   view_kinds    list[str]        "full" | "partial" | "codeswitch"
#   view_langs    list[str]        the target language of each view
#   view_missing  list[str]        "<kind>:<lang>" for each view that could not be made
VIEW_COLUMNS: tuple[str, ...] = ("views", "view_pairs", "view_kinds", "view_langs", "view_missing")

_MISSING_REASON = {
    "full": "the translator has no translation of the text (ProvidedTranslations: no row with its source_id "
            "in that language; DictionaryTranslator: no dictionary word in it)",
    "partial": "the translator has no translation of the chosen span or side (DictionaryTranslator: no "
               "dictionary word in it)",
    "codeswitch": "no word of the text has a (non-identity) translation in the dictionary",
}


@dataclass(frozen=True)
class AugmentConfig:
    """The settings of ``CrossLingualAugment`` (Wang et al. 2022, §4.1), validated; sweepable with Tune.

    Defaults are Wang et al. (2022)'s PAWS-X settings (t_f = t_p = t_c = 1, r_c = 0.5).

    Args:
        t_f, t_p, t_c: views per example by full translation, partial translation, code-switching.
        r_c: probability that a word with a dictionary translation is switched.
        languages: target languages of every kind of view, any code ``normalize_lang`` accepts.
        partial_languages, codeswitch_languages: the target languages of partial translation /
            code-switching when they differ from ``languages``: offline, full translation may
            come from SIB-200's human translations (all languages) while partial translation
            and code-switching need a MUSE dictionary (none for Swahili; Wang et al. 2022, §4.2, ignore
            languages MUSE lacks; MUSE's Chinese is ``zh-Hant``).
        partial_fraction: share of a single text's words that partial translation replaces.
        source_lang: the language of the examples (the dictionaries' and translators' source).
        seed: the seed of every random choice (with the row id, see the module docstring).
    """

    t_f: int = 1
    t_p: int = 1
    t_c: int = 1
    r_c: float = 0.5
    languages: tuple[str, ...] = ()
    partial_languages: tuple[str, ...] | None = None
    codeswitch_languages: tuple[str, ...] | None = None
    partial_fraction: float = 0.5
    source_lang: str = "en"
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("t_f", "t_p", "t_c"):
            value = getattr(self, name)
            check(isinstance(value, int) and not isinstance(value, bool) and value >= 0, name, value,
                  "an integer >= 0")
        check(isinstance(self.seed, int) and not isinstance(self.seed, bool), "seed", self.seed, "an integer")
        check(isinstance(self.r_c, (int, float)) and 0.0 <= self.r_c <= 1.0, "r_c", self.r_c, "a number in [0, 1]")
        check(isinstance(self.partial_fraction, (int, float)) and 0.0 < self.partial_fraction <= 1.0,
              "partial_fraction", self.partial_fraction, "a number in (0, 1]")
        source = normalize_lang(self.source_lang)
        object.__setattr__(self, "source_lang", source)
        for name in ("languages", "partial_languages", "codeswitch_languages"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _languages(value, source, name))
        for kind, count in (("full", self.t_f), ("partial", self.t_p), ("codeswitch", self.t_c)):
            if count and not self.languages_for(kind):
                raise ValueError(f"{_COUNT_NAME[kind]}={count} asks for {kind} views but no target language is "
                                 f"given; set languages (or {kind}_languages), e.g. languages=('de', 'fr')")

    def languages_for(self, kind: ViewKind) -> tuple[str, ...]:
        """The target languages of views of ``kind`` ("full", "partial" or "codeswitch")."""
        if kind not in VIEW_KINDS:
            raise ValueError(f"unknown view kind {kind!r}; valid: {', '.join(VIEW_KINDS)}")
        override = {"partial": self.partial_languages, "codeswitch": self.codeswitch_languages}.get(kind)
        return self.languages if override is None else override


_COUNT_NAME = {"full": "t_f", "partial": "t_p", "codeswitch": "t_c"}


def _languages(codes: Iterable[str], source: str, name: str) -> tuple[str, ...]:
    if isinstance(codes, str):
        raise ValueError(f"{name}={codes!r} must be a list of language codes, not one string")
    out: list[str] = []
    for code in codes:
        lang = normalize_lang(code)
        if lang == source:
            raise ValueError(f"{name} contains the source language {lang!r}; a cross-lingual view is in another "
                             "language")
        if lang not in out:
            out.append(lang)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Rows in, views out
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Row:
    id: str
    text: str
    text_pair: str | None
    lang: str
    source_id: str | None


@dataclass
class _Views:
    """The views of one row, in order; ``missing`` lists the views that could not be made."""

    texts: list[str] = field(default_factory=list)
    pairs: list[str | None] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    langs: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def add(self, kind: str, lang: str, text: str | None, pair: str | None, is_pair: bool) -> None:
        if text is None or (is_pair and pair is None):
            self.missing.append(f"{kind}:{lang}")
            return
        self.texts.append(text)
        self.pairs.append(pair)
        self.kinds.append(kind)
        self.langs.append(lang)

    def extend(self, other: _Views) -> None:
        for name in ("texts", "pairs", "kinds", "langs", "missing"):
            getattr(self, name).extend(getattr(other, name))


def _read_rows(batch: dict[str, np.ndarray] | pa.Table, source_lang: str) -> list[_Row]:
    columns = {name: batch_column(batch, name) for name in ("id", "text", "text_pair", "lang", "source_id")}
    for name in ("id", "text", "lang"):
        if columns[name] is None:
            raise KeyError(f"the batch has no {name!r} column (columns: {', '.join(column_names(batch))}); "
                           "augmentation needs the Example columns id, text, lang (text_pair, source_id optional)")
    n = len(columns["text"])
    pairs = columns["text_pair"] or [None] * n
    source_ids = columns["source_id"] or [None] * n
    rows = []
    for i in range(n):
        row_id, text, lang = columns["id"][i], columns["text"][i], columns["lang"][i]
        if optional_str(row_id) is None or optional_str(text) is None:
            raise ValueError(f"row {i} of the batch has id={row_id!r}, text={text!r}; every row needs a string id "
                             "(the seed of its views) and a text")
        if lang != source_lang:
            raise ValueError(f"row {row_id!r} is in {lang!r} but the augmentation translates from "
                             f"source_lang={source_lang!r}; augment the source-language examples only")
        rows.append(_Row(row_id, text, optional_str(pairs[i]), lang, optional_str(source_ids[i])))
    return rows


def _as_list(value: Any) -> list[Any]:
    # Existing view columns come back from Ray as numpy arrays (numpy batches) or lists (pyarrow).
    return [] if value is None or (isinstance(value, float) and np.isnan(value)) else list(value)


def _write_views(batch: dict[str, np.ndarray] | pa.Table, rows: list[_Row],
                 produced: list[_Views]) -> dict[str, np.ndarray] | pa.Table:
    """``batch`` plus the view columns; views already in the batch (an earlier UDF) come first."""
    import pyarrow as pa

    new = {
        "views": [v.texts for v in produced],
        "view_pairs": [v.pairs if row.text_pair is not None else None for row, v in zip(rows, produced)],
        "view_kinds": [v.kinds for v in produced],
        "view_langs": [v.langs for v in produced],
        "view_missing": [v.missing for v in produced],
    }
    for name, values in new.items():
        before = batch_column(batch, name)
        if before is not None:
            new[name] = [None if value is None else _as_list(old) + value for old, value in zip(before, values)]
    if isinstance(batch, pa.Table):
        for name, values in new.items():
            column = pa.array(values, type=pa.list_(pa.string()))
            if name in batch.column_names:
                batch = batch.set_column(batch.column_names.index(name), name, column)
            else:
                batch = batch.append_column(name, column)
        return batch
    return {**batch, **{name: object_array(values) for name, values in new.items()}}


class _Words:
    """The words of each text of one batch, per segmenter, computed once.

    Word segmentation is most of the augmentation's CPU time; code-switching and partial
    translation of a ``CrossLingualAugment`` share one segmenter, so each text is segmented
    once for both. Lives for one batch (no memory of earlier batches).
    """

    def __init__(self) -> None:
        self._memo: dict[tuple[int, str], list[Word]] = {}

    def __call__(self, segmenter: Segmenter, text: str) -> list[Word]:
        key = (id(segmenter), text)
        words = self._memo.get(key)
        if words is None:
            words = self._memo[key] = segmenter(text)
        return words


def _row_rng(seed: int, kind: str, row_id: str) -> random.Random:
    return random.Random(f"{seed}:{kind}:{row_id}")


def draw_languages(rng: random.Random, languages: Sequence[str], n: int) -> list[str]:
    """``n`` target languages: rounds of draws without replacement (reading 1 of the module)."""
    out: list[str] = []
    while len(out) < n:
        out.extend(rng.sample(list(languages), min(len(languages), n - len(out))))
    return out


class ViewAugmenter(ABC):
    """Base of the augmentation UDFs: a Ray Data batch transform that adds ``VIEW_COLUMNS``.

    ``__call__`` takes a numpy-dict batch (``ds.take_batch()``, callable by hand in tests) or a
    ``pyarrow.Table`` (what ``build_augmented_dataset`` uses, so that input columns pass through
    Ray untouched: a numpy round trip turns an all-null column into float NaN) and returns the
    same kind, one row per input row. UDFs compose: views already in the batch are kept first.
    """

    kind: ClassVar[str]

    def __init__(self, languages: Sequence[str], n_views: int, seed: int, source_lang: str) -> None:
        self.languages, self.n_views, self.seed, self.source_lang = tuple(languages), n_views, seed, source_lang

    @abstractmethod
    def generate(self, rows: list[_Row], words: _Words) -> list[_Views]:
        """The views of ``rows`` (one ``_Views`` per row); ``words`` segments texts once per batch."""

    def __call__(self, batch: dict[str, np.ndarray] | pa.Table) -> dict[str, np.ndarray] | pa.Table:
        rows = _read_rows(batch, self.source_lang)
        return _write_views(batch, rows, self.generate(rows, _Words()))

    def _plan(self, row: _Row) -> tuple[random.Random, list[str]]:
        rng = _row_rng(self.seed, self.kind, row.id)
        return rng, draw_languages(rng, self.languages, self.n_views) if self.n_views else []


# --------------------------------------------------------------------------------------------
# Code-switching
# --------------------------------------------------------------------------------------------

def switch_table(dictionary: BilingualDictionary) -> dict[str, tuple[str, ...]]:
    """Lowercase source word -> its translations other than itself, in dictionary order."""
    table: dict[str, dict[str, None]] = {}
    for source, target in dictionary.pairs():
        word = source.lower()
        if target.lower() != word:
            table.setdefault(word, {})[target] = None
    return {word: tuple(targets) for word, targets in table.items()}


def code_switch(text: str, words: Sequence[Word], table: Mapping[str, Sequence[str]], r_c: float,
                rng: random.Random) -> tuple[str, int, int]:
    """Switch each word of ``text`` that has a translation in ``table`` with probability ``r_c``.

    ``words`` are ``text``'s words (``Segmenter``; ``Word.text`` is the lowercase lookup key).
    Returns ``(switched text, words with a translation, words switched)``; case and everything
    between words are preserved.
    """
    replacements: list[tuple[Word, str]] = []
    switchable = 0
    for word in words:
        options = table.get(word.text)
        if not options:
            continue
        switchable += 1
        if rng.random() < r_c:
            replacements.append((word, match_case(text[word.start:word.end], rng.choice(options))))
    return replace_words(text, replacements), switchable, len(replacements)


def check_dictionaries(languages: Sequence[str], dictionaries: Iterable[BilingualDictionary],
                       source_lang: str) -> dict[str, BilingualDictionary]:
    """``{language: dictionary source_lang -> language}``, or a ``ValueError`` naming what is missing."""
    by_pair: dict[tuple[str, str], BilingualDictionary] = {}
    for d in dictionaries:
        if not isinstance(d, BilingualDictionary):
            raise TypeError(f"dictionaries must be BilingualDictionary objects, got {type(d).__name__}")
        if (d.src_lang, d.tgt_lang) in by_pair:
            raise ValueError(f"two dictionaries for {d.src_lang}->{d.tgt_lang}; pass one per direction")
        by_pair[(d.src_lang, d.tgt_lang)] = d
    found: dict[str, BilingualDictionary] = {}
    for lang in languages:
        d = by_pair.get((source_lang, lang))
        if d is None:
            have = ", ".join(f"{s}->{t}" for s, t in sorted(by_pair)) or "none"
            hint = (" MUSE's Chinese is Traditional and is read as 'zh-Hant': code-switch into 'zh-Hant'."
                    if lang == "zh" and (source_lang, "zh-Hant") in by_pair else "")
            raise ValueError(
                f"code-switching into {lang!r}: no {source_lang}->{lang} dictionary (MUSE has none for it, or it "
                f"was not passed); dictionaries given: {have}.{hint} Pass one, or leave {lang!r} out of the "
                "code-switching languages (codeswitch_languages=...; Wang et al. 2022, §4.2, ignore languages MUSE "
                "lacks)."
            )
        found[lang] = d
    return found


class CodeSwitch(ViewAugmenter):
    """Code-switched views (Wang et al. 2022, §3.1 item 1; CoSDA-ML): ``n_views`` per row, each into one
    drawn target language, each dictionary word switched with probability ``r_c``.

    A view of a text with no switchable word is recorded as missing (``codeswitch:<lang>``);
    a view in which the Bernoulli draws switched nothing is kept (it is a sample of the process).
    """

    kind = "codeswitch"

    def __init__(self, r_c: float, languages: Sequence[str], dictionaries: Iterable[BilingualDictionary], *,
                 n_views: int = 1, seed: int = 0, source_lang: str = "en", segmenter: Segmenter | None = None) -> None:
        cfg = AugmentConfig(t_f=0, t_p=0, t_c=n_views, r_c=r_c, languages=tuple(languages), seed=seed,
                            source_lang=source_lang)
        super().__init__(cfg.languages, n_views, seed, cfg.source_lang)
        self.r_c = float(r_c)
        chosen = check_dictionaries(self.languages, dictionaries, self.source_lang)
        self._tables = {lang: switch_table(d) for lang, d in chosen.items()}
        self._segment = segmenter or source_segmenter(chosen.values())

    def generate(self, rows: list[_Row], words: _Words) -> list[_Views]:
        produced = []
        for row in rows:
            rng, langs = self._plan(row)
            views = _Views()
            if langs:
                text_words = words(self._segment, row.text)
                pair_words = words(self._segment, row.text_pair) if row.text_pair is not None else None
            for lang in langs:
                table = self._tables[lang]
                text, switchable, _ = code_switch(row.text, text_words, table, self.r_c, rng)
                pair = None
                if pair_words is not None:
                    pair, pair_switchable, _ = code_switch(row.text_pair, pair_words, table, self.r_c, rng)
                    switchable += pair_switchable
                if switchable == 0:
                    text = pair = None
                views.add(self.kind, lang, text, pair, row.text_pair is not None)
            produced.append(views)
        return produced


# --------------------------------------------------------------------------------------------
# Full and partial translation
# --------------------------------------------------------------------------------------------

def check_translator(kind: str, languages: Sequence[str], translator: Translator | None, source_lang: str) -> None:
    """A ``ValueError`` unless ``translator`` translates ``source_lang`` into every language."""
    if translator is None:
        raise ValueError(f"{kind} translation views need a translator (ProvidedTranslations, DictionaryTranslator "
                         "or Seq2SeqTranslator); got None")
    if not isinstance(translator, Translator):
        raise TypeError(f"{type(translator).__name__} is not a Translator: it needs languages, translates_segments, "
                        "supports() and translate()")
    for lang in languages:
        if not translator.supports(source_lang, lang):
            raise ValueError(f"{kind} translation into {lang!r}: no {source_lang}->{lang} translation available; "
                             f"{describe_support(translator, source_lang)}. Drop {lang!r} from the {kind} "
                             f"languages ({'languages' if kind == 'full' else 'partial_languages'}=...) or use a "
                             "translator that covers it.")


def _run_requests(translator: Translator, source_lang: str,
                  requests: dict[str, list[tuple[str, str | None]]]) -> dict[str, list[str | None]]:
    """One batched ``translate`` call per target language: ``{lang: [(text, source_id)]}`` -> outputs."""
    results = {}
    for lang, items in requests.items():
        texts = [text for text, _ in items]
        results[lang] = translator.translate(texts, source_lang, lang, source_ids=[sid for _, sid in items])
        if len(results[lang]) != len(texts):
            raise RuntimeError(f"{type(translator).__name__}.translate returned {len(results[lang])} outputs for "
                               f"{len(texts)} texts ({source_lang}->{lang})")
    return results


class _Requests:
    """Collects texts to translate per target language; hands out a handle to read the result."""

    def __init__(self) -> None:
        self.by_lang: dict[str, list[tuple[str, str | None]]] = {}

    def add(self, lang: str, text: str, source_id: str | None) -> tuple[str, int]:
        items = self.by_lang.setdefault(lang, [])
        items.append((text, source_id))
        return lang, len(items) - 1


class FullTranslation(ViewAugmenter):
    """Fully translated views (Wang et al. 2022, §3.1 item 2): ``n_views`` per row, each into one drawn
    language (both sides of a pair). All texts of a batch bound for one language go to the
    translator in one call (a seq2seq model batches them)."""

    kind = "full"

    def __init__(self, languages: Sequence[str], translator: Translator, *, n_views: int = 1, seed: int = 0,
                 source_lang: str = "en") -> None:
        cfg = AugmentConfig(t_f=n_views, t_p=0, t_c=0, languages=tuple(languages), seed=seed,
                            source_lang=source_lang)
        super().__init__(cfg.languages, n_views, seed, cfg.source_lang)
        check_translator(self.kind, self.languages, translator, self.source_lang)
        _load(translator)
        self.translator = translator

    def generate(self, rows: list[_Row], words: _Words) -> list[_Views]:
        requests = _Requests()
        plans = []
        for row in rows:
            _, langs = self._plan(row)
            plans.append([(lang, requests.add(lang, row.text, row.source_id),
                           None if row.text_pair is None else requests.add(lang, row.text_pair, row.source_id))
                          for lang in langs])
        done = _run_requests(self.translator, self.source_lang, requests.by_lang)
        produced = []
        for row, plan in zip(rows, plans):
            views = _Views()
            for lang, (_, i), pair_handle in plan:
                pair = None if pair_handle is None else done[lang][pair_handle[1]]
                views.add(self.kind, lang, done[lang][i], pair, row.text_pair is not None)
            produced.append(views)
        return produced


def partial_span(n_words: int, fraction: float, rng: random.Random) -> tuple[int, int]:
    """Word indices ``[first, last)`` of the span partial translation replaces (reading 3)."""
    k = max(1, round(fraction * n_words))
    if n_words > 1:
        k = min(k, n_words - 1)
    first = rng.randrange(n_words - k + 1)
    return first, first + k


class PartialTranslation(ViewAugmenter):
    """Partially translated views (Wang et al. 2022, §3.1 item 3; reading 3 of the module docstring):
    a pair gets one side translated whole, a single text a contiguous span of its words.

    ``segmenter``: the word ``Segmenter`` of the source language; the default knows no
    vocabulary, which is all a spaced source language such as English needs (an unspaced one,
    e.g. Chinese, needs ``source_segmenter(dictionaries)``).
    """

    kind = "partial"

    def __init__(self, languages: Sequence[str], translator: Translator, *, n_views: int = 1,
                 fraction: float = 0.5, seed: int = 0, source_lang: str = "en",
                 segmenter: Segmenter | None = None) -> None:
        cfg = AugmentConfig(t_f=0, t_p=n_views, t_c=0, languages=tuple(languages), partial_fraction=fraction,
                            seed=seed, source_lang=source_lang)
        super().__init__(cfg.languages, n_views, seed, cfg.source_lang)
        check_translator(self.kind, self.languages, translator, self.source_lang)
        _load(translator)
        self.translator, self.fraction = translator, float(fraction)
        self._segment = segmenter or source_segmenter([])

    def generate(self, rows: list[_Row], words: _Words) -> list[_Views]:
        requests = _Requests()
        plans: list[list[tuple[str, str, int, int, tuple[str, int] | None]]] = []
        for row in rows:
            rng, langs = self._plan(row)
            plan = []
            text_words = words(self._segment, row.text) if langs and row.text_pair is None else []
            for lang in langs:
                if row.text_pair is not None:
                    side = rng.randrange(2)  # 0: translate text, 1: translate text_pair
                    source = row.text if side == 0 else row.text_pair
                    plan.append((lang, "text" if side == 0 else "text_pair", 0, len(source),
                                 requests.add(lang, source, row.source_id)))
                elif not text_words:
                    plan.append((lang, "text", 0, 0, None))  # nothing to translate: a missing view
                else:
                    if not self.translator.translates_segments:
                        raise ValueError(
                            f"partial translation of the single text {row.id!r} replaces a span of it, which "
                            f"{type(self.translator).__name__} cannot translate (it knows whole stored texts "
                            "only); pass partial_translator=DictionaryTranslator(...) or Seq2SeqTranslator(...), "
                            "or set t_p=0")
                    first, last = partial_span(len(text_words), self.fraction, rng)
                    start, end = text_words[first].start, text_words[last - 1].end
                    plan.append((lang, "text", start, end, requests.add(lang, row.text[start:end], row.source_id)))
            plans.append(plan)
        done = _run_requests(self.translator, self.source_lang, requests.by_lang)
        produced = []
        for row, plan in zip(rows, plans):
            views = _Views()
            for lang, side, start, end, handle in plan:
                translated = None if handle is None else done[lang][handle[1]]
                text, pair = row.text, row.text_pair
                if translated is None:
                    text = pair = None
                elif side == "text_pair":
                    pair = translated
                else:
                    text = row.text[:start] + translated + row.text[end:]
                views.add(self.kind, lang, text, pair, row.text_pair is not None)
            produced.append(views)
        return produced


def _load(translator: Translator) -> None:
    # Load models once, in the UDF's __init__ (i.e. once per Ray actor), not on the first batch.
    load = getattr(translator, "load", None)
    if callable(load):
        load()


# --------------------------------------------------------------------------------------------
# All three, as Wang et al. (2022) mix them
# --------------------------------------------------------------------------------------------

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
        # One segmenter for code-switching and partial translation, so that ``_Words`` segments each
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

    def generate(self, rows: list[_Row], words: _Words) -> list[_Views]:
        produced = [_Views() for _ in rows]
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
    loading dictionaries / models once. ``num_gpus=1`` per actor for a seq2seq translator on
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
    return map_with_actor_pool(
        ds, CrossLingualAugment,
        dict(translator=translator, dictionaries=dictionaries, partial_translator=partial_translator,
             **dataclasses.asdict(config)),
        batch_size=batch_size, num_actors=num_actors, num_cpus=num_cpus, num_gpus=num_gpus,
    )


# --------------------------------------------------------------------------------------------
# What was made, what is missing
# --------------------------------------------------------------------------------------------

@dataclass
class AugmentReport:
    """Views made and missing per (kind, language); ``str()`` is a table a user can read."""

    rows: int = 0
    made: Counter[tuple[str, str]] = field(default_factory=Counter)
    missing: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, kinds: Iterable[str], langs: Iterable[str], missing: Iterable[str]) -> None:
        self.rows += 1
        self.made.update(zip(kinds, langs))
        self.missing.update(tuple(entry.split(":", 1)) for entry in missing)

    @property
    def complete(self) -> bool:
        """True when every requested view was made."""
        return not self.missing

    def __str__(self) -> str:
        keys = sorted(set(self.made) | set(self.missing), key=lambda k: (VIEW_KINDS.index(k[0]), k[1]))
        lines = [f"{self.rows} examples, {sum(self.made.values())} views made, "
                 f"{sum(self.missing.values())} missing",
                 "| kind | lang | made | missing |", "|---|---|---:|---:|"]
        lines += [f"| {kind} | {lang} | {self.made[kind, lang]} | {self.missing[kind, lang]} |" for kind, lang in keys]
        for kind, lang in keys:
            if self.missing[kind, lang]:
                requested = self.made[kind, lang] + self.missing[kind, lang]
                lines.append(f"{kind}:{lang}: {self.missing[kind, lang]} of {requested} views missing: "
                             f"{_MISSING_REASON[kind]}")
        return "\n".join(lines)


def augment_report(data: ray.data.Dataset | dict[str, np.ndarray] | Iterable[Mapping[str, Any]]) -> AugmentReport:
    """Totals of ``view_kinds`` / ``view_langs`` / ``view_missing`` over an augmented dataset
    (consumes it: executes the pipeline), a numpy-dict batch, or an iterable of rows."""
    import ray.data

    report = AugmentReport()
    columns = ["view_kinds", "view_langs", "view_missing"]
    if isinstance(data, ray.data.Dataset):
        # not select_columns: its extra task needs a free CPU slot, which a busy cluster may not have
        for batch in data.iter_batches(batch_format="pyarrow"):
            for kinds, langs, missing in zip(*(batch.column(c).to_pylist() for c in columns)):
                report.add(kinds, langs, missing)
    elif isinstance(data, dict):
        for kinds, langs, missing in zip(*(data[c] for c in columns)):
            report.add(kinds, langs, missing)
    else:
        for row in data:
            report.add(row["view_kinds"], row["view_langs"], row["view_missing"])
    return report
