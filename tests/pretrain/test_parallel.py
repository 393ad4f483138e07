"""Bitext sources, orientation, held-apart evaluation and the q_i ∝ p_i^α mixture (Zhang et al. 2023, Eq. 9)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from presets import bitext, task, task_config
from xlt.pretrain.config import PretrainData
from xlt.pretrain.parallel import (build_mixture, distinct_pivot, evaluation_rows, evaluation_sentences,
                                   load_dictionaries, mix, mixture_counts, orient, sampling_probabilities)
from xlt.tasks import BitextConfig, read_bitext

from .conftest import pair


def test_sampling_probabilities_eq9():
    # p = (0.9, 0.1); α = 0.5: q ∝ (√0.9, √0.1) = (0.9487, 0.3162) -> (0.75, 0.25).
    q = sampling_probabilities({"en-de": 900, "en-sw": 100}, alpha=0.5)
    assert q == pytest.approx({"en-de": 0.75, "en-sw": 0.25})
    assert sampling_probabilities({"a": 3, "b": 1}, alpha=1.0) == pytest.approx({"a": 0.75, "b": 0.25})
    with pytest.raises(ValueError, match="alpha"):
        sampling_probabilities({"a": 1}, alpha=0.0)
    counts = mixture_counts({"a": 900, "b": 60, "c": 40}, alpha=0.5, total=1000)
    assert sum(counts.values()) == 1000 and counts["a"] < 900 and counts["b"] > 60 and counts["c"] > 40


def test_mix_down_samples_without_and_up_samples_with_repeats():
    groups = {"en-de": [pair(f"s{i}", f"t{i}", id=f"de{i}") for i in range(90)],
              "en-sw": [pair(f"s{i}", f"t{i}", tgt_lang="sw", id=f"sw{i}") for i in range(10)]}
    pairs, q, m = mix(groups, alpha=0.5, seed=0)
    assert m == {"en-de": 75, "en-sw": 25} and q["en-de"] == pytest.approx(0.75)
    ids = Counter(p.id for p in pairs)
    assert sum(1 for k in ids if k.startswith("de")) == 75 and max(ids[k] for k in ids if k.startswith("de")) == 1
    assert sorted(ids[f"sw{i}"] for i in range(10)) == [2] * 5 + [3] * 5  # every one twice, half thrice
    assert [p.tgt_lang for p in pairs[:20]].count("sw") > 0  # shuffled: batches mix language pairs
    assert mix(groups, alpha=0.5, seed=0)[0] == pairs and mix(groups, alpha=0.5, seed=1)[0] != pairs
    assert len(mix(groups, alpha=1.0, total=10, seed=0)[0]) == 10


def test_orient_puts_the_pivot_first():
    p = pair("Die Katze.", "The cat.", "de", "en", id="x")
    assert orient(p, "en") == pair("The cat.", "Die Katze.", "en", "de", id="x")
    assert orient(pair("a", "b", "de", "fr"), "en") == pair("a", "b", "de", "fr")


def test_mixture_of_two_presets(data_dir):
    data = PretrainData(sources=(bitext("tatoeba", langs=("es",)), bitext("sib200", langs=("de",))))
    mixture = build_mixture(data, data_dir)
    assert mixture.available == {"en-de": 701, "en-es": 1000} and mixture.excluded == 0
    # Tatoeba's pairs are es -> en: oriented so that the pivot is the source side
    es = {p.id: p for p in read_bitext(bitext("tatoeba", langs=("es",)), data_dir)}
    drawn = next(p for p in mixture.pairs if p.id in es)
    assert (drawn.src, drawn.tgt, drawn.src_lang) == (es[drawn.id].tgt, es[drawn.id].src, "en")


def test_mixture_holds_evaluation_apart(data_dir, tmp_path):
    fr = read_bitext(bitext("tatoeba", langs=("fr",)), data_dir)
    sib_test = task("sib200", data_dir).examples("test", "de")
    path = tmp_path / "pairs.jsonl"
    rows = [{"src": "A sentence nobody evaluates.", "tgt": "Ein Satz."},
            {"src": "  " + fr[3].tgt.upper() + " ", "tgt": "Ein anderer Satz."},  # a Tatoeba fr English side
            {"src": "Another one.", "tgt": sib_test[0].text}]  # a SIB-200 test sentence
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    source = BitextConfig("files", path=str(path), src_lang="en", tgt_lang="de")
    held = dict(eval_source=bitext("tatoeba"), eval_langs=("fr",))
    data = PretrainData(sources=(source,), eval_tasks=(task_config("sib200"),), **held)
    mixture = build_mixture(data, data_dir)
    assert [p.src for p in mixture.pairs] == ["A sentence nobody evaluates."] and mixture.excluded == 2
    assert mixture.rows() == [{"pair": "en-de", "n": 1, "p": 1.0, "q": 1.0, "drawn": 1}]
    kept = build_mixture(PretrainData(sources=data.sources, exclude_eval_sentences=False, **held), data_dir)
    assert len(kept.pairs) == 3
    assert build_mixture(PretrainData(sources=data.sources, **held), data_dir).excluded == 1  # no eval_tasks
    with pytest.raises(ValueError, match="held apart"):
        build_mixture(PretrainData(sources=(bitext("tatoeba", langs=("fr",)),), **held), data_dir)
    assert normalized_in(fr[3].src, evaluation_sentences(PretrainData(sources=(source,), **held), data_dir))
    rows = evaluation_rows(PretrainData(sources=(source,), eval_source=bitext("tatoeba"), eval_langs=("fr", "sw"),
                                        eval_max_pairs=5), data_dir)
    assert len(rows) == 10 and {"src": rows[0]["src"], "tgt": rows[0]["tgt"]} in [{"src": p.src, "tgt": p.tgt} for p in fr]
    assert [r["lang"] for r in rows] == ["fr"] * 5 + ["sw"] * 5


def test_distinct_pivot_gives_each_english_line_of_a_multiway_corpus_to_one_language(data_dir):
    pairs = [orient(p, "en") for p in read_bitext(bitext("ntrex", langs=("de", "ja", "sw")), data_dir)]
    kept = distinct_pivot(pairs)
    english = [" ".join(p.src.split()).casefold() for p in kept]
    assert len(english) == len(set(english)) == len(set(" ".join(p.src.split()).casefold() for p in pairs))
    # NTREX: line i of every language translates English line i, so the languages take lines in turn
    shares = Counter(p.tgt_lang for p in kept)
    assert set(shares) == {"de", "ja", "sw"} and max(shares.values()) - min(shares.values()) <= 30
    assert kept[:3] == [pairs[0], pairs[1997 + 1], pairs[2 * 1997 + 2]]
    # a corpus without repeated pivot sentences is left as it is
    assert distinct_pivot(kept) == kept
    mixture = build_mixture(PretrainData(sources=(bitext("ntrex", langs=("de", "ja")),), distinct_pivot=True),
                            data_dir)
    assert len({p.src for p in mixture.pairs}) == len(mixture.pairs) < 2 * 1997


def normalized_in(text: str, sentences: set[str]) -> bool:
    return " ".join(text.split()).casefold() in sentences


def test_dictionaries_per_direction(tmp_path):
    (tmp_path / "en-de.txt").write_text("cat katze\nhouse haus\n", encoding="utf-8")
    (tmp_path / "en-zh.txt").write_text("water 水\n", encoding="utf-8")
    found = {(d.src_lang, d.tgt_lang): d for d in load_dictionaries(tmp_path, [("en", "de"), ("de", "en"), ("en", "zh")])}
    en_de, de_en, en_zh = found[("en", "de")], found[("de", "en")], found[("en", "zh")]
    assert (en_de.src_lang, en_de.tgt_lang, en_de.translations("cat")) == ("en", "de", ("katze",))
    assert (de_en.src_lang, de_en.tgt_lang, de_en.translations("haus")) == ("de", "en", ("house",))  # read reversed
    assert (en_zh.src_lang, en_zh.tgt_lang) == ("en", "zh")  # MUSE's zh serves Simplified zh pairs
    with pytest.raises(FileNotFoundError, match="neither en-sw.txt nor sw-en.txt"):
        load_dictionaries(tmp_path, [("en", "sw")])
