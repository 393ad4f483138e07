"""Augmentation UDFs (Wang et al. 2022, §3.1, §4.1), called by hand on numpy batches; one end-to-end Ray run."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from xlt.config import ConfigError
from xlt.data.augment import (
    VIEW_COLUMNS,
    AugmentConfig,
    CodeSwitch,
    CrossLingualAugment,
    FullTranslation,
    PartialTranslation,
    augment_report,
    build_augmented_dataset,
    draw_languages,
    partial_span,
)
from xlt.data.dictionary import BilingualDictionary, read_muse
from xlt.data.records import Example, as_rows
from xlt.data.sib200 import read_sib200
from xlt.data.translate import DictionaryTranslator, ProvidedTranslations


def batch_of(examples: list[Example]) -> dict[str, np.ndarray]:
    """Examples -> the numpy batch ``ds.take_batch()`` gives (object columns)."""
    rows = as_rows(examples)
    return {key: np.array([row[key] for row in rows], dtype=object) for key in rows[0]}


def rows_of(batch: dict[str, np.ndarray]) -> list[dict]:
    n = len(batch["id"])
    return [{key: (list(value[i]) if key in VIEW_COLUMNS and value[i] is not None else value[i])
             for key, value in batch.items()} for i in range(n)]


# A synthetic en->xx dictionary whose translations are recognisable: "zz" + word.
VOCAB = [f"w{i}" for i in range(50)]


def zz_dictionary(tgt: str) -> BilingualDictionary:
    return BilingualDictionary([(w, "zz" + w) for w in VOCAB], "en", tgt)


def test_code_switch_ratio_is_r_c_over_dictionary_words() -> None:
    rng = random.Random(0)
    examples = []
    for i in range(200):  # 20 words each: ~half in the dictionary, ~half not
        words = [rng.choice(VOCAB) if rng.random() < 0.5 else f"other{rng.randrange(99)}" for _ in range(20)]
        examples.append(Example(id=f"s{i}", text=" ".join(words) + ".", lang="en", label="x"))
    r_c = 0.3
    out = CodeSwitch(r_c, ["de", "fr"], [zz_dictionary("de"), zz_dictionary("fr")], seed=1)(batch_of(examples))

    switchable = switched = 0
    for example, views in zip(examples, out["views"]):
        (view,) = views
        source, target = example.text[:-1].split(), view[:-1].split()
        assert len(source) == len(target) and view.endswith(".")
        for s, t in zip(source, target):
            if s in VOCAB:
                switchable += 1
                switched += t == "zz" + s
                assert t in (s, "zz" + s)
            else:
                assert t == s  # words without an entry are never touched
    assert switchable >= 1800
    sd = math.sqrt(r_c * (1 - r_c) / switchable)
    assert abs(switched / switchable - r_c) < 4 * sd, (switched, switchable)
    assert {lang for langs in out["view_langs"] for lang in langs} == {"de", "fr"}  # drawn per view


def test_code_switch_preserves_case_and_punctuation() -> None:
    d = BilingualDictionary([("the", "die"), ("cat", "katze"), ("hello", "hallo"), ("paris", "paris")], "en", "de")
    ex = Example(id="a", text="The CAT, said: «Hello»! (Paris)", lang="en")
    out = CodeSwitch(1.0, ["de"], [d])(batch_of([ex]))
    # identity entries (paris -> paris) are not a switch; everything between words is kept
    assert list(out["views"][0]) == ["Die KATZE, said: «Hallo»! (Paris)"]


def test_views_are_list_columns_and_other_columns_untouched() -> None:
    examples = [Example(id=f"i{k}", text=f"w1 w2 w{k} end", lang="en", label=f"l{k}", source_id=f"s{k}")
                for k in range(5)]
    pair = Example(id="p", text="w3 w4", text_pair="w5 and w6", lang="en", label="lp", source_id="sp")
    batch = batch_of(examples + [pair])
    aug = CrossLingualAugment(t_f=1, t_p=2, t_c=2, r_c=0.5, languages=["de", "fr"],
                              translator=DictionaryTranslator([zz_dictionary("de"), zz_dictionary("fr")]),
                              dictionaries=[zz_dictionary("de"), zz_dictionary("fr")], seed=0)
    out = aug(batch)
    for key in batch:  # id, text, label, lang, source_id, text_pair: the same objects
        assert list(out[key]) == list(batch[key])
    for row in rows_of(out):
        assert row["view_kinds"] == ["full", "partial", "partial", "codeswitch", "codeswitch"]
        assert len(row["views"]) == len(row["view_langs"]) == 5 and row["view_missing"] == []
        assert sorted(row["view_langs"][1:3]) == ["de", "fr"]  # two partial views: distinct languages
        if row["id"] == "p":
            assert len(row["view_pairs"]) == 5 and all(row["view_pairs"])
        else:
            assert row["view_pairs"] is None


def test_full_translation_of_pairs_and_partial_side() -> None:
    t = DictionaryTranslator(zz_dictionary("de"))
    pair = Example(id="p", text="w1 w2", text_pair="w3 w4.", lang="en")
    (full,) = rows_of(FullTranslation(["de"], t)(batch_of([pair])))
    assert full["views"] == ["zzw1 zzw2"] and full["view_pairs"] == ["zzw3 zzw4."]
    (part,) = rows_of(PartialTranslation(["de"], t, n_views=4)(batch_of([pair])))
    for text, other in zip(part["views"], part["view_pairs"]):  # exactly one side translated, whole
        assert (text, other) in {("zzw1 zzw2", "w3 w4."), ("w1 w2", "zzw3 zzw4.")}


def test_partial_translation_replaces_one_contiguous_span() -> None:
    t = DictionaryTranslator(zz_dictionary("de"))
    text = "w0, w1 w2; w3 w4 w5 w6 w7 w8 w9!"
    ex = [Example(id=f"e{i}", text=text, lang="en") for i in range(30)]
    out = PartialTranslation(["de"], t, fraction=0.3)(batch_of(ex))
    starts = set()
    for (view,) in out["views"]:
        marks = [w.startswith("zz") for w in view.replace(",", "").replace(";", "").replace("!", "").split()]
        assert sum(marks) == 3  # round(0.3 * 10) words
        first = marks.index(True)
        assert marks[first:first + 3] == [True] * 3  # contiguous
        assert view.count(",") == 1 and view.count(";") == 1 and view.endswith("!")
        starts.add(first)
    assert len(starts) > 3  # the span start is drawn
    assert partial_span(1, 0.5, random.Random(0)) == (0, 1)
    assert all(partial_span(4, 1.0, random.Random(s))[1] - partial_span(4, 1.0, random.Random(s))[0] == 3
               for s in range(5))  # an anchor word always remains


def test_deterministic_per_row_not_per_batch() -> None:
    examples = [Example(id=f"r{i}", text=f"w{i % 50} w{(3 * i) % 50} x w{(7 * i) % 50}", lang="en")
                for i in range(40)]
    dicts = [zz_dictionary(lang) for lang in ("de", "fr", "es")]

    def make(seed: int) -> CrossLingualAugment:
        return CrossLingualAugment(t_f=1, t_p=1, t_c=2, r_c=0.5, languages=["de", "fr", "es"],
                                   translator=DictionaryTranslator(dicts), dictionaries=dicts, seed=seed)

    def views(aug: CrossLingualAugment, chunks: list[list[Example]]) -> dict[str, tuple]:
        got = {}
        for chunk in chunks:
            for row in rows_of(aug(batch_of(chunk))):
                got[row["id"]] = (tuple(row["views"]), tuple(row["view_langs"]))
        return got

    whole = views(make(7), [examples])
    assert whole == views(make(7), [examples[:13], examples[13:29], examples[29:]])  # other batch splits
    assert whole == views(make(7), [examples[::-1]])  # other order (another worker's batch)
    assert whole != views(make(8), [examples])  # the seed matters


def test_missing_languages_fail_at_construction() -> None:
    de = zz_dictionary("de")
    with pytest.raises(ValueError, match=r"code-switching into 'sw': no en->sw dictionary .*given: en->de"):
        CodeSwitch(0.5, ["de", "sw"], [de])
    zh_hant = BilingualDictionary([("cat", "貓")], "en", "zh-Hant")
    with pytest.raises(ValueError, match="MUSE's Chinese is Traditional"):
        CrossLingualAugment(t_f=0, t_p=0, t_c=1, languages=["zh"], dictionaries=[zh_hant])
    provided = ProvidedTranslations([Example(id="e", text="a", lang="en", source_id="1"),
                                     Example(id="d", text="b", lang="de", source_id="1")])
    with pytest.raises(ValueError, match=r"full translation into 'sw'.*ProvidedTranslations translates en into: de"):
        CrossLingualAugment(t_f=1, t_p=0, t_c=0, languages=["de", "sw"], translator=provided)
    with pytest.raises(ValueError, match="need a translator"):
        CrossLingualAugment(t_f=1, t_p=0, t_c=0, languages=["de"])
    with pytest.raises(ValueError, match="contains the source language 'en'"):
        AugmentConfig(languages=("de", "eng_Latn"))
    with pytest.raises(ConfigError, match="r_c=1.5 is not valid"):
        AugmentConfig(r_c=1.5, languages=("de",))
    with pytest.raises(ValueError, match="t_c=1 asks for codeswitch views but no target language"):
        AugmentConfig(t_f=0, t_p=0, t_c=1)
    # per-kind languages: sw by provided translation only, code-switching where MUSE has a dictionary
    CrossLingualAugment(t_f=1, t_p=0, t_c=1, languages=["de"], translator=provided, dictionaries=[de],
                        codeswitch_languages=["de"])


def test_missing_views_are_recorded_and_reported() -> None:
    provided = ProvidedTranslations([Example(id="e1", text="w1 w2", lang="en", source_id="1"),
                                     Example(id="d1", text="zw1 zw2", lang="de", source_id="1")])
    examples = [Example(id="a", text="w1 w2", lang="en", source_id="1"),
                Example(id="b", text="w3 only", lang="en", source_id="2"),  # no German row for source_id 2
                Example(id="c", text="nothing to switch", lang="en", source_id="1")]
    aug = CrossLingualAugment(t_f=1, t_p=0, t_c=1, r_c=1.0, languages=["de"], translator=provided,
                              dictionaries=[zz_dictionary("de")])
    out = aug(batch_of(examples))
    assert [list(m) for m in out["view_missing"]] == [[], ["full:de"], ["full:de", "codeswitch:de"]]
    assert list(out["views"][0]) == ["zw1 zw2", "zzw1 zzw2"]
    report = augment_report(out)
    assert report.rows == 3 and not report.complete
    assert report.made[("full", "de")] == 1 and report.missing[("full", "de")] == 2
    assert "full:de: 2 of 3 views missing" in str(report)
    assert "codeswitch:de: 1 of 3 views missing: no word of the text" in str(report)


def test_partial_translation_of_a_single_text_needs_a_segment_translator() -> None:
    provided = ProvidedTranslations([Example(id="e1", text="w1 w2", lang="en", source_id="1"),
                                     Example(id="d1", text="zw1 zw2", lang="de", source_id="1")])
    aug = CrossLingualAugment(t_f=0, t_p=1, t_c=0, languages=["de"], translator=provided)
    with pytest.raises(ValueError, match="pass partial_translator=DictionaryTranslator"):
        aug(batch_of([Example(id="a", text="w1 w2", lang="en", source_id="1")]))
    with pytest.raises(ValueError, match=r"row 'a' is in 'de' but the augmentation translates from"):
        aug(batch_of([Example(id="a", text="w1 w2", lang="de", source_id="1")]))


def test_provided_translations_on_sib200(data_dir: Path) -> None:
    en = read_sib200(data_dir, "en", "train")[:30]
    provided = ProvidedTranslations.from_sib200(data_dir, ["en", "de", "fr", "sw"])
    de = read_muse(data_dir, "en", "de")
    aug = CrossLingualAugment(t_f=2, t_p=1, t_c=1, r_c=0.5, languages=["de", "fr", "sw"], translator=provided,
                              partial_languages=["de"], partial_translator=DictionaryTranslator(de),
                              codeswitch_languages=["de"], dictionaries=[de], seed=0)
    out = rows_of(aug(batch_of(en)))
    human = {lang: {e.source_id: e.text for e in read_sib200(data_dir, lang, "train")} for lang in ("de", "fr", "sw")}
    for example, row in zip(en, out):
        full = [(v, lang) for v, k, lang in zip(row["views"], row["view_kinds"], row["view_langs"]) if k == "full"]
        assert len(full) == 2 and full[0][1] != full[1][1]
        assert all(v == human[lang][example.source_id] for v, lang in full)
        assert row["view_kinds"] == ["full", "full", "partial", "codeswitch"] and row["view_missing"] == []
        assert (row["label"], row["source_id"], row["id"]) == (example.label, example.source_id, example.id)


def test_draw_languages_distinct_while_possible() -> None:
    rng = random.Random(0)
    assert sorted(draw_languages(rng, ["de", "fr", "es"], 3)) == ["de", "es", "fr"]
    assert draw_languages(rng, ["de"], 2) == ["de", "de"]
    for _ in range(20):
        drawn = draw_languages(rng, ["de", "fr", "es"], 5)
        assert len(set(drawn[:3])) == 3 and len(set(drawn[3:])) == 2


def test_build_augmented_dataset_end_to_end(ray_cluster, data_dir: Path) -> None:
    en = read_sib200(data_dir, "en", "train")[:96]
    dicts = [read_muse(data_dir, "en", lang) for lang in ("de", "fr")]
    config = AugmentConfig(t_f=1, t_p=1, t_c=1, r_c=0.5, languages=("de", "fr"), seed=3)
    translator = DictionaryTranslator(dicts)
    ds = build_augmented_dataset(en, config, translator=translator, dictionaries=dicts, batch_size=20).materialize()
    rows = sorted(ds.take_all(), key=lambda r: r["id"])
    assert len(rows) == len(en)  # one row per example

    by_hand = rows_of(CrossLingualAugment.from_config(config, translator=translator, dictionaries=dicts)(
        batch_of(en)))
    expected = sorted(by_hand, key=lambda r: r["id"])
    for got, want in zip(rows, expected):
        for key in ("id", "text", "label", "lang", "source_id", "views", "view_kinds", "view_langs", "view_missing"):
            assert got[key] == want[key], key
        assert got["text_pair"] is None and got["view_pairs"] is None  # nulls stay nulls through Ray

    report = augment_report(ds)
    assert report.rows == 96 and sum(report.made.values()) + sum(report.missing.values()) == 3 * 96
    with pytest.raises(ValueError, match="no en->sw dictionary"):  # validated on the driver, before any worker
        build_augmented_dataset(en, AugmentConfig(t_f=0, t_p=0, t_c=1, languages=("sw",)), dictionaries=dicts)
