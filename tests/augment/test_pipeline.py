"""``CrossLingualAugment`` (Wang et al. 2022, §3.1, §4.1) called by hand on numpy batches; one end-to-end Ray run of
``build_augmented_dataset``."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from xlt.augment import AugmentConfig, CodeSwitch, CrossLingualAugment, build_augmented_dataset
from xlt.data.dictionary import BilingualDictionary, read_muse
from presets import task
from xlt.data.records import Example
from xlt.translate import DictionaryTranslator, ProvidedTranslations

from .helpers import batch_of, rows_of, zz_dictionary


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
    # per-kind languages: sw by provided translation only, code-switching where MUSE has a dictionary
    CrossLingualAugment(t_f=1, t_p=0, t_c=1, languages=["de"], translator=provided, dictionaries=[de],
                        codeswitch_languages=["de"])


def test_partial_translation_of_a_single_text_needs_a_segment_translator() -> None:
    provided = ProvidedTranslations([Example(id="e1", text="w1 w2", lang="en", source_id="1"),
                                     Example(id="d1", text="zw1 zw2", lang="de", source_id="1")])
    aug = CrossLingualAugment(t_f=0, t_p=1, t_c=0, languages=["de"], translator=provided)
    with pytest.raises(ValueError, match="pass partial_translator=DictionaryTranslator"):
        aug(batch_of([Example(id="a", text="w1 w2", lang="en", source_id="1")]))
    with pytest.raises(ValueError, match=r"row 'a' is in 'de' but the augmentation translates from"):
        aug(batch_of([Example(id="a", text="w1 w2", lang="de", source_id="1")]))


def test_provided_translations_on_sib200(data_dir: Path) -> None:
    sib = task("sib200", data_dir)
    en = sib.examples("train", "en")[:30]
    provided = ProvidedTranslations(ex for lang in ("en", "de", "fr", "sw") for ex in sib.examples("train", lang))
    de = read_muse(data_dir, "en", "de")
    aug = CrossLingualAugment(t_f=2, t_p=1, t_c=1, r_c=0.5, languages=["de", "fr", "sw"], translator=provided,
                              partial_languages=["de"], partial_translator=DictionaryTranslator(de),
                              codeswitch_languages=["de"], dictionaries=[de], seed=0)
    out = rows_of(aug(batch_of(en)))
    human = {lang: {e.source_id: e.text for e in sib.examples("train", lang)} for lang in ("de", "fr", "sw")}
    for example, row in zip(en, out):
        full = [(v, lang) for v, k, lang in zip(row["views"], row["view_kinds"], row["view_langs"]) if k == "full"]
        assert len(full) == 2 and full[0][1] != full[1][1]
        assert all(v == human[lang][example.source_id] for v, lang in full)
        assert row["view_kinds"] == ["full", "full", "partial", "codeswitch"] and row["view_missing"] == []
        assert (row["label"], row["source_id"], row["id"]) == (example.label, example.source_id, example.id)


def test_build_augmented_dataset_end_to_end(ray_cluster, data_dir: Path) -> None:
    en = task("sib200", data_dir).examples("train", "en")[:96]
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
    # No actor: the same UDF over the same batches in this process, the same rows, and no task
    # either: it finishes with every CPU reserved (as a sweep's trials reserve them).
    everything = ray_cluster.util.placement_group([{"CPU": ray_cluster.cluster_resources()["CPU"]}])
    ray_cluster.get(everything.ready(), timeout=60)
    made: list = []
    here = threading.Thread(target=lambda: made.append(build_augmented_dataset(
        en, config, translator=translator, dictionaries=dicts, batch_size=20, num_actors=0)), daemon=True)
    here.start()
    here.join(timeout=60)
    ray_cluster.util.remove_placement_group(everything)
    assert made, "in-process augmentation waited for a CPU"
    assert "MapBatches" not in str(made[0])  # made already, not a step left to run
    assert sorted(made[0].take_all(), key=lambda r: r["id"]) == rows

    assert len(rows) == 96 and all(len(r["views"]) + len(r["view_missing"]) == 3 for r in rows)  # made or missing
    with pytest.raises(ValueError, match="no en->sw dictionary"):  # validated on the driver, before any worker
        build_augmented_dataset(en, AugmentConfig(t_f=0, t_p=0, t_c=1, languages=("sw",)), dictionaries=dicts)
