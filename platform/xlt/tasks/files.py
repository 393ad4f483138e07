"""The ``files`` task type: TSV / CSV / JSONL / Parquet / text files found through a path template.

``path`` is a template over ``{data_dir}``, ``{lang}`` and ``{split}``; every file is read by
``xlt.data.files.load_rows`` and its rows validated by ``xlt.data.rows.examples_from_rows``, so a
bad row is reported as ``file:line: what was found, what was expected``. Before validation the
rows of one split and language are sliced, linked, filtered and relabelled as ``xlt.tasks.rows``
says (a slice is per language in every layout).
"""

from __future__ import annotations

import glob
import re
import string
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.errors import DataError
from ..data.files import load_rows
from ..data.rows import Row
from ..data.records import Example
from ..data.textfile import read_lines
from ..data.tsv import unquote_nested
from ..text.languages import normalize_lang
from .rows import to_examples

if TYPE_CHECKING:
    from .config import SplitRef, TaskConfig


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def check_files(cfg: TaskConfig) -> None:
    """The keys a ``files`` task needs, with the placeholders it understands."""
    from ..config import check

    check(bool(cfg.path), "task.path", cfg.path, 'a path template, e.g. "{data_dir}/xnli/{lang}/{split}.tsv"')
    for key, template in (("task.path", cfg.path), ("task.label_path", cfg.label_path or "")):
        unknown = placeholders(template) - {"data_dir", "lang", "split"}
        check(not unknown, key, template, "placeholders among {data_dir}, {lang}, {split} only")
    check("lang" in placeholders(cfg.path) or cfg.fields.lang is not None, "task.fields.lang", cfg.fields.lang,
          "the language column of a path without {lang}")
    check(cfg.label_path is None or cfg.fields.text_pair is None, "task.label_path", cfg.label_path,
          "unset for a sentence-pair task (two line-aligned files hold one text and one label per line)")


def fill(template: str, data_dir: Path | None, **values: str) -> str:
    if "data_dir" in placeholders(template):
        from ..data.paths import resolve_data_dir

        data_dir = data_dir or resolve_data_dir(None)
    return template.format(data_dir=data_dir, **values)


def found_languages(cfg: TaskConfig, data_dir: Path | None) -> dict[str, str]:
    """Canonical code -> the name ``{lang}`` takes on disk, for every language the template finds
    (``languages_on_disk``). A path without ``{lang}`` (a language column) finds languages only when
    its rows are read: the configured ones count.
    """
    if "lang" not in placeholders(cfg.path):
        return {lang: lang for lang in (*cfg.langs, *cfg.languages)}
    return languages_on_disk(cfg.path, data_dir, cfg.languages)


def languages_on_disk(template: str, data_dir: Path | None, languages: dict[str, str]) -> dict[str, str]:
    """Canonical code -> the name ``{lang}`` takes in the paths of ``template`` that exist.

    Names mapped in ``languages`` (code -> name) are used as they are; any other name found on disk
    counts if it normalises to a language code (``deu_Latn``, ``deu``, ``de``).
    """
    marks = {"lang": "\0L", "split": "\0S"}
    pattern = fill(template, data_dir, **marks)
    regex = re.compile("^" + re.escape(pattern).replace(re.escape(marks["lang"]), "(?P<lang>[^/]+)", 1)
                       .replace(re.escape(marks["lang"]), "(?P=lang)").replace(re.escape(marks["split"]), "[^/]+") + "$")
    by_name = {name: code for code, name in languages.items()}
    found: dict[str, str] = {}
    for path in sorted(glob.glob(glob.escape(pattern).replace(marks["lang"], "*").replace(marks["split"], "*"))):
        match = regex.match(path)
        if match is None:
            continue
        name = match["lang"]
        code = by_name.get(name)
        if code is None:
            try:
                code = normalize_lang(name)
            except ValueError:
                continue
        found.setdefault(code, name)
    return found


def read_split(cfg: TaskConfig, data_dir: Path | None, split: SplitRef, lang: str, name: str,
               labels: Sequence[str] | None, labelled: bool, dropped: dict[str, int] | None = None) -> list[Example]:
    """The examples of language ``lang`` (named ``name`` on disk) in ``split``.

    ``labelled=False`` reads a label when the column is there (kept as gold for scoring) and
    accepts rows without one.
    """
    path = Path(fill(cfg.path, data_dir, lang=name, split=split.name))
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: task {cfg.name!r}, language {lang!r}, split "
                                f"{split.name!r} (template {cfg.path!r})")
    fmt = None if cfg.format == "auto" else cfg.format
    source, header_pos, columns, rows = load_rows(path, format=fmt, columns=None if cfg.header else cfg.columns)
    if cfg.unquote == "nested":
        texts = [f for f in (cfg.fields.text, cfg.fields.text_pair) if f is not None]
        rows = [(pos, {**row, **{f: unquote_nested(row[f]) for f in texts if isinstance(row.get(f), str)}})
                for pos, row in rows]
    if cfg.label_path is not None:
        rows, joined = _with_label_file(cfg, data_dir, name, split.name, path, rows, required=labelled)
        columns = [*(columns or []), *([cfg.fields.label] if joined else [])]
    return to_examples(cfg, source, header_pos, columns, rows, split, lang, labels, labelled,
                       one_language="lang" in placeholders(cfg.path), dropped=dropped)


def _with_label_file(cfg: TaskConfig, data_dir: Path | None, name: str, split: str, text_path: Path,
                     rows: list[tuple[int, Row]], required: bool) -> tuple[list[tuple[int, Row]], bool]:
    """Join the labels of ``label_path`` (one per line) to the text rows, line by line; the flag says
    whether a label file was there (an unlabelled pool may have none)."""
    assert cfg.label_path is not None
    label_path = Path(fill(cfg.label_path, data_dir, lang=name, split=split))
    if not label_path.is_file():
        if not required:
            return rows, False
        raise FileNotFoundError(f"{label_path} does not exist: the labels of {text_path} (task.label_path "
                                f"{cfg.label_path!r})")
    labels = read_lines(label_path)
    if len(labels) != len(rows) or any(pos != i + 1 for i, (pos, _) in enumerate(rows)):
        raise DataError(label_path, None, f"{len(labels)} lines, but {text_path} has {len(read_lines(text_path))}; "
                                          "texts and labels must be line-aligned, one per line")
    out = []
    for (pos, row), label in zip(rows, labels):
        if not label.strip():
            raise DataError(label_path, pos, "empty label; expected one label per line")
        out.append((pos, {**row, cfg.fields.label: label.strip()}))
    return out, True


def read(cfg: TaskConfig, data_dir: Path | None, role: str, lang: str, labels: Sequence[str] | None,
         found: dict[str, str], dropped: dict[str, int] | None = None) -> list[Example]:
    """The ``files`` reader of the registry: ``role``'s split of ``lang`` (``dropped``: ``to_examples``')."""
    return read_split(cfg, data_dir, cfg.splits.ref(role), lang, found.get(lang, lang), labels,
                      labelled=role != "pool", dropped=dropped)
