"""The presets in ``configs/tasks/`` on the offline data: languages, labels, sizes, pairs and links.

Skipped without ``../shared/data`` (the ``data_dir`` fixture). Each load takes well under a second.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xlt.config import from_dict, read_yaml
from xlt.tasks import Task, TaskConfig, load_task

PRESETS = Path(__file__).resolve().parents[2] / "configs" / "tasks"

# preset -> (languages, labels, a target language, its train/dev/test/pool sizes)
EXPECTED = {
    "sib200": (("en", "ar", "de", "es", "fr", "hi", "ja", "ru", "sw", "zh"),
               ("science/technology", "travel", "politics", "sports", "health", "entertainment", "geography"),
               "de", {"train": 701, "dev": 99, "test": 204, "pool": 701}),
    "xnli": (("en", "ar", "de", "es", "fr", "hi", "ru", "sw", "zh"), ("entailment", "neutral", "contradiction"),
             "de", {"train": 2000, "dev": 490, "test": 5010, "pool": 2000}),
    "pawsx": (("en", "de", "es", "fr", "ja", "zh"), ("different", "paraphrase"),
              "de", {"train": 1163, "dev": 380, "test": 389, "pool": 1163}),
    "nusax": (("en", "ace", "ban", "bbc", "bjn", "bug", "jv", "mad", "min", "nij", "su"),
              ("negative", "neutral", "positive"), "jv", {"train": 500, "dev": 100, "test": 400, "pool": 500}),
}


def preset(name: str, data_dir: Path) -> Task:
    return load_task(from_dict(TaskConfig, read_yaml(PRESETS / f"{name}.yaml"), prefix="task."), data_dir)


def test_every_preset_is_covered() -> None:
    assert sorted(p.stem for p in PRESETS.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_languages_labels_and_sizes(name: str, data_dir: Path) -> None:
    langs, labels, lang, sizes = EXPECTED[name]
    task = preset(name, data_dir)
    assert task.config.name == name
    assert task.langs == langs
    assert task.labels == labels
    assert {role: len(task.examples(role, lang)) for role in sizes} == sizes
    train = task.examples("train", task.source_lang)
    assert {ex.label for ex in train} == set(labels)
    assert {ex.lang for ex in task.examples("test", lang)} == {lang}
    ids = [ex.id for ex in task.examples("test", lang)]
    assert len(set(ids)) == len(ids) and all(i.startswith(f"{name}/{lang}/") for i in ids)


def test_sib200_flores_folders_and_source_id_links(data_dir: Path) -> None:
    task = preset("sib200", data_dir)
    assert task.found["de"] == "deu_Latn" and task.found["zh"] == "zho_Hans" and task.found["sw"] == "swh_Latn"
    assert task.paired is False
    dev_en = task.examples("dev", "en")
    linked = task.translations("dev", "zh", dev_en)
    assert len(linked) == len(dev_en) == 99
    assert all(linked[ex.id].source_id == ex.source_id and linked[ex.id].label == ex.label for ex in dev_en)


def test_xnli_pairs_line_aligned(data_dir: Path) -> None:
    task = preset("xnli", data_dir)
    assert task.paired
    en, de = task.examples("train", "en"), task.examples("train", "de")
    assert en[0].text == "And he said, Mama, I'm home."
    assert de[0].text == "und er hat gesagt, Mama ich bin daheim."
    assert de[0].text_pair == "Er rief seine Mutter an, sobald er aus dem Schulbus stieg."
    linked = task.translations("train", "de", en)
    assert linked[en[0].id] == de[0]
    assert de[0].label == en[0].label == "neutral"
    assert len(linked) == 2000 and all(linked[ex.id].label == ex.label for ex in en)
    # dev is validation[2000:]: its rows keep their position, linked and identified apart from train
    dev_en = task.examples("dev", "en")
    assert dev_en[0].id == "xnli/en/validation/2000"
    assert task.translations("dev", "de", dev_en)[dev_en[0].id] == task.examples("dev", "de")[0]
    assert not {ex.id for ex in en} & {ex.id for ex in dev_en}


def test_pawsx_drops_ns_and_keeps_slices_apart(data_dir: Path) -> None:
    task = preset("pawsx", data_dir)
    assert task.paired
    de = {role: task.examples(role, "de") for role in ("train", "dev", "test")}
    assert sum(len(rows) for rows in de.values()) == 1932 < 2000  # 68 untranslated NS rows dropped
    assert all("NS" not in (ex.text, ex.text_pair) for rows in de.values() for ex in rows)
    assert {len(task.examples(role, "en")) for role in ("dev", "test")} == {400}
    # slices of dev.jsonl: no dev or test row (in any language) shares a data id with an English train row
    train_ids = {ex.source_id for ex in task.examples("train", "en")}
    assert len(train_ids) == 1200
    for role in ("dev", "test"):
        assert not train_ids & {ex.source_id for ex in task.examples(role, "en") + de[role]}
    # the JSONL pool keeps its gold labels (for scoring pseudo-labels), mapped to names
    assert {ex.label for ex in task.examples("pool", "de")} == {"different", "paraphrase"}


def test_nusax_language_names_map_to_codes(data_dir: Path) -> None:
    task = preset("nusax", data_dir)
    assert task.found["jv"] == "javanese" and task.found["bbc"] == "toba_batak" and task.found["en"] == "english"
    assert task.found["su"] == "sundanese"
    test_en = task.examples("test", "en")
    linked = task.translations("test", "bbc", test_en)
    assert len(linked) == 400 and all(linked[ex.id].label == ex.label for ex in test_en)
    assert linked[test_en[0].id].id == f"nusax/bbc/test/{test_en[0].source_id}"
