"""Batches of parallel pairs for every recipe, in two stages.

1. ``PairAnnotator`` (a Ray Data batch UDF, run once over the training set before training):
   per pair, what a bilingual dictionary provides, in the token positions of the encoder's own
   tokenization (``Tokenization``: prefix, special tokens and truncation included):

   - ``wps``: every admissible word-positioned sample pair (Chen et al. 2022, Alg. 1; ``wps.parallel_wps``)
     as flat ``[src start, src end, tgt start, tgt end, ...]`` token spans, for the concatenated
     contextual embedding. A pair with none cannot be a sample: ``keep_row`` is False for it.
   - ``alignment``: dictionary-aligned token pairs (Zhang et al. 2023, §3.2; Li et al. 2021, §2.2;
     ``DictionaryAligner``) as flat ``[src pos, tgt pos, ...]``.
   - ``spans``: aligned span pairs (Li et al. 2021, §2.3) as flat ``[src start, src end, tgt start, tgt end, ...]``.
   - ``src_noisy`` / ``tgt_noisy``: the noisy positives x̂, ŷ of Li et al. 2021, §2.4 (Eq. 7).

2. ``PretrainBatcher`` (on each worker, per micro-batch): rows -> the tensors the model reads
   (``xlt.pretrain.model``): token ids, masks, the drawn word spans, alignment and span rows
   with their pair index, and the masked MLM / TLM inputs.

Readings where the papers leave a choice:

- Noisy positives. Li et al. (2021) obtain x̂ "by pre-training the target→source translation model"
  (footnote 3): x̂ is y translated back into x's language, ŷ is x translated into y's. Offline
  the translator is the dictionary (``DictionaryTranslator``, a word-by-word gloss with a random
  choice among a word's translations, seeded per text): noisier than beam search but the same
  direction of noise. A sentence the dictionary cannot change keeps its clean text as its noisy
  version (so that combination is the clean pair once more).
- Token masks. ``token_mask`` marks the tokens of the sentence itself: not special tokens, not
  the encoder's text prefix (e5's "query: "), not content-less tokens (XLM-R's lone "▁"). It is
  the ``src_mask`` / ``tgt_mask`` of the token objectives (Zhang et al. (2023)'s "tokens of x_i and y_i",
  Li et al. (2021)'s words) and the set of positions MLM may mask.
- Word-positioned samples. One admissible word pair is drawn per pair and epoch (Chen et al. 2022, §4.1,
  "randomly construct" their WPSs), seeded by (seed, epoch, pair id).
- MLM input. ``monolingual``: each sentence alone, as the encoder sees it (ML-CTL's auxiliary
  MLM, Chen et al. 2022, Eq. 3); ``concatenated``: the pair in the tokenizer's pair template without the
  text prefix (TLM, Li et al. 2021, §2.4; Zhang et al. 2023, §3.3; ``xlt.losses.mlm.tlm_inputs``). No segment or
  language embeddings (Zhang et al. 2023, §4.2, use none).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..data import BilingualDictionary, Lexicon, ParallelPair
from ..data.ray_data import batch_column, object_array
from ..translate import DictionaryTranslator
from ..losses.mlm import MaskingVocabulary, mask_tokens, tlm_inputs
from ..models import EncoderConfig
from ..models.sources import load_tokenizer, parse_source
from .alignment import DictionaryAligner, TokenizedText, Tokenization
from .parallel import invert
from .wps import parallel_wps

if TYPE_CHECKING:
    import pyarrow as pa

PAIR_COLUMNS: tuple[str, ...] = ("id", "src", "tgt", "src_lang", "tgt_lang")
NOISY_KEYS = ("src_noisy_features", "tgt_noisy_features")
SPAN_KEYS = ("src_spans", "tgt_spans")
MLM_KEYS = ("mlm_logits", "mlm_labels")


def annotation_columns(requires: Collection[str], features: str) -> tuple[str, ...]:
    """The columns ``PairAnnotator`` adds for objectives reading ``requires`` with ``features``."""
    columns = ["wps"] if features == "cce" else []
    columns += ["alignment"] if "alignment" in requires else []
    columns += ["spans"] if any(k in requires for k in SPAN_KEYS) else []
    columns += ["src_noisy", "tgt_noisy"] if any(k in requires for k in NOISY_KEYS) else []
    return tuple(columns)


def needs_dictionary(requires: Collection[str], features: str) -> bool:
    """Whether the annotation of these objectives looks words up in bilingual dictionaries."""
    return bool(annotation_columns(requires, features))


def tokenization_of(model: EncoderConfig) -> Tokenization:
    """The ``Tokenization`` of the encoder ``model`` describes, from its tokenizer alone."""
    return Tokenization(load_tokenizer(parse_source(model.source)), max_length=model.max_length,
                        prefix=model.resolved()["prefix"])


def pairs_of(batch: Mapping[str, Any] | pa.Table) -> list[ParallelPair]:
    """The ``ParallelPair`` of each row of a numpy-dict or pyarrow batch."""
    columns = [batch_column(batch, name) for name in PAIR_COLUMNS]
    missing = [name for name, column in zip(PAIR_COLUMNS, columns) if column is None]
    if missing:
        raise KeyError(f"the batch has no column(s) {', '.join(missing)}; pair rows need {', '.join(PAIR_COLUMNS)}")
    return [ParallelPair(*(str(c[i]) for c in columns)) for i in range(len(columns[0]))]


def keep_row(row: Mapping[str, Any]) -> bool:
    """False for a row annotated with an empty ``wps`` list (no word-positioned sample)."""
    return "wps" not in row or len(row["wps"]) > 0


class PairAnnotator:
    """Ray Data UDF adding ``annotation_columns(requires, features)`` to batches of pair rows.

    Loads the tokenizer and prepares one ``Lexicon`` per dictionary direction in ``__init__``;
    ``__call__`` maps a numpy-dict batch (``ds.take_batch()``) or a pyarrow table (what the
    trainer's actor pool passes) and keeps every row (filter with ``keep_row`` afterwards).

    Args:
        model: the encoder whose tokenization positions refer to.
        requires: the outputs the objectives read (``WeightedObjectives.requires``).
        features: ``pooled`` or ``cce`` (word-positioned samples).
        dictionaries: one per language direction of the pairs (``parallel.load_dictionaries``);
            a pair whose direction has none raises, naming the directions there are.
        stop_words: words left out of the lexicons (Chen et al. 2022, §2.1).
        subword, max_span_words: ``DictionaryAligner`` settings.
        seed: of the dictionary back-translations.
    """

    def __init__(self, model: EncoderConfig, requires: Collection[str], features: str,
                 dictionaries: Sequence[BilingualDictionary] = (), *, stop_words: Collection[str] = (),
                 subword: str = "first", max_span_words: int = 4, seed: int = 0) -> None:
        self.columns = annotation_columns(requires, features)
        self.tokenization = tokenization_of(model)
        self.lexicons = {(d.src_lang, d.tgt_lang): Lexicon(d, stop_words=stop_words) for d in dictionaries}
        self.aligners = {key: DictionaryAligner(lex, self.tokenization, subword=subword, max_span_words=max_span_words)
                         for key, lex in self.lexicons.items()}
        self.translator = None
        if "src_noisy" in self.columns:
            both = {(d.src_lang, d.tgt_lang): d for d in dictionaries}
            for d in dictionaries:
                both.setdefault((d.tgt_lang, d.src_lang), invert(d))
            self.translator = DictionaryTranslator(list(both.values()), choice="random", seed=seed)

    def _lexicon(self, pair: ParallelPair) -> tuple[Lexicon, DictionaryAligner]:
        key = (pair.src_lang, pair.tgt_lang)
        if key not in self.lexicons:
            have = ", ".join(f"{s}-{t}" for s, t in self.lexicons) or "none"
            raise ValueError(f"pair {pair.id!r} is {pair.src_lang}-{pair.tgt_lang}, which no dictionary covers "
                             f"(dictionaries: {have})")
        return self.lexicons[key], self.aligners[key]

    def annotate(self, pairs: Sequence[ParallelPair]) -> dict[str, list[Any]]:
        """The annotation columns of ``pairs``, one entry per pair."""
        out: dict[str, list[Any]] = {name: [] for name in self.columns}
        looks_up = bool({"wps", "alignment", "spans"} & set(self.columns))  # noisy text alone needs no lexicon
        for pair in pairs if looks_up else ():
            lexicon, aligner = self._lexicon(pair)
            if "wps" in out:
                samples = parallel_wps(pair, lexicon, self.tokenization)
                out["wps"].append([i for s in samples for i in (*s.src.token_span, *s.tgt.token_span)])
            if "alignment" in out or "spans" in out:
                found = aligner([pair])
                if "alignment" in out:
                    out["alignment"].append(found["alignment"][:, 1:].flatten().tolist())
                if "spans" in out:
                    spans = torch.cat([found["src_spans"][:, 1:], found["tgt_spans"][:, 1:]], dim=1)
                    out["spans"].append(spans.flatten().tolist())
        if self.translator is not None:
            out["src_noisy"], out["tgt_noisy"] = self._noisy(pairs)
        return out

    def _noisy(self, pairs: Sequence[ParallelPair]) -> tuple[list[str], list[str]]:
        """x̂ = y translated into x's language, ŷ = x into y's (Li et al. 2021, footnote 3); the clean text if none."""
        assert self.translator is not None
        src_noisy, tgt_noisy = [p.src for p in pairs], [p.tgt for p in pairs]
        directions: dict[tuple[str, str], list[int]] = {}
        for i, p in enumerate(pairs):
            directions.setdefault((p.src_lang, p.tgt_lang), []).append(i)
        for (src, tgt), rows in directions.items():
            back = self.translator.translate([pairs[i].tgt for i in rows], tgt, src)
            forth = self.translator.translate([pairs[i].src for i in rows], src, tgt)
            for i, x_hat, y_hat in zip(rows, back, forth):
                src_noisy[i] = x_hat or src_noisy[i]
                tgt_noisy[i] = y_hat or tgt_noisy[i]
        return src_noisy, tgt_noisy

    def __call__(self, batch: Mapping[str, np.ndarray] | pa.Table) -> dict[str, np.ndarray] | pa.Table:
        import pyarrow as pa

        new = self.annotate(pairs_of(batch))
        if isinstance(batch, pa.Table):
            for name, values in new.items():
                kind = pa.string() if name.endswith("_noisy") else pa.list_(pa.int64())
                batch = batch.append_column(name, pa.array(values, type=kind))
            return batch
        return {**batch, **{name: object_array(values) for name, values in new.items()}}


def pad(sequences: Sequence[Sequence[int]], value: int) -> torch.Tensor:
    """(N, max length) long tensor, right-padded with ``value``."""
    length = max(len(s) for s in sequences)
    return torch.tensor([list(s) + [value] * (length - len(s)) for s in sequences], dtype=torch.long)


def as_rows(batch: Mapping[str, Any] | Sequence[Mapping[str, Any]] | pa.Table) -> list[dict[str, Any]]:
    """A pyarrow table, a dict of columns or a list of row dicts -> list of row dicts."""
    if hasattr(batch, "to_pylist"):
        return batch.to_pylist()
    if isinstance(batch, Mapping):
        n = len(next(iter(batch.values())))
        return [{k: v[i] for k, v in batch.items()} for i in range(n)]
    return [dict(row) for row in batch]


class PretrainBatcher:
    """Annotated pair rows -> the tensors of one micro-batch (see the module docstring).

    For B pairs the returned dict holds:

    - ``input_ids``, ``attention_mask``, ``token_mask`` (R, L): the rows the encoder embeds —
      sources x_1..x_B, targets y_1..y_B and, for noisy positives, x̂_1..x̂_B, ŷ_1..ŷ_B (R = 2B or 4B)
    - ``word_spans`` (2B, 2): the drawn WPS word of each source row, then of each target row
    - ``alignment`` (P, 3), ``src_spans`` / ``tgt_spans`` (S, 3): rows ``(pair, ...)`` as
      ``xlt.losses.base`` defines them
    - ``mlm_input_ids``, ``mlm_attention_mask``, ``mlm_labels`` (M, Lm): the masked inputs
      (M = 2B monolingual, B concatenated) and their labels (-100 where not predicted)

    Only what the objectives ``requires`` (and ``features`` / ``mlm_input``) ask for is built.
    """

    def __init__(self, tokenization: Tokenization, requires: Collection[str], features: str,
                 mlm_input: str | None = None, mask_probability: float = 0.15) -> None:
        self.tokenization, self.requires = tokenization, set(requires)
        self.features, self.mlm_input, self.mask_probability = features, mlm_input, mask_probability
        self.tokenizer = tokenization.tokenizer
        self.vocab = MaskingVocabulary.from_tokenizer(self.tokenizer) if "mlm_labels" in self.requires else None
        if self.vocab is not None and mlm_input not in ("monolingual", "concatenated"):
            raise ValueError(f"mlm_input={mlm_input!r} is not valid for the mlm objective; valid: monolingual, "
                             "concatenated")

    def encode(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """``input_ids``, ``attention_mask``, ``token_mask`` (N, L) of ``texts`` as the encoder tokenizes them."""
        encoded: list[TokenizedText] = [self.tokenization.encode(t) for t in texts]
        pad_id = self.tokenizer.pad_token_id
        ids = pad([e.input_ids for e in encoded], pad_id)
        attention = pad([[1] * len(e.input_ids) for e in encoded], 0)
        tokens = pad([[int(s is not None) for s in e.spans] for e in encoded], 0).bool()
        return {"input_ids": ids, "attention_mask": attention, "token_mask": tokens}

    def __call__(self, batch: Mapping[str, Any] | Sequence[Mapping[str, Any]] | pa.Table, *,
                 generator: torch.Generator | None = None, draw_seed: str = "0") -> dict[str, torch.Tensor]:
        rows = as_rows(batch)
        if not rows:
            raise ValueError("an empty batch of pairs")
        src, tgt = [r["src"] for r in rows], [r["tgt"] for r in rows]
        texts = src + tgt
        if any(k in self.requires for k in NOISY_KEYS):
            texts += [r["src_noisy"] for r in rows] + [r["tgt_noisy"] for r in rows]
        out = self.encode(texts)
        if self.features == "cce":
            out["word_spans"] = self.word_spans(rows, draw_seed)
        if "alignment" in self.requires:
            out["alignment"] = indexed(rows, "alignment", 2)
        if any(k in self.requires for k in SPAN_KEYS):
            spans = indexed(rows, "spans", 4)  # (S, 5): pair, src start, src end, tgt start, tgt end
            out["src_spans"], out["tgt_spans"] = spans[:, [0, 1, 2]], spans[:, [0, 3, 4]]
        if self.vocab is not None:
            out.update(self.mlm(out, src, tgt, generator))
        return out

    def word_spans(self, rows: Sequence[Mapping[str, Any]], draw_seed: str) -> torch.Tensor:
        """(2B, 2): per pair one of its word-positioned samples, drawn by (``draw_seed``, pair id)."""
        chosen = []
        for row in rows:
            candidates = np.asarray(row["wps"], dtype=np.int64).reshape(-1, 4)
            if not len(candidates):
                raise ValueError(f"pair {row['id']!r} has no word-positioned sample; drop such rows (keep_row)")
            chosen.append(candidates[random.Random(f"{draw_seed}:{row['id']}").randrange(len(candidates))])
        spans = torch.as_tensor(np.stack(chosen))  # (B, 4)
        return torch.cat([spans[:, :2], spans[:, 2:]])  # sources, then targets

    def mlm(self, encoded: Mapping[str, torch.Tensor], src: Sequence[str], tgt: Sequence[str],
            generator: torch.Generator | None) -> dict[str, torch.Tensor]:
        """Masked inputs and labels (``mask_tokens``: 15%, 80/10/10)."""
        if self.mlm_input == "monolingual":
            n = 2 * len(src)
            ids, attention = encoded["input_ids"][:n], encoded["attention_mask"][:n]
            maskable = encoded["token_mask"][:n]
        else:
            pair = tlm_inputs(self.tokenizer, src, tgt, max_length=self.tokenization.max_length or 512)
            ids, attention = pair["input_ids"], pair["attention_mask"]
            maskable = attention.bool()
        masked, labels = mask_tokens(ids, self.vocab, self.mask_probability, generator, attention_mask=maskable)
        return {"mlm_input_ids": masked, "mlm_attention_mask": attention, "mlm_labels": labels}


def indexed(rows: Sequence[Mapping[str, Any]], column: str, width: int) -> torch.Tensor:
    """Flat per-row lists of ``width``-tuples -> (K, 1 + width) long rows prefixed by the row (pair) index."""
    parts = [torch.cat([torch.full((len(t), 1), b, dtype=torch.long), t], dim=1)
             for b, row in enumerate(rows)
             for t in [torch.as_tensor(np.asarray(row[column], dtype=np.int64).reshape(-1, width))]]
    return torch.cat(parts) if parts else torch.empty(0, 1 + width, dtype=torch.long)
