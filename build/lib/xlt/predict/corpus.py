"""A corpus as users have it, read as a stream: ``input.path`` is one file, a directory (every file under it), or a
glob (``corpus/*.jsonl.gz``), local or on an object store (``s3://bucket/corpus/``); each file JSON Lines, CSV, TSV,
Parquet or text (one text per line), by its suffix, compressed (``.gz``, ``.zst``: decompressed as it is read) or not.

Nothing holds a file: ``file_records`` yields its records one by one as the bytes arrive (Parquet a row group at a
time), each with its position (the 1-based line; Parquet's 0-based row), so that memory stays flat whatever the
corpus's size. A record that cannot be parsed (bad JSON, a wrong number of fields, bytes that are not UTF-8) comes
as a ``DataError`` in its place, for the caller's bad-row policy to stop at or skip; a file that cannot be read at
all (no header, not Parquet) raises. The formats are ``xlt.data.files``': the same rules, streamed.
"""

from __future__ import annotations

import codecs
import csv
import fnmatch
import io
import json
from collections.abc import Iterator

from ..data.errors import DataError
from ..data.tsv import unquote
from ..storage import filesystem, is_uri

FORMATS = ("jsonl", "csv", "tsv", "parquet", "txt")
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd"}
Record = tuple[int, "dict[str, Any] | DataError"]


def corpus_files(path: str) -> list[tuple[str, str]]:
    """``(file, name)`` of every file of ``path`` (a file, a directory, or a glob in its last parts), in name
    order; ``name`` is the file's path below the corpus's root (a file's own name), the stable part of its rows'
    generated ids. Files named ``_*`` or ``.*`` are not data (markers, hidden files), as Ray Data and pyarrow read."""
    import pyarrow.fs

    fs, root = filesystem(path)
    scheme = path[: path.index("://") + 3] if is_uri(path) else ""
    glob = any(ch in root for ch in "*?[")
    base = root.split("*")[0].split("?")[0].split("[")[0].rsplit("/", 1)[0] if glob else root
    info = fs.get_file_info(base)
    if info.type == pyarrow.fs.FileType.File and not glob:
        return [(scheme + root, root.rsplit("/", 1)[-1])]
    if info.type != pyarrow.fs.FileType.Directory:
        raise FileNotFoundError(f"input.path {path}: no such file or directory")
    found = []
    for entry in fs.get_file_info(pyarrow.fs.FileSelector(base, recursive=True)):
        name = entry.path[len(base):].lstrip("/")
        if entry.type != pyarrow.fs.FileType.File or any(part[:1] in "_." for part in name.split("/")):
            continue
        if glob and not fnmatch.fnmatchcase(entry.path, root):
            continue
        found.append((scheme + entry.path, name))
    if not found:
        raise FileNotFoundError(f"input.path {path}: no files to read" + (" match the pattern" if glob else ""))
    return sorted(found, key=lambda f: f[1])


def file_format(file: str, format: str | None = None) -> str:
    """The format of ``file``: ``format`` if given, else its suffix before any compression suffix."""
    name = file.rsplit("/", 1)[-1].lower()
    for suffix in COMPRESSIONS:
        name = name.removesuffix(suffix)
    suffix = format or (name.rsplit(".", 1)[-1] if "." in name else "")
    if suffix not in FORMATS:
        raise ValueError(f"{file}: unsupported file type {suffix!r}; expected one of "
                         f"{', '.join('.' + f for f in FORMATS)} (compressed as {', '.join(COMPRESSIONS)} or not), "
                         "or input.format")
    return suffix


def file_records(file: str, format: str) -> Iterator[Record]:
    """The records of ``file`` (module docstring): ``(position, cells or DataError)``."""
    if format == "parquet":
        yield from _parquet_records(file)
        return
    lines = _lines(file)
    if format == "txt":
        yield from ((n, line if isinstance(line, DataError) else {"text": line}) for n, line in lines)
    elif format == "jsonl":
        yield from _jsonl_records(file, lines)
    else:
        yield from _delimited_records(file, lines, format)


