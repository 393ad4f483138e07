"""A study's report from its units' records: per-arm tables, and comparisons whose intervals are a naive
bootstrap's over the same items; seeds paired where both arms ran them; imported rows kept apart."""

from __future__ import annotations

import numpy as np
import pytest

from eval.test_stats import naive_bootstrap
from conftest import REPO
from study.test_spec import write
from xlt.config import ConfigError
from xlt.study import load_study
from xlt.study.report import build, markdown
from xlt.study.units import ROWS, scored_arm

STRIDES = "evenly spaced strides"


def record(variant: str, seed: int, hits: list[int], rows: str = ROWS) -> dict:
    """A unit's record whose arm predicted ``hits`` (1 = right) on de items, and all of its 4 English rows."""
    n = len(hits)
    predictions = {"id": [*map(str, range(n)), *map(str, range(4))], "lang": ["de"] * n + ["en"] * 4,
                   "label": ["a"] * (n + 4), "predicted": ["a" if h else "b" for h in hits] + ["a"] * 4}
    return {"unit": f"{variant}-seed{seed}", "variant": variant, "seed": seed, "rows": rows, "minutes": 1.0,
            "cpu": "CPU", "finished": "t", "arms": {variant: scored_arm(predictions, "en")}}


@pytest.fixture
def study(tmp_path):
    return load_study(write(tmp_path, variants={"a": {"label": "A"}, "b": {"label": "B"}, "probe": {"recipe": "probe"}},
                            comparisons=[{"a": "a", "b": "b", "paper": "+1", "source": "p"}, {"a": "a", "b": "probe"}]))


def test_scored_arm_is_accuracy_per_language_and_items_in_id_order():
    arm = scored_arm({"id": ["2", "10", "1", "x"], "lang": ["de", "de", "fr", "en"], "label": [1, 0, 1, 1],
                      "predicted": [1, 1, 1, 0]}, "en")
    assert arm["acc"] == {"de": 0.5, "fr": 1.0, "en": 0.0, "avg_target": 0.75}
    assert arm["items"] == "011"  # de/10 wrong, de/2 right, fr/1 right: sorted by "<lang>/<id>"


def test_the_intervals_are_the_naive_bootstraps_over_seed_averaged_items(study):
    rng = np.random.default_rng(5)
    hits = {(v, s): rng.integers(0, 2, 41).tolist() for v in "ab" for s in (0, 1, 2)}
    records = [record(v, s, h) for (v, s), h in hits.items()] + [record("probe", 0, rng.integers(0, 2, 41).tolist())]
    content = build(study, records)
    (ab, a_probe) = content["comparisons"]
    a, b = (np.mean([hits[(v, s)] for s in (0, 1, 2)], axis=0) for v in "ab")
    assert ab["interval"][0] == pytest.approx((a - b).mean())
    assert tuple(ab["interval"][1:]) == pytest.approx(naive_bootstrap(a - b, 10_000, 0.95, 0))
    assert ab["seeds"] == "3 / 3" and ab["verdict"] in ("gain", "loss", "within noise")  # not provisional
    assert a_probe["seeds"] == "3 / 1" and "provisional" not in a_probe["verdict"]  # a probe has one run
    table = content["tables"]["Accuracy on the scored split (mean ± std over seeds)"]
    mean, std = np.mean([np.mean(hits[("a", s)]) for s in (0, 1, 2)]), np.std([np.mean(hits[("a", s)]) for s in (0, 1, 2)], ddof=1)
    assert table[0]["arm"] == "A" and table[0]["avg_target"] == f"{mean:.3f} ± {std:.3f}" and table[0]["en"] == "1.000 ± 0.000"


def test_arms_are_paired_on_their_common_seeds_and_fewer_seeds_are_provisional(study):
    records = [record("a", s, [1, 0, 1, 1]) for s in (0, 1, 2)] + [record("b", 1, [0, 0, 1, 1])]
    ab = build(study, records)["comparisons"][0]
    assert ab["seeds"] == "3 / 1 (paired on seeds 1)" and ab["verdict"].endswith("(provisional: 1 seed)")


def test_units_on_other_rows_are_reported_apart_and_never_paired_with_the_studys(study):
    records = [record("a", 0, [1, 1, 1, 0]), record("b", 0, [0, 1, 1, 0]),
               record("a", 0, [1, 1, 0, 0, 1], STRIDES), record("b", 0, [0, 0, 0, 0, 1], STRIDES)]
    content = build(study, records)
    assert [(c["rows"], c["interval"][0]) for c in content["comparisons"]] == [(ROWS, 0.25), (STRIDES, 0.4)]
    table = content["tables"]["Accuracy on the scored split (mean ± std over seeds)"]
    assert [(row["arm"], row["rows"], row["avg_target"]) for row in table] == [
        ("A", ROWS, "0.750"), ("B", ROWS, "0.500"), ("A", STRIDES, "0.600"), ("B", STRIDES, "0.200")]
    text = markdown(study, content, "python jobs/study.py --study s.yaml", "results.png", ["probe-seed0"], {}, None)
    assert "Not finished yet: probe-seed0 (the command above runs them)." in text


