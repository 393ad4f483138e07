"""Reading a text file as UTF-8 lines, with the line number of any bad byte.

Readers use this instead of ``open(..., encoding="utf-8")`` because the latter reports a
decoding error as a byte offset into the file, which nobody can act on; a line number can
be opened in an editor.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from xlt.data.errors import DataError


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 file, without line terminators.

    Lines are split on ``\\n`` only (``\\r\\n`` also works): ``str.splitlines`` would also
    split on U+2028, U+0085 and form feeds, which can occur inside a sentence and would
    shift every later line of a parallel file. A leading byte-order mark is dropped; a
    final newline does not produce an empty last line. Invalid UTF-8 raises ``DataError``
    with the line number and the offending byte.
    """
    path = Path(path)
    data = path.read_bytes()
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        # Decoding the whole file at once is fast; only on failure do we work out where.
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise DataError(
            path,
            line,
            f"not valid UTF-8: byte 0x{data[e.start]:02x} at byte {column} of the line; "
            "expected UTF-8 text (re-encode the file, e.g. `iconv -f latin1 -t utf-8`)",
        ) from e
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_aligned_lines(src_path: Path, tgt_path: Path) -> tuple[list[str], list[str]]:
    """The lines of two files where line i of one is the translation of line i of the other: refused
    (``DataError``) when their line counts differ or a line is empty, since one missing line would
    silently pair every later sentence with the wrong translation."""
    src_lines, tgt_lines = read_lines(src_path), read_lines(tgt_path)
    if len(src_lines) != len(tgt_lines):
        raise DataError(
            src_path,
            None,
            f"has {len(src_lines)} lines but {tgt_path} has {len(tgt_lines)}; "
            "line i of one must be the translation of line i of the other",
        )
    for path, lines, other in ((src_path, src_lines, tgt_path), (tgt_path, tgt_lines, src_path)):
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise DataError(path, number, f"empty line; expected the translation of line {number} of {other}")
    return src_lines, tgt_lines
