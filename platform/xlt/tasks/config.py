"""``TaskConfig``: a classification task as configuration — where its rows are and what they mean.

Every job's config holds a ``task:`` section (often ``task: {include: tasks/xnli.yaml}``, a preset
under ``configs/tasks/``; see ``xlt.config.read_yaml``). ``type`` picks the reader through the one
registry in ``xlt.tasks.registry`` (``files`` or ``hf``); the rest is the same for every type:

- ``path``: where the rows are. For ``files`` a path template over ``{data_dir}`` (``--data-dir`` /
  ``$XLT_DATA_DIR``), ``{lang}`` and ``{split}``: ``"{data_dir}/xnli/{lang}/{split}.tsv"``. Without
  ``{lang}`` the file holds every language and ``fields.lang`` names its language column. For ``hf``
  a hub name or a local ``save_to_disk`` directory (``{data_dir}`` / ``{lang}`` allowed), with
  ``hf_config`` (e.g. ``"{lang}"``) and ``data_files`` (for builders such as ``json``) as templates.
- ``fields``: which column holds ``text``, ``text_pair`` (sentence-pair tasks), ``label``, ``id``,
  ``lang`` and ``source_id``.
- ``labels``: the label set in the classifier head's order; empty = the distinct labels of the
  source language's train split, sorted. ``label_map`` renames raw values first (``0: negative``).
- ``source_lang`` / ``target_langs``: labelled training language and the languages transferred to
  (empty = every language found). ``languages`` maps a code to the name the data uses for it
  (``jv: javanese``); otherwise ``{lang}`` names found on disk are normalised
  (``xlt.text.languages``), so ``deu_Latn`` or ``deu`` folders are found for ``de``.
- ``splits``: the data's split name for each role (``train``: labelled source training data,
  ``dev``, ``test``: evaluation, ``pool``: unlabelled target text for co-training), with an
  optional row slice as in ``datasets`` (``validation[:2000]``), taken per language whether each
  language has a file of its own or one file holds them all.
- ``link``: how rows of different languages are translations of each other (``id``: the same
  ``fields.id``; ``line``: the same row position in the split's file; ``source_id``: the same
  ``fields.source_id`` value; ``none``). Translate-train and full-translation views read them.
- ``sample_seed``: the seed of every draw of n rows of a split (``data.max_examples``,
  ``data.labeled_fraction``): seeded random rows, stratified by label outside the pool and the
  same sentences in every language under ``link`` (``xlt.data.sample``). Another seed, another
  sample; slices written in ``splits`` stay ranges.
- ``drop``: text values that mark a row to skip (PAWS-X's untranslated ``NS`` placeholders).
- ``unknown_labels``: ``error`` (a labelled row whose label is not one of ``labels`` stops the job, naming its
  file and line) or ``drop`` (such rows are left out of the labelled splits and counted per split and language,
  ``Task.dropped``; a pool row only loses its gold label, never the row): a release whose target languages
  have a class the source lacks.
- ``unquote``: ``once`` (a text field CSV-quoted as a whole is unquoted once, as pandas wrote it) or
  ``nested`` (until it no longer is: a release that quoted some fields twice, as SIB-200's).
- ``header`` / ``columns``: a headerless TSV/CSV names its columns here. ``label_path``: texts and
  labels in two line-aligned files (the TweetEval release format), ``path`` then holding one text
  per line (``format: txt``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ..config import ConfigError, check
from ..text.languages import normalize_lang
from .registry import check_type

Role = Literal["train", "dev", "test", "pool"]
ROLES: tuple[str, ...] = ("train", "dev", "test", "pool")
Link = Literal["none", "id", "line", "source_id"]
Format = Literal["auto", "tsv", "csv", "jsonl", "parquet", "txt"]
Unquote = Literal["once", "nested"]
UnknownLabels = Literal["error", "drop"]
_SLICE = re.compile(r"^(?P<name>[^\[\]]+)(\[(?P<start>-?\d*):(?P<stop>-?\d*)\])?$")


def normalized(key: str, code: str) -> str:
    """``normalize_lang`` with the error naming the config ``key``."""
    try:
        return normalize_lang(code)
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from e


@dataclass(frozen=True)
class SplitRef:
    """A split name and an optional ``[start:stop]`` slice of its rows (``validation[:2000]``)."""

    name: str
    start: int | None = None
    stop: int | None = None

    @classmethod
    def parse(cls, key: str, text: str) -> SplitRef:
        match = _SLICE.match(text.strip())
        if not match:
            raise ConfigError(f"{key}={text!r} is not valid: expected a split name with an optional slice, "
                              "e.g. 'train' or 'validation[:2000]'")
        to_int = lambda s: int(s) if s not in (None, "") else None  # noqa: E731
        return cls(match["name"], to_int(match["start"]), to_int(match["stop"]))

    def __str__(self) -> str:
        if self.start is None and self.stop is None:
            return self.name
        return f"{self.name}[{'' if self.start is None else self.start}:{'' if self.stop is None else self.stop}]"


@dataclass(frozen=True)
class Fields:
    """Column names of the ``Example`` fields; ``None`` = absent."""

    text: str = "text"
    text_pair: str | None = None
    label: str = "label"
    id: str | None = None  # absent: ids are generated from the position
    lang: str | None = None  # a language column (one file or dataset for every language)
    source_id: str | None = None  # a column linking translations (``link: source_id``)


@dataclass(frozen=True)
class Splits:
    """The data's split name (with an optional slice) for each role."""

    train: str = "train"
    dev: str = "dev"
    test: str = "test"
    pool: str = "train"

    def ref(self, role: str) -> SplitRef:
        check(role in ROLES, "split role", role, "one of " + ", ".join(ROLES))
        return SplitRef.parse(f"task.splits.{role}", getattr(self, role))

    def __post_init__(self) -> None:
        for role in ROLES:
            self.ref(role)


