"""Machine translation with Hugging Face seq2seq models (MarianMT: one model per direction; NLLB: one
model, target chosen by its FLORES code), batched ``generate``. torch and transformers are imported
when the models load: constructing a translator is cheap."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from xlt.text.languages import code_among, normalize_lang
from xlt.translate.translator import clean_translation, describe_support

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
                out[i] = clean_translation(decoded.strip())
        return out

    def __repr__(self) -> str:
        models = ", ".join(f"{lang}: {src}" for lang, src in sorted(self._sources.items()))
        return f"Seq2SeqTranslator({self.src_lang} -> {{{models}}})"
