"""``ProvidedTranslations``: looked up by source_id, matched by text and side; SIB-200 train rows only."""

from __future__ import annotations

from pathlib import Path

import pytest

from presets import task
from xlt.data.records import Example
from xlt.translate import ProvidedTranslations


def _example(lang: str, sid: str, text: str, pair: str | None = None) -> Example:
    return Example(id=f"{lang}/{sid}", text=text, lang=lang, label="x", text_pair=pair, source_id=sid)


def test_provided_translations_match_text_and_side() -> None:
    p = ProvidedTranslations([
        _example("en", "1", "Hello.", "How are you?"), _example("de", "1", "Hallo.", "Wie geht's?"),
        _example("en", "2", "Bye."),
    ])
    assert p.languages == {"en", "de"} and not p.translates_segments
    out = p.translate(["Hello.", "How are you?", "Bye.", "Hello", "Hello."], "en", "de",
                      source_ids=["1", "1", "2", "1", None])
    # text -> text, text_pair -> text_pair; no de row for 2; a span is no stored text; no id
    assert out == ["Hallo.", "Wie geht's?", None, None, None]
    with pytest.raises(ValueError, match="pass one source_id per text"):
        p.translate(["Hello."], "en", "de")
    with pytest.raises(ValueError, match="no provided translations en->fr"):
        p.translate(["Hello."], "en", "fr", source_ids=["1"])
    with pytest.raises(ValueError, match="both de with source_id '1'"):
        ProvidedTranslations([_example("de", "1", "a"), Example(id="other", text="b", lang="de", source_id="1")])
    with pytest.raises(ValueError, match="has no source_id"):
        ProvidedTranslations([Example(id="x", text="a", lang="de")])


def test_provided_translations_of_a_tasks_train_rows(data_dir: Path) -> None:
    sib = task("sib200", data_dir)
    p = ProvidedTranslations(ex for lang in ("en", "de", "sw") for ex in sib.examples("train", lang))
    en = sib.examples("train", "en")[:20]
    sw = {e.source_id: e.text for e in sib.examples("train", "sw")}
    out = p.translate([e.text for e in en], "en", "sw", source_ids=[e.source_id for e in en])
    assert out == [sw[e.source_id] for e in en]
    dev = sib.examples("dev", "en")[0]  # train only: a dev sentence has no translation here
    assert p.translate([dev.text], "en", "de", source_ids=[dev.source_id]) == [None]
