"""SIB-200 topic classification, in its published layout ``sib200/<flores>/<split>.tsv``.

Each ``<split>.tsv`` has the header ``index_id  category  text``. ``index_id`` is the
FLORES-200 sentence id, the same across languages, so it becomes ``Example.source_id``:
rows sharing it are human translations of one another (usable as translations or
parallel data; use the train split only for anything that is trained).

The files were written by pandas, which CSV-quotes every field containing a double quote
(318 fields in the ten languages here); ``read_tsv`` undoes that. 26 of them (25 German,
1 French) were quoted twice (a sentence with an inner quotation then starts with three
quotes and doubles each inner quote twice); their English translations carry no outer
quotes, so the text is unquoted until it is no longer a quoted field. Other artefacts of
the release are kept as published (a stray ``x`` after the final full stop of some German
sentences, leading spaces, zero-width characters): they are the benchmark's text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from xlt.data.errors import DataError
from xlt.data.paths import dataset_dir
from xlt.data.records import Example
from xlt.data.textfile import read_lines
from xlt.data.tsv import read_tsv, unquote
from xlt.text.languages import code_among, normalize_lang

Split = Literal["train", "dev", "test"]
SPLITS: tuple[str, ...] = get_args(Split)
COLUMNS = ("index_id", "category", "text")


def sib200_languages(root: str | Path) -> list[str]:
    """Canonical codes of the languages present (directories with a ``train.tsv``), sorted."""
    base = dataset_dir(root, "sib200")
    codes = []
    for d in sorted(base.iterdir()):
        if (d / "train.tsv").is_file():
            try:
                codes.append(normalize_lang(d.name))
            except ValueError as e:
                raise ValueError(f"{d}: directory name is not a known FLORES-200 code: {e}") from e
    return sorted(codes)


def sib200_labels(root: str | Path) -> list[str]:
    """The topic labels in ``labels.txt`` order.

    The release ships one ``labels.txt`` per language directory; they must agree, since a
    classifier trained on one language is evaluated on the others with the same label set.
    """
    base = dataset_dir(root, "sib200")
    files = sorted(base.glob("*/labels.txt"))
    if not files:
        raise FileNotFoundError(f"no labels.txt in any language directory of {base}; expected <lang>/labels.txt")
    first = _read_labels(files[0])
    for other in files[1:]:
        if _read_labels(other) != first:
            raise DataError(other, None, f"labels differ from {files[0]}; every language must use the same labels")
    return first


def _read_labels(path: Path) -> list[str]:
    labels: list[str] = []
    for number, line in enumerate(read_lines(path), start=1):
        label = line.strip()
        if not label:
            raise DataError(path, number, "empty line; expected one label per line")
        if label in labels:
            raise DataError(path, number, f"label {label!r} is listed twice")
        labels.append(label)
    return labels


def _unquote_fully(text: str) -> str:
    # ``read_tsv`` removed one level of CSV quoting; remove any further levels.
    while (unquoted := unquote(text)) != text:
        text = unquoted
    return text


def read_sib200(root: str | Path, lang: str, split: Split) -> list[Example]:
    """Read ``root/sib200/<flores code of lang>/<split>.tsv`` as labeled examples.

    ``lang`` is any code ``normalize_lang`` accepts (``de``, ``deu``, ``deu_Latn``). Ids are
    ``sib200/<flores>/<split>/<index_id>``. Malformed rows (wrong number of fields, unknown
    category, empty text, duplicate index_id, invalid UTF-8) raise ``DataError`` naming the
    file and line.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown SIB-200 split {split!r}; valid splits: {', '.join(SPLITS)}")
    base = dataset_dir(root, "sib200")
    folders = sorted(d.name for d in base.iterdir() if d.is_dir())
    try:
        flores = code_among(lang, folders, "directories")
    except LookupError as e:
        raise FileNotFoundError(f"{base}: {e}; languages present: {', '.join(folders) or 'none'}") from e
    folder_lang = normalize_lang(flores)  # the directory's language, not the caller's spelling
    path = base / flores / f"{split}.tsv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist (language {lang!r} -> {flores})")
    labels = sib200_labels(base)

    header, rows = read_tsv(path)
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise DataError(
            path,
            1,
            f"missing column(s) {', '.join(missing)} in the header; "
            f"expected {', '.join(COLUMNS)}, found {', '.join(header)}",
        )
    i_id, i_label, i_text = (header.index(c) for c in COLUMNS)

    examples: list[Example] = []
    first_line: dict[str, int] = {}
    for number, fields in rows:
        index_id, label, text = fields[i_id].strip(), fields[i_label], _unquote_fully(fields[i_text])
        if not (index_id.isascii() and index_id.isdigit()):
            raise DataError(path, number, f"expected an integer index_id, got {index_id!r}")
        if index_id in first_line:
            raise DataError(path, number, f"duplicate index_id {index_id} (first at line {first_line[index_id]})")
        first_line[index_id] = number
        if label not in labels:
            raise DataError(path, number, f"unknown category {label!r}; valid: {', '.join(labels)}")
        if not text.strip():
            raise DataError(path, number, "empty text; expected a sentence in the text column")
        examples.append(
            Example(
                id=f"sib200/{flores}/{split}/{index_id}",
                text=text,
                lang=folder_lang,
                label=label,
                source_id=index_id,
            )
        )
    return examples
