"""``BitextConfig``: parallel text as configuration, read by generic readers into ``ParallelPair`` lists.

A bitext source is to pairs what a ``TaskConfig`` is to labelled rows: ``type`` picks a reader, and a
dataset's file names and quirks live in its preset under ``configs/bitext/``, included where a
config lists sources (``sources: [{include: bitext/tatoeba.yaml, langs: [de, fr]}]``; see
``xlt.config.read_yaml``). The types:

- ``lines``: two line-aligned text files per language, ``src_path`` in the language and
  ``tgt_path`` in ``tgt_lang`` (templates over ``{data_dir}`` and ``{lang}``): line i of one is the
  translation of line i of the other, so their line counts must agree and no line may be empty
  (Tatoeba, NTREX-128). Ids are ``<name>/<lang>/<line index>``.
- ``files``: a file of pairs (JSONL, TSV, CSV, Parquet; ``path`` a template over ``{data_dir}``) with
  ``src_field`` / ``tgt_field`` columns; languages fixed by ``src_lang`` / ``tgt_lang`` or per row.
- ``hf``: a Hugging Face dataset ``path`` (hub name or ``save_to_disk`` directory), ``split``
  (default ``train``) and ``config_name``; fields as for files, dotted for dict columns
  (``translation.en``).
- ``task``: the rows of a task (``task:``, e.g. ``{include: ../tasks/sib200.yaml}``) in each language
  joined with the pivot language's rows on the task's ``link``: ``src`` the pivot's ``text``, ``tgt``
  the language's. Only the task's ``train`` role is read: its dev and test splits are evaluation
  data, never pairs to train on. Ids are the target row's, with ``<pivot>-<lang>`` for its language
  (``sib200/en-de/train/431``).

``langs`` (``lines``, ``task``) are the languages to read; empty = every language found. They are
found by normalising the names ``{lang}`` takes on disk (``deu``, ``cmn``, ``deu_Latn``), or through
``languages`` (code -> the name on disk: NTREX-128's ``zh: zho-CN``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..config import check
from ..data.files import read_parallel
from ..data.hf import read_hf_parallel
from ..data.records import ParallelPair
from ..data.textfile import read_aligned_lines
from ..text.languages import normalized_langs
from .config import TaskConfig
from .files import fill, languages_on_disk, placeholders
from .task import load_task

BitextType = Literal["lines", "files", "hf", "task"]

# The keys each type reads: any other key set is refused, so that a key meant for another type
# (a split of a task source, langs of a file of pairs) never goes silently unread.
TYPE_KEYS: dict[str, tuple[str, ...]] = {
    "lines": ("name", "langs", "languages", "src_path", "tgt_path", "tgt_lang"),
    "files": ("name", "path", "src_field", "tgt_field", "src_lang", "tgt_lang"),
    "hf": ("name", "path", "split", "config_name", "src_field", "tgt_field", "src_lang", "tgt_lang"),
    "task": ("name", "langs", "task"),
}


@dataclass(frozen=True)
class BitextConfig:
    """One source of parallel pairs (see the module docstring). ``name`` labels ids and errors."""

    type: BitextType
    name: str = ""
    langs: tuple[str, ...] = ()
    languages: dict[str, str] = field(default_factory=dict)
    src_path: str = ""
    tgt_path: str = ""
    path: str = ""
    split: str | None = None
    config_name: str | None = None
    src_field: str = "src"
    tgt_field: str = "tgt"
    src_lang: str | None = None
    tgt_lang: str | None = None
    task: TaskConfig | None = None

    def __post_init__(self) -> None:
        check(self.type in TYPE_KEYS, "type", self.type, "one of " + ", ".join(TYPE_KEYS))
        for f in dataclasses.fields(self):
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if f.name not in ("type", *TYPE_KEYS[self.type]) and getattr(self, f.name) != default:
                why = ("a task source contributes its train split only, never dev or test"
                       if (self.type, f.name) == ("task", "split")
                       else f"a {self.type} source reads {', '.join(TYPE_KEYS[self.type])}")
                check(False, f.name, getattr(self, f.name), f"unset: {why}")
        langs = normalized_langs("langs", self.langs)
        check(len(set(langs)) == len(langs), "langs", list(self.langs), "each language once")
        object.__setattr__(self, "langs", langs)
        object.__setattr__(self, "languages", {normalized_langs("languages", [str(code)])[0]: str(name)
                                               for code, name in self.languages.items()})
        for key in ("src_lang", "tgt_lang"):
            if getattr(self, key) is not None:
                object.__setattr__(self, key, normalized_langs(key, [getattr(self, key)])[0])
        if self.type == "lines":
            check(bool(self.name) and "/" not in self.name, "name", self.name, "a non-empty name without '/'")
            for key in ("src_path", "tgt_path"):
                template = getattr(self, key)
                check(bool(template) and placeholders(template) <= {"data_dir", "lang"}, key, template,
                      "a path template with placeholders among {data_dir}, {lang} only")
            check("lang" in placeholders(self.src_path), "src_path", self.src_path,
                  "a template with {lang}: one file per language")
            check(self.tgt_lang is not None and self.tgt_lang not in self.langs, "tgt_lang", self.tgt_lang,
                  "the language of tgt_path, paired with each of langs and not among them")
        elif self.type == "task":
            check(self.task is not None, "task", self.task, "a task whose rows are joined, e.g. "
                                                            "{include: ../tasks/sib200.yaml}")
            assert self.task is not None
            check(self.task.link != "none", "task.link", self.task.link,
                  "id, line or source_id: a task source joins the languages' rows on the task's link")
        else:
            check(bool(self.path) and placeholders(self.path) <= {"data_dir"}, "path", self.path,
                  "a file path or dataset name, with no placeholder but {data_dir}")


def bitext_languages(cfg: BitextConfig, data_dir: Path | None) -> dict[str, str]:
    """Canonical code -> the name the data uses for it, for every language a ``lines`` or ``task``
    source finds (``{}`` for files and datasets, whose languages are in their rows)."""
    if cfg.type == "lines":
        return languages_on_disk(cfg.src_path, data_dir, cfg.languages)
    if cfg.type == "task":
        assert cfg.task is not None
        return load_task(dataclasses.replace(cfg.task, target_langs=()), data_dir).found
    return {}


def read_bitext(cfg: BitextConfig, data_dir: str | Path | None = None, pivot: str = "en") -> list[ParallelPair]:
    """Every pair of ``cfg``, language by language in ``langs`` order, each in file order. ``pivot``
    is the language a ``task`` source joins the others with."""
    return READERS[cfg.type](cfg, Path(data_dir) if data_dir else None, pivot)


def _read_lines(cfg: BitextConfig, data_dir: Path | None, pivot: str) -> list[ParallelPair]:
    assert cfg.tgt_lang is not None  # BitextConfig checks it for this type
    found = languages_on_disk(cfg.src_path, data_dir, cfg.languages)
    langs = cfg.langs or tuple(sorted(lang for lang in found if lang != cfg.tgt_lang))
    missing = [lang for lang in langs if lang not in found]
    if missing:
        raise FileNotFoundError(f"bitext {cfg.name!r}: no data for {', '.join(missing)} under {cfg.src_path}; "
                                f"languages found: {', '.join(sorted(found)) or 'none'} (map a name on disk to a "
                                "code with languages)")
    pairs: list[ParallelPair] = []
    for lang in langs:
        src_path, tgt_path = (Path(fill(t, data_dir, lang=found[lang])) for t in (cfg.src_path, cfg.tgt_path))
        for path in (src_path, tgt_path):
            if not path.is_file():
                raise FileNotFoundError(f"{path} does not exist: bitext {cfg.name!r}, language {lang!r} (templates "
                                        f"{cfg.src_path!r}, {cfg.tgt_path!r})")
        src_lines, tgt_lines = read_aligned_lines(src_path, tgt_path)
        pairs += [ParallelPair(f"{cfg.name}/{lang}/{i}", src, tgt, lang, cfg.tgt_lang)
                  for i, (src, tgt) in enumerate(zip(src_lines, tgt_lines, strict=True))]
    return pairs


def _read_task(cfg: BitextConfig, data_dir: Path | None, pivot: str) -> list[ParallelPair]:
    assert cfg.task is not None  # BitextConfig checks it for this type
    # load_task checks that every language is there (none given: every one found but the pivot)
    task = load_task(dataclasses.replace(cfg.task, source_lang=pivot, target_langs=cfg.langs), data_dir)
    by_link = {ex.source_id: ex for ex in task.examples("train", pivot)}
    pairs: list[ParallelPair] = []
    for lang in task.target_langs:
        prefix = f"{task.config.name}/{lang}/"  # a task's ids are <task>/<lang>/<split>/<row>
        for ex in task.examples("train", lang):
            src = by_link.get(ex.source_id)
            if src is not None:
                pairs.append(ParallelPair(f"{task.config.name}/{pivot}-{lang}/{ex.id.removeprefix(prefix)}",
                                          src.text, ex.text, src.lang, ex.lang))
    return pairs


def _read_files(cfg: BitextConfig, data_dir: Path | None, pivot: str) -> list[ParallelPair]:
    return read_parallel(fill(cfg.path, data_dir), src_field=cfg.src_field, tgt_field=cfg.tgt_field,
                         src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang)


def _read_hf(cfg: BitextConfig, data_dir: Path | None, pivot: str) -> list[ParallelPair]:
    return read_hf_parallel(fill(cfg.path, data_dir), cfg.split or "train", config_name=cfg.config_name,
                            src_field=cfg.src_field, tgt_field=cfg.tgt_field, src_lang=cfg.src_lang,
                            tgt_lang=cfg.tgt_lang)


# Every bitext type by its ``type:`` name.
READERS: dict[str, Callable[[BitextConfig, Path | None, str], list[ParallelPair]]] = {
    "lines": _read_lines, "files": _read_files, "hf": _read_hf, "task": _read_task,
}