def _lines(file: str) -> Iterator[tuple[int, "str | DataError"]]:
    """The lines of a UTF-8 file, decompressed by its suffix, split on ``\\n`` only (as ``xlt.data.textfile``), a
    leading byte-order mark dropped; a line that is not UTF-8 comes as a ``DataError`` naming the byte."""
    fs, path = filesystem(file)
    compression = next((c for s, c in COMPRESSIONS.items() if file.lower().endswith(s)), None)
    with fs.open_input_stream(path, compression=compression) as stream:
        for number, raw in enumerate(io.BufferedReader(stream, buffer_size=1 << 20), start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            raw = raw.removesuffix(b"\n").removesuffix(b"\r")
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield number, DataError(file, number, f"not valid UTF-8: byte 0x{raw[e.start]:02x} at byte "
                                                      f"{e.start + 1} of the line; expected UTF-8 text")


def _jsonl_records(file: str, lines: Iterator[tuple[int, "str | DataError"]]) -> Iterator[Record]:
    for number, line in lines:
        if isinstance(line, DataError):
            yield number, line
            continue
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            yield number, DataError(file, number, f"not valid JSON ({e.msg} at column {e.colno}); expected one "
                                                  "JSON object per line")
            continue
        yield number, value if isinstance(value, dict) else DataError(
            file, number, f"expected a JSON object per line, got a JSON {type(value).__name__}")


def _delimited_records(file: str, lines: Iterator[tuple[int, "str | DataError"]], format: str) -> Iterator[Record]:
    """CSV (RFC 4180: a quoted field may span lines; the record's first line is its position) or TSV (one record a
    line, whole-field CSV quoting undone), header first."""
    header: list[str] | None = None
    kind = "comma" if format == "csv" else "tab"
    for number, cells in _split(file, lines, format):
        if isinstance(cells, DataError):
            if header is None:
                raise cells
            yield number, cells
            continue
        if header is None:
            header = cells
            duplicates = sorted({name for name in header if header.count(name) > 1})
            if duplicates:
                raise DataError(file, number, f"duplicate column name(s) in the header: {', '.join(duplicates)}")
            continue
        if len(cells) != len(header):
            yield number, DataError(file, number, f"expected {len(header)} {kind}-separated fields "
                                                  f"({', '.join(header)}), found {len(cells)}")
            continue
        yield number, dict(zip(header, cells))
    if header is None:
        raise DataError(file, 1, f"expected a header line of {kind}-separated column names, found an empty file")


def _split(file: str, lines: Iterator[tuple[int, "str | DataError"]],
           format: str) -> Iterator[tuple[int, "list[str] | DataError"]]:
    if format == "tsv":
        for number, line in lines:
            if isinstance(line, DataError) or line:
                yield number, line if isinstance(line, DataError) else [unquote(f) for f in line.split("\t")]
        return
    bad: list[DataError] = []

    def decoded() -> Iterator[str]:
        for number, line in lines:
            if isinstance(line, DataError):
                bad.append(line)
                line = ""  # an empty line in its place: csv skips it, the error is yielded next
            yield line + "\n"

    reader = csv.reader(decoded(), strict=True)
    start = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise DataError(file, start, f"malformed CSV ({e}); quote fields that contain commas, quotes or line "
                                         "breaks") from e
        number, start = start, reader.line_num + 1
        while bad:
            yield bad[0].line, bad.pop(0)
        if cells:
            yield number, cells


def _parquet_records(file: str) -> Iterator[Record]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    fs, path = filesystem(file)
    try:
        with fs.open_input_file(path) as handle:
            parquet = pq.ParquetFile(handle)
            position = 0
            for batch in parquet.iter_batches(batch_size=8192):
                for cells in batch.to_pylist():
                    yield position, cells
                    position += 1
    except (pa.ArrowException, OSError) as e:
        raise DataError(file, None, f"not a readable Parquet file: {e}") from e
