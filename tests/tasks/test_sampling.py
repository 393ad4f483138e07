"""n rows of a task's split (``max_examples``, ``labeled_fraction``) are seeded draws, stratified by
label, linked across languages, disjoint across splits; a slice the user writes stays a range."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .helpers import task_config, write_tsv
from presets import task
from xlt.tasks import load_task

LABELS = ("negative", "neutral", "positive")


def cyclic_task(root: Path, per_label: int = 613, **changes):
    """A sentiment release whose train file cycles through its labels (negative, neutral, positive,
    negative, ...), in English and German (the same ids: translations), with a small test split."""
    for lang in ("en", "de"):
        rows = [[f"{i}", f"{lang} text {i}", LABELS[i % 3]] for i in range(3 * per_label)]
        write_tsv(root / lang / "train.tsv", ["id", "text", "label"], rows)
        write_tsv(root / lang / "test.tsv", ["id", "text", "label"],
                  [[f"t{i}", f"{lang} test {i}", LABELS[i % 3]] for i in range(30)])
    cfg = task_config(type="files", name="cyclic", path="{data_dir}/{lang}/{split}.tsv", fields={"id": "id"},
                      link="id", **changes)
    return load_task(cfg, root)


def test_150_of_1839_label_cyclic_rows_hold_each_label_equally(tmp_path: Path) -> None:
    cyc = cyclic_task(tmp_path)
    assert len(cyc.examples("train", "en")) == 1839
    for n in (150, 300, 600):  # strides 12, 6 and 3 took one label only
        drawn = cyc.examples("train", "en", n)
        assert len(drawn) == n and Counter(ex.label for ex in drawn) == {label: n // 3 for label in LABELS}
    # The pool's labels are gold, kept for scoring: its draw is not stratified by them, and still random.
    pool = Counter(ex.label for ex in cyc.examples("pool", "de", 150))
    assert sum(pool.values()) == 150 and all(30 <= count <= 70 for count in pool.values())
    # Another sample_seed, another draw; the same seed, the same draw.
    other = cyclic_task(tmp_path, sample_seed=1)
    assert ({ex.id for ex in other.examples("train", "en", 150)} != {ex.id for ex in cyc.examples("train", "en", 150)})
    assert cyc.examples("train", "en", 150) == cyclic_task(tmp_path).examples("train", "en", 150)


def test_a_slice_the_user_writes_stays_a_range(tmp_path: Path) -> None:
    cyc = cyclic_task(tmp_path, splits={"train": "train[:300]"})
    assert [ex.source_id for ex in cyc.examples("train", "en")] == [str(i) for i in range(300)]


def test_a_parallel_task_draws_the_same_ids_in_every_language(data_dir: Path) -> None:
    sib = task("sib200", data_dir)
    for split, n in (("train", 150), ("test", 100)):
        drawn = {lang: [ex.source_id for ex in sib.examples(split, lang, n)] for lang in sib.langs}
        assert all(len(ids) == n for ids in drawn.values())
        assert all(set(ids) == set(drawn["en"]) for ids in drawn.values()), split
        # Stratified: each topic its share of n, as in the whole split.
        whole = Counter(ex.label for ex in sib.examples(split, "en"))
        got = Counter(ex.label for ex in sib.examples(split, "en", n))
        assert all(abs(got[label] - n * count / sum(whole.values())) < 1 for label, count in whole.items())
    # The pool of every target language holds the same sentences too, and splits stay disjoint.
    pools = {lang: {ex.source_id for ex in sib.examples("pool", lang, 200)} for lang in sib.target_langs}
    assert all(ids == pools["de"] for ids in pools.values())
    test_ids = {ex.source_id for ex in sib.examples("test", "en")}
    assert not pools["de"] & test_ids


def test_a_disjoint_pool_holds_no_translation_of_the_train_draw(tmp_path: Path) -> None:
    import pytest

    from xlt.config import ConfigError
    from xlt.data.sample import sample

    cyc = cyclic_task(tmp_path)
    taught = {ex.source_id for ex in cyc.examples("train", "en", 600)}
    assert len({ex.source_id for ex in cyc.pool("de", 600)} & taught) > 100  # the task's pool: the same sentences
    disjoint = cyc.pool("de", 600, disjoint=True)
    assert len(disjoint) == 600 and not {ex.source_id for ex in disjoint} & taught
    # the naive reference: the pool without them, then the seeded draw of any n rows
    rest = [ex for ex in cyc.examples("pool", "de") if ex.source_id not in taught]
    assert disjoint == sample(rest, 600, key=lambda ex: ex.source_id, seed=0)
    assert cyc.pool("de", 600) == cyc.examples("pool", "de", 600)
    import dataclasses

    unlinked = load_task(dataclasses.replace(cyc.config, link="none"), tmp_path)
    with pytest.raises(ConfigError, match="no translations"):
        unlinked.pool("de", 10, disjoint=True)