@dataclass(frozen=True)
class TaskConfig:
    """A classification task (see the module docstring). ``name`` labels results and ids."""

    type: str = ""
    name: str = ""
    path: str = ""
    format: Format = "auto"
    header: bool = True
    columns: tuple[str, ...] = ()
    label_path: str | None = None
    hf_config: str | None = None
    data_files: str | None = None
    fields: Fields = field(default_factory=Fields)
    labels: tuple[str, ...] = ()
    label_map: dict[str, str] = field(default_factory=dict)
    source_lang: str = "en"
    target_langs: tuple[str, ...] = ()
    languages: dict[str, str] = field(default_factory=dict)
    splits: Splits = field(default_factory=Splits)
    link: Link = "none"
    sample_seed: int = 0
    drop: tuple[str, ...] = ()
    unquote: Unquote = "once"
    unknown_labels: UnknownLabels = "error"

    def __post_init__(self) -> None:
        check_type(self)
        check(bool(self.name) and "/" not in self.name, "task.name", self.name, "a non-empty name without '/'")
        object.__setattr__(self, "source_lang", normalized("task.source_lang", self.source_lang))
        targets = tuple(normalized("task.target_langs", code) for code in self.target_langs)
        object.__setattr__(self, "target_langs", targets)
        check(self.source_lang not in targets, "task.target_langs", list(targets),
              f"languages other than the source language {self.source_lang!r}")
        check(len(set(targets)) == len(targets), "task.target_langs", list(targets), "each language once")
        languages = {normalized(f"task.languages.{code}", str(code)): str(name)
                     for code, name in self.languages.items()}
        object.__setattr__(self, "languages", languages)
        object.__setattr__(self, "label_map", {str(k): str(v) for k, v in self.label_map.items()})
        check(not self.labels or len(set(self.labels)) == len(self.labels) >= 2, "task.labels", list(self.labels),
              "at least two distinct labels (or empty: the labels of the source train split)")
        check(self.link != "source_id" or self.fields.source_id is not None, "task.link", self.link,
              "'id', 'line' or 'none' unless fields.source_id names the linking column")
        check(self.link != "id" or self.fields.id is not None, "task.link", self.link,
              "'line', 'source_id' or 'none' unless fields.id names an id column")
        check(self.header or bool(self.columns), "task.columns", list(self.columns),
              "the column names of a file without a header line (header: false)")

    @property
    def paired(self) -> bool:
        """A sentence-pair task (``fields.text_pair`` set)."""
        return self.fields.text_pair is not None

    @property
    def langs(self) -> tuple[str, ...]:
        """The source language, then the targets."""
        return (self.source_lang, *self.target_langs)