def test_an_arm_keeps_macro_f1_and_the_classes_it_predicted_on_the_targets():
    gold, predicted = ["a", "a", "b", "c", "c", "a"], ["a", "b", "b", "a", "a", "c"]
    langs = ["de", "de", "de", "fr", "fr", "en"]
    arm = scored_arm({"id": list("123456"), "lang": langs, "label": gold, "predicted": predicted}, "en")

    def naive_f1(pairs):  # mean over the classes in gold or predicted of 2PR / (P + R)
        scores = []
        for c in sorted({x for pair in pairs for x in pair}):
            tp = sum(g == c == p for g, p in pairs)
            fp, fn = sum(p == c != g for g, p in pairs), sum(g == c != p for g, p in pairs)
            scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
        return sum(scores) / len(scores)

    de, fr = naive_f1(list(zip(gold[:3], predicted[:3]))), naive_f1(list(zip(gold[3:5], predicted[3:5])))
    assert arm["f1"]["de"] == pytest.approx(de) and arm["f1"]["avg_target"] == pytest.approx((de + fr) / 2)
    assert (arm["classes_predicted"], arm["classes"]) == (2, 3)  # a and b on the targets; c only in English


@pytest.mark.parametrize("preset, declared", [("finetune_sib200.yaml", "adapted-e5"),
                                              ("finetune_xnli.yaml", "declared")])
def test_the_baselines_summary_finds_the_best_baseline_and_its_interval(tmp_path, preset, declared):
    """The declared recipe of single texts is the adapted probe, of pairs the preset's; each is compared with the
    best of the other arms, neither taken for a baseline."""
    from benchmarks.loading import load_benchmark
    from xlt.study.units import write_unit_record

    module = load_benchmark("baselines")
    variants = {"declared": None, "probe-e5": {"recipe": "probe"}, "ce": None,
                "adapted-e5": {"recipe": "probe", "adapt": {"center": True}}}
    study = load_study(write(tmp_path, seeds=[0, 1], output=str(tmp_path / "out"),
                             preset=str(REPO / "configs" / preset), variants=variants))
    other = ({"declared", "adapted-e5"} - {declared}).pop()
    rng = np.random.default_rng(0)
    hits = {declared: 0.9, "probe-e5": 0.6, "ce": 0.3, other: 0.55}
    for variant, p in hits.items():
        for seed in ((0,) if variant.endswith("e5") else (0, 1)):
            write_unit_record(study.output, f"{variant}-seed{seed}",
                         record(variant, seed, (rng.random(200) < p).astype(int).tolist()))
    section, overview = module.study_section(study)
    # The other recipe is compared with the best baseline, never taken for one (here it is below it).
    assert overview["best baseline"] == "probe-e5" and overview["declared"]["above"]
    assert overview["declared"]["recipe"] == declared and overview["other"]["recipe"] == other
    assert overview["declared"]["over seeds and items"].endswith("gain") and not overview["other"]["above"]
    assert f"{declared} − best baseline (probe-e5)" in section and f"{other} − best baseline (probe-e5)" in section
    measured, above, table = module.recipe_table([overview], "other")
    assert (measured, above) == (1, 0) and "| other − best (interval over items) |" in table


def test_source_dev_is_the_accuracy_of_the_source_languages_dev_rows_only():
    from xlt.study.units import source_dev

    dev = {"id": ["y", "x", "z", "w"], "label": ["a", "b", "a", "b"], "predicted": ["a", "a", "a", "a"],
           "lang": ["en", "en", "de", "de"]}
    assert source_dev(dev, "en") == {"dev": 0.5, "dev_items": "01"}  # x wrong, y right: in id order
    assert source_dev(None, "en") == {} and source_dev(dev, "sw") == {}


def dev_record(variant: str, seed: int, dev_hits: list[int]) -> dict:
    """``record`` of a variant with 10 de test items, and its English dev rows right as ``dev_hits`` says."""
    out = record(variant, seed, [1, 0] * 5)
    out["arms"][variant] |= {"dev": sum(dev_hits) / len(dev_hits), "dev_items": "".join(map(str, dev_hits))}
    return out


def test_choose_declares_the_simplest_unless_dev_separates_another(tmp_path):
    spec = dict(variants={"a": {"label": "A"}, "b": {"label": "B"}, "c": {"label": "C"}},
                comparisons=[{"a": "b", "b": "a", "picked_on": "test"}], choose={"by": "dev", "among": ["a", "b", "c"]})
    chooser = load_study(write(tmp_path, **spec))
    tied = [dev_record(v, seed, [1] * 30 + [0] * 10) for v in "abc" for seed in (0, 1, 2)]
    content = build(chooser, tied)
    assert content["choice"]["chosen"] == "a" and "does not separate" in content["choice"]["why"]
    text = markdown(chooser, content, "cmd", "p.png", [], {}, None)
    assert "Chosen on the source language's dev: **A**" in text and "(an arm picked on test)" in text
    assert "source dev" in content["tables"]["Accuracy on the scored split (mean ± std over seeds)"][0]
    # c right on 38 of 40 dev rows against a's 30 in every seed: separated, chosen; b as a, not
    better = [dev_record("c", seed, [1] * 38 + [0] * 2) for seed in (0, 1, 2)]
    content = build(chooser, [r for r in tied if r["variant"] != "c"] + better)
    assert content["choice"]["chosen"] == "c" and "beyond noise" in content["choice"]["why"]
    # No dev recorded (a probe, a record from before): no choice, said
    assert build(chooser, [record(v, s, [1, 0]) for v in "abc" for s in (0, 1, 2)])["choice"]["chosen"] is None
    with pytest.raises(ConfigError, match="never test"):
        load_study(write(tmp_path, **{**spec, "choose": {"by": "test", "among": ["a", "b"]}}))
    with pytest.raises(ConfigError, match="choose.among"):
        load_study(write(tmp_path, **{**spec, "choose": {"among": ["a", "zz"]}}))
