"""The ``hf`` task type: a Hugging Face ``datasets`` dataset, from the hub or from local files.

``path`` is a hub name (users with network), a local ``save_to_disk`` directory, or a builder
name such as ``json`` / ``csv`` with ``data_files`` (a template over ``{data_dir}``, ``{lang}``,
``{split}``). A multilingual dataset is one configuration per language (``hf_config: "{lang}"``,
as XNLI on the hub), a path per language (``{lang}`` in ``path``), or one table with a language
column (``fields.lang``). Integer ``ClassLabel`` labels become their names; ``label_map`` renames
any other raw value. Rows then go through the same pipeline as files (``xlt.tasks.rows``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.hf import class_label_rows, class_names_of, load_split
from ..data.records import Example
from ..data.rows import RowSource
from .files import fill, placeholders
from .rows import to_examples

if TYPE_CHECKING:
    from .config import TaskConfig


def check_hf(cfg: TaskConfig) -> None:
    from ..config import check

    check(bool(cfg.path), "task.path", cfg.path, "a dataset name, a save_to_disk directory, or a builder "
                                                 "such as json with task.data_files")
    per_language = any("lang" in placeholders(t or "") for t in (cfg.path, cfg.hf_config, cfg.data_files))
    check(per_language or cfg.fields.lang is not None, "task.fields.lang", cfg.fields.lang,
          "the language column of a dataset without {lang} in path, hf_config or data_files")
    check(cfg.label_path is None, "task.label_path", cfg.label_path, "unset for an hf task (files only)")
    check(cfg.format == "auto" and cfg.header and not cfg.columns and cfg.unquote == "once", "task.format",
          cfg.format, "the defaults of format/header/columns/unquote for an hf task (they describe files)")


def found_languages(cfg: TaskConfig, data_dir: Path | None) -> dict[str, str]:
    """The configured languages (a dataset on the hub cannot be listed offline)."""
    return {lang: cfg.languages.get(lang, lang) for lang in (*cfg.langs, *cfg.languages)}


def read(cfg: TaskConfig, data_dir: Path | None, role: str, lang: str, labels: Sequence[str] | None,
         found: dict[str, str], dropped: dict[str, int] | None = None) -> list[Example]:
    """The ``hf`` reader of the registry: ``role``'s split of ``lang`` (``dropped``: ``to_examples``')."""
    split = cfg.splits.ref(role)
    name = found.get(lang, lang)
    values = {"lang": name, "split": split.name}
    path = fill(cfg.path, data_dir, **values)
    config = fill(cfg.hf_config, data_dir, **values) if cfg.hf_config else None
    files = fill(cfg.data_files, data_dir, **values) if cfg.data_files else None
    ds = load_split(path, split.name, config, files).with_format(None)
    source = RowSource(f"{path}[{split.name}]" + (f" ({config})" if config else ""), unit="row")
    label = cfg.fields.label if cfg.fields.label in ds.column_names else None
    rows = list(class_label_rows(ds, label, class_names_of(ds, label), source))
    one_language = cfg.fields.lang is None or any("lang" in placeholders(t or "")
                                                  for t in (cfg.path, cfg.hf_config, cfg.data_files))
    return to_examples(cfg, source, None, ds.column_names, rows, split, lang, labels, labelled=role != "pool",
                       one_language=one_language, dropped=dropped)
