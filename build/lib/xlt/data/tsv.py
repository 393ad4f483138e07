"""Tab-separated files with a header, read strictly one record per line.

Fields are split on tabs with no quoting rules (``csv.QUOTE_NONE``): a stray quote in a
sentence must never swallow the following lines, as it would under CSV quoting. Files
written by pandas (SIB-200's among them) still CSV-quote any field that contains a
double quote (``"He said ""yes""."``); such fully quoted fields are unquoted, so the text
is the sentence that was written, not its escaped form. ``unquote_nested`` undoes quoting
applied more than once, for a task that says its release has it (``unquote: nested``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from xlt.data.errors import DataError
from xlt.data.textfile import read_lines


def unquote(field: str) -> str:
    """Undo CSV quoting of one field if, and only if, the whole field is CSV-quoted.

    ``"a ""b"" c"`` -> ``a "b" c``. A field that merely starts and ends with a quote but
    has an undoubled quote inside (``"a" and "b"``) was not written by a CSV writer and is
    returned unchanged.
    """
    if len(field) >= 2 and field[0] == '"' and field[-1] == '"':
        inner = field[1:-1]
        if '"' not in inner.replace('""', ""):
            return inner.replace('""', '"')
    return field


def unquote_nested(field: str) -> str:
    """``unquote`` until the field is no longer CSV-quoted as a whole: a release whose writer quoted
    a field that was already quoted (SIB-200's ``unquote: nested``, see ``configs/tasks/sib200.yaml``)."""
    while (unquoted := unquote(field)) != field:
        field = unquoted
    return field


def read_tsv(path: str | Path, columns: Sequence[str] | None = None) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """``(header, rows)`` where each row is ``(line_number, fields)``, fields unquoted.

    The first line is the header, unless ``columns`` names the fields of a file without one.
    Empty lines are skipped. A row whose number of fields differs from the header's raises
    ``DataError`` with its line number.
    """
    path = Path(path)
    lines = read_lines(path)
    if columns is not None:
        header, first = list(columns), 1
    elif not lines or not lines[0].strip():
        raise DataError(path, 1, "expected a header line of tab-separated column names, found an empty line")
    else:
        header, first = [unquote(name) for name in lines[0].split("\t")], 2
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        raise DataError(path, 1, f"duplicate column name(s) in the header: {', '.join(duplicates)}")
    rows: list[tuple[int, list[str]]] = []
    for number, line in enumerate(lines[first - 1:], start=first):
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DataError(
                path,
                number,
                f"expected {len(header)} tab-separated fields ({', '.join(header)}), found {len(fields)}; "
                "a text field may not contain a tab or a line break",
            )
        rows.append((number, [unquote(field) for field in fields]))
    return header, rows
