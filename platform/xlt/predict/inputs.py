"""What a prediction reads: a file of the user's (text, CSV, TSV, JSONL, Parquet) or a task's split,
as rows ``{id, lang, text, text_pair}``, validated before Ray starts.

A file goes through the data layer's loader and checks (``xlt.data.files.load_rows``,
``xlt.data.rows.examples_from_rows``): a missing column, an empty text or pair side, or a duplicate id
is one error naming the file and line (or Parquet row). Rows without an id column get ``<file
stem>/<lang>/<n>``. Each row's language is ``lang_field``'s cell, or ``lang`` for the whole file, normalised
as the task layer normalises languages (``xlt.text.languages``: ``deu_Latn`` is ``de``; a tag that names no
language is an error at its line).
A task's split goes through the task layer (``xlt.tasks``), with its field mapping; its gold
labels, if any, are not read.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..config import ConfigError, check
from ..data.files import load_rows
from ..data.rows import ExampleFields, check_columns, examples_from_rows
from ..tasks import TaskConfig, load_task
from ..tasks.config import normalized
from ..tasks.task import row
from ..text.languages import normalize_lang

INPUT_COLUMNS = ("id", "lang", "text", "text_pair")


@dataclass(frozen=True)
class InputConfig:
    """Either ``path`` (a file; ``format`` overrides its suffix) or ``task`` and ``split``: setting one
    on the command line drops the other from the preset (``ALTERNATIVES``, ``xlt.config.drop_alternatives``).
    ``max_rows`` > 0 reads at most that many: a task's split as a seeded draw per language, as every
    n rows of a split (``xlt.tasks.Task.draw``), a file its first rows (a corpus to label, not a sample)."""

    ALTERNATIVES: ClassVar[tuple[tuple[str, ...], ...]] = (("path", "task"),)

    path: str | None = None
    format: str | None = None
    text_field: str = "text"
    pair_field: str | None = None
    id_field: str = "id"
    lang_field: str | None = None
    lang: str | None = None
    task: TaskConfig | None = None
    split: str = "test"
    max_rows: int = 0

    def __post_init__(self) -> None:
        if (self.path is None) == (self.task is None):
            raise ConfigError(f"input.path and input.task: {'both are' if self.path else 'neither is'} set; expected "
                              "exactly one, a file (input.path) or a task's split (input.task)")
        if self.path is not None:
            check(self.lang_field is not None or self.lang is not None, "input.lang", self.lang,
                  "a language code for the whole file, or input.lang_field naming the column that holds each row's")
        check(self.max_rows >= 0, "input.max_rows", self.max_rows, "an integer >= 0 (0 = every row)")


def read_input(cfg: InputConfig, data_dir: str | None = None) -> tuple[list[dict[str, Any]], bool]:
    """The rows to predict (``INPUT_COLUMNS``) and whether they are pairs."""
    if cfg.task is not None:
        task = load_task(cfg.task, data_dir)
        rows = [{k: r[k] for k in INPUT_COLUMNS} for r in task.rows(cfg.split, task.langs, cfg.max_rows)]
        return rows, task.paired
    return read_file(cfg), cfg.pair_field is not None


def read_file(cfg: InputConfig) -> list[dict[str, Any]]:
    source, header, columns, loaded = load_rows(Path(cfg.path), format=cfg.format)
    required = [f for f in (cfg.text_field, cfg.pair_field, cfg.lang_field) if f is not None]
    if columns is not None:
        check_columns(source, header, columns, required)
    by_lang: dict[str, list] = defaultdict(list)
    file_lang = normalized("input.lang", cfg.lang) if cfg.lang_field is None else None
    for pos, cells in loaded[: cfg.max_rows or None]:
        if cfg.lang_field is None:
            by_lang[file_lang].append((pos, cells))
            continue
        check_columns(source, pos, cells, [cfg.lang_field])
        lang = str(cells[cfg.lang_field] or "").strip()
        if not lang:
            raise source.error(pos, f"empty {cfg.lang_field!r}: every row needs its language")
        try:  # as the task layer reads languages: deu, deu_Latn and de are one language
            by_lang[normalize_lang(lang)].append((pos, cells))
        except ValueError as e:
            raise source.error(pos, f"{cfg.lang_field!r}: {e}") from e
    if not by_lang:
        raise ConfigError(f"input.path {cfg.path}: no rows to predict")
    fields = ExampleFields(text=cfg.text_field, label=None, id=cfg.id_field, text_pair=cfg.pair_field)
    stem = Path(cfg.path).stem
    rows, seen = [], {}
    for lang, group in by_lang.items():
        for example in examples_from_rows(group, source, fields, lang=lang, id_prefix=f"{stem}/{lang}"):
            if example.id in seen:  # ids are checked within a language; across them here
                raise ConfigError(f"{cfg.path}: duplicate id {example.id!r} in languages {seen[example.id]} and {lang}")
            seen[example.id] = lang
            as_row = row(example)
            rows.append({k: as_row[k] for k in INPUT_COLUMNS})
    return rows
