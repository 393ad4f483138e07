"""What a prediction reads: a corpus of the user's (``xlt.predict.corpus``: a file, a directory or a glob of files,
local or ``s3://``, compressed or not) or a task's split, as a stream of rows ``{id, lang, text, text_pair}`` checked one
by one as they pass, cut into shards (``shards``) for the writer. The driver holds one shard, never the corpus.

Each record is checked as ``xlt.data.rows`` checks a task's (a string text, not empty; the pair's second text; an id
column's value, if the row has one; the language of ``lang_field``, normalised as the task layer normalises
languages: ``deu_Latn`` is ``de``); a problem is a ``DataError`` naming the file and line (Parquet: row). A
missing column of a file with a header (CSV, TSV, Parquet) is one error for the file, whatever ``on_bad_row``
says. Rows without an id get ``<file>:<line>`` (the file's path below the corpus's root): stable across reruns and
unique by construction. Ids are checked unique within each shard (a repeated id in one shard is a bad row);
across a corpus of any size that check would hold every id, so it is not made: the ids a file gives are its own.

``on_bad_row``: ``fail`` (default) stops at the first bad row, before its shard is written; ``skip`` leaves it out
and keeps it, with its ``file:line`` and reason, in its shard's rejects (``xlt.predict.writer``). A file that cannot
be read at all (no header, malformed CSV quoting, not Parquet) stops the job either way.
A task's split goes through the task layer (``xlt.tasks``), with its field mapping; its gold labels, if any, are
not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..config import ConfigError, check
from ..data.errors import DataError
from ..data.rows import Cells, RowSource, check_columns
from ..tasks import Task, TaskConfig, load_task
from ..tasks.config import normalized
from .corpus import FORMATS, corpus_files, file_format, file_records

INPUT_COLUMNS = ("id", "lang", "text", "text_pair")
BAD_ROW_POLICIES = ("fail", "skip")
HEADED = ("csv", "tsv", "parquet")  # formats whose columns are the file's, not the row's


@dataclass(frozen=True)
class InputConfig:
    """Either ``path`` (a file, a directory or a glob, local or ``s3://``; ``format`` overrides the suffixes) or
    ``task`` and ``split``: setting one on the command line drops the other from the preset (``ALTERNATIVES``,
    ``xlt.config.drop_alternatives``). ``max_rows`` > 0 reads at most that many: a task's split as a seeded draw
    per language, as every n rows of a split (``xlt.tasks.Task.draw``), a corpus its first rows (a corpus to
    label, not a sample). ``on_bad_row``: the module docstring."""

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
    on_bad_row: str = "fail"

    def __post_init__(self) -> None:
        if (self.path is None) == (self.task is None):
            raise ConfigError(f"input.path and input.task: {'both are' if self.path else 'neither is'} set; expected "
                              "exactly one, a file (input.path) or a task's split (input.task)")
        if self.path is not None:
            check(self.lang_field is not None or self.lang is not None, "input.lang", self.lang,
                  "a language code for the whole file, or input.lang_field naming the column that holds each row's")
        check(self.max_rows >= 0, "input.max_rows", self.max_rows, "an integer >= 0 (0 = every row)")
        check(self.on_bad_row in BAD_ROW_POLICIES, "input.on_bad_row", self.on_bad_row, " or ".join(BAD_ROW_POLICIES))
        check(self.format is None or self.format in FORMATS, "input.format", self.format, ", ".join(FORMATS))


@dataclass(frozen=True)
class Rejected:
    """A bad row that ``on_bad_row: skip`` left out: where it is and why."""

    file: str
    position: int | None
    reason: str

    @classmethod
    def of(cls, error: DataError) -> "Rejected":
        return cls(error.path, error.line, error.message)


@dataclass(frozen=True)
class Shard:
    """``shard_rows`` consecutive rows of the input (the last shard fewer) and the bad rows skipped among them."""

    index: int
    rows: list[dict[str, Any]]
    rejected: list[Rejected] = field(default_factory=list)


@dataclass(frozen=True)
class Input:
    """The input, opened: whether its items are pairs, a description for messages, and ``shards(shard_rows)``,
    read as they are iterated."""

    cfg: InputConfig
    paired: bool
    name: str
    files: list[tuple[str, str]]
    task: Task | None = None

    @property
    def languages(self) -> tuple[str, ...] | None:
        """The languages of its rows where known before reading them (a task's, a file's ``input.lang``); ``None``
        where each row names its own (``input.lang_field``)."""
        if self.task is not None:
            return tuple(self.task.langs)
        return None if self.cfg.lang_field is not None else (normalized("input.lang", self.cfg.lang),)

    def rows(self) -> Iterator[dict[str, Any] | Rejected]:
        """Every row, checked (module docstring); a bad row raises, or comes as ``Rejected`` under ``skip``."""
        cfg, task = self.cfg, self.task
        if task is not None:
            for r in task.rows(cfg.split, task.langs, cfg.max_rows):
                yield {k: r[k] for k in INPUT_COLUMNS}
            return
        count = 0
        for file, name in self.files:
            for row in file_rows(cfg, file, name):
                if isinstance(row, DataError):
                    if cfg.on_bad_row == "fail":
                        raise row
                    yield Rejected.of(row)
                    continue
                yield row
                count += 1
                if count == cfg.max_rows:
                    return

    def shards(self, shard_rows: int) -> Iterator[Shard]:
        """The rows in shards of ``shard_rows``, each with the bad rows skipped since the previous shard; an id seen
        twice in one shard is a bad row."""
        rows: list[dict[str, Any]] = []
        rejected: list[Rejected] = []
        seen: dict[str, int] = {}
        index = 0
        for row in self.rows():
            if isinstance(row, Rejected):
                rejected.append(row)
                continue
            if row["id"] in seen:
                error = DataError(self.name, None, f"duplicate id {row['id']!r} in one shard (rows {seen[row['id']]} "
                                                   f"and {len(rows)} of shard {index}); ids must be unique")
                if self.cfg.on_bad_row == "fail":
                    raise error
                rejected.append(Rejected.of(error))
                continue
            seen[row["id"]] = len(rows)
            rows.append(row)
            if len(rows) == shard_rows:
                yield Shard(index, rows, rejected)
                rows, rejected, seen, index = [], [], {}, index + 1
        if rows or rejected or index == 0:
            yield Shard(index, rows, rejected)


def open_input(cfg: InputConfig, data_dir: str | None = None) -> Input:
    """The input, checked as far as it can be without reading its rows: a task (its split and languages), or the
    files of ``cfg.path`` (at least one, each of a known format) and ``cfg.lang``."""
    if cfg.task is not None:
        task = load_task(cfg.task, data_dir)
        task.check({cfg.split: task.langs})
        return Input(cfg, task.paired, f"task {cfg.task.name} split {cfg.split}", [], task)
    if cfg.lang_field is None:
        normalized("input.lang", cfg.lang)
    files = corpus_files(cfg.path)
    for file, _ in files:
        file_format(file, cfg.format)
    return Input(cfg, cfg.pair_field is not None, cfg.path, files)


def file_rows(cfg: InputConfig, file: str, name: str) -> Iterator[dict[str, Any] | DataError]:
    """The rows of one file of the corpus, checked; a bad row comes as the ``DataError`` saying why."""
    fmt = file_format(file, cfg.format)
    source = RowSource(file, unit="row" if fmt == "parquet" else "line")
    required = [f for f in (cfg.text_field, cfg.pair_field, cfg.lang_field) if f is not None]
    file_lang = normalized("input.lang", cfg.lang) if cfg.lang_field is None else None
    first = True
    for pos, record in file_records(file, fmt):
        if isinstance(record, DataError):
            yield record
            continue
        if first and fmt in HEADED:  # the file's columns: one error for the file, not a bad row
            check_columns(source, None if fmt == "parquet" else 1, list(record), required)
        first = False
        cells = Cells(source, pos, record)
        try:
            lang = file_lang if file_lang is not None else cells.lang(cfg.lang_field)
            text = cells.text(cfg.text_field)
            pair = cells.text(cfg.pair_field) if cfg.pair_field else None
            row_id = cells.optional_id(cfg.id_field) or f"{name}:{pos}"
        except DataError as e:
            yield e
            continue
        yield {"id": row_id, "lang": lang, "text": text, "text_pair": pair}
