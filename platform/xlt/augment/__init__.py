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
   Case and punctuation are preserved (``xlt.text.words.match_case``, ``replace_words``).
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
   left out of ``views`` and recorded as ``"<kind>:<lang>"`` in ``view_missing``.
6. Determinism: the randomness of a row comes from ``random.Random(f"{seed}:{kind}:{row id}")``
   (SHA-512 seeding, independent of ``PYTHONHASHSEED``), so views depend on the seed and the
   row's ``id`` only, never on batch boundaries or on which worker ran the batch; each kind has
   its own stream, so changing t_c leaves the translation views unchanged. (A seq2seq model's
   output is only as batch-independent as its numerics: padding can change greedy decoding in
   the last float bits.)

Output: ONE ROW PER EXAMPLE, its input columns untouched, plus list columns (see
``VIEW_COLUMNS``) so that a training batch always holds an example with all of its views.

Modules: ``config`` (``AugmentConfig``), ``views`` (the view columns and the UDFs' base),
``codeswitch``, ``translation`` (full and partial), ``pipeline`` (``CrossLingualAugment`` and
``build_augmented_dataset``).
"""

from __future__ import annotations

from xlt.augment.codeswitch import CodeSwitch
from xlt.augment.config import VIEW_KINDS, AugmentConfig
from xlt.augment.pipeline import CrossLingualAugment, build_augmented_dataset, validate_augmentation
from xlt.augment.translation import FullTranslation, PartialTranslation
from xlt.augment.views import ALIGNED_VIEW_COLUMNS, VIEW_COLUMNS, ViewAugmenter

__all__ = [
    "ALIGNED_VIEW_COLUMNS",
    "VIEW_COLUMNS",
    "VIEW_KINDS",
    "AugmentConfig",
    "CodeSwitch",
    "CrossLingualAugment",
    "FullTranslation",
    "PartialTranslation",
    "ViewAugmenter",
    "build_augmented_dataset",
    "validate_augmentation",
]
