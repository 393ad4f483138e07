"""Where a job's outputs live: a local directory or a URI (``s3://bucket/prefix``, ``gs://...``).

Ray Train already keeps checkpoints under a URI ``storage_path`` through ``pyarrow.fs``; this
module gives the files xlt writes itself (a run's ``config.yaml``, the co-training loop state,
results tables and plots) the same reach, so that a job resubmitted on another node continues
from what is on the store. It uses ``pyarrow.fs`` too, so one set of credentials and one
endpoint serve both: the standard AWS variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_DEFAULT_REGION``, and ``AWS_ENDPOINT_URL`` for an S3-compatible server such as MinIO or
moto), or the URI's own query (``s3://bucket/run?endpoint_override=host:port&scheme=http``).

Two context managers keep callers simple: ``fetched(path)`` hands a local copy of one file (or
``None`` when there is none), ``staged(directory)`` hands a local directory whose files are
copied to ``directory`` on leaving without error. For a local ``directory`` both are the place
itself, so local runs keep atomic renames and pay no copy.

``OutputSettings`` is the ``output`` section of every job's config: ``output.dir``, one key
across fine-tuning, pretraining, co-training and evaluation.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .config import check
from .resume import free


EXPORT_BACKENDS = ("torch", "onnx", "onnx-int8")  # xlt.models.onnx_backbone.BACKENDS


def is_uri(path: str | Path) -> bool:
    return "://" in str(path)


def join(base: str | Path, *parts: str) -> str:
    """``base/part/...`` for a local path (made absolute: Ray needs one) or a URI (query kept at the end)."""
    base = str(base)
    if not is_uri(base):
        return str(Path(base, *parts).resolve())
    root, question, query = base.partition("?")
    return "/".join([root.rstrip("/"), *parts]) + question + query


def split(path: str | Path) -> tuple[str, str]:
    """``(parent, name)`` of a local path or a URI (its query kept on the parent):
    ``s3://b/runs/x?scheme=http`` -> ``("s3://b/runs?scheme=http", "x")``; a bare name's parent is ``.``."""
    root, question, query = str(path).partition("?")
    parent, _, name = root.rstrip("/").rpartition("/")
    return (parent or ".") + question + query, name


@dataclass(frozen=True)
class OutputSettings:
    """Where a job writes: ``dir``, a local directory or a URI (``s3://bucket/path``), holding the
    run's ``config.yaml``, checkpoints and results. Running the same config with the same ``dir``
    again resumes it. ``num_to_keep``: checkpoints a training run keeps (the latest always).

    Ray Train names a run by a storage path and a name: they are ``dir``'s parent and last part
    (``storage_path``, ``name``)."""

    dir: str = free("results/run")
    num_to_keep: int = free(2)
    # A classifier exported at the end to <dir>/export (a co-training run's learners to
    # <dir>/export/<learner>, an evaluation's frozen-linear probes to <dir>/export/<model name>), for
    # sentence-transformers and Classifier.from_pretrained, and logged as the run's MLflow model
    # (xlt.export). Pretraining refuses it: every checkpoint of it holds its encoder, a local:
    # model, already; predict and retrieval refuse it too.
    export: bool = free(False)
    # What that MLflow model labels with: torch, or onnx / onnx-int8, its encoder written as ONNX beside the export
    # and run on onnxruntime (xlt.models.onnx_backbone; the extra xlt[onnx]).
    export_backend: str = free("torch")

    def __post_init__(self) -> None:
        check(self.export_backend in EXPORT_BACKENDS, "output.export_backend", self.export_backend,
              " or ".join(EXPORT_BACKENDS))
        parent, name = split(self.dir)
        bucket = parent.partition("?")[0].partition("://")[2]  # empty unless a URI's name sits under a bucket
        check(bool(name) and (bool(bucket) or not is_uri(self.dir)), "output.dir", self.dir,
              "a directory or a URI with a path under its bucket, e.g. results/xnli or s3://bucket/xnli")
        check(self.num_to_keep >= 1, "output.num_to_keep", self.num_to_keep, "an integer >= 1")

    @property
    def storage_path(self) -> str:
        return split(self.dir)[0]

    @property
    def name(self) -> str:
        return split(self.dir)[1]


def filesystem(path: str | Path):
    """(pyarrow filesystem, its path) of a URI or of a local path (made absolute)."""
    import pyarrow.fs

    if is_uri(path):
        return pyarrow.fs.FileSystem.from_uri(str(path))
    return pyarrow.fs.LocalFileSystem(), str(Path(path).resolve())


@contextlib.contextmanager
def fetched(path: str | Path) -> Iterator[Path | None]:
    """A local copy of file ``path`` for the duration of the block, or ``None`` if it does not exist."""
    if not is_uri(path):
        yield Path(path) if Path(path).is_file() else None
        return
    import pyarrow.fs

    fs, fs_path = filesystem(str(path))
    if fs.get_file_info(fs_path).type != pyarrow.fs.FileType.File:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="xlt-fetched-") as tmp:
        local = Path(tmp, fs_path.rsplit("/", 1)[-1])
        with fs.open_input_stream(fs_path, compression=None) as source:
            local.write_bytes(source.read())
        yield local


@contextlib.contextmanager
def staged(directory: str | Path) -> Iterator[Path]:
    """A local directory standing for ``directory``: files written there are in ``directory``
    after the block (copied up for a URI; nothing is copied if the block raises)."""
    if not is_uri(directory):
        Path(directory).mkdir(parents=True, exist_ok=True)
        yield Path(directory)
        return
    with tempfile.TemporaryDirectory(prefix="xlt-staged-") as tmp:
        yield Path(tmp)
        upload(tmp, str(directory))


def upload(local_dir: str | Path, uri: str) -> None:
    """Copy every file under ``local_dir`` to the same relative path under ``uri``."""
    fs, fs_path = filesystem(uri)
    for file in sorted(p for p in Path(local_dir).rglob("*") if p.is_file()):
        target = f"{fs_path.rstrip('/')}/{file.relative_to(local_dir).as_posix()}"
        fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(target, compression=None) as sink:  # the bytes as they are, the whole object or nothing
            sink.write(file.read_bytes())


def download(uri: str, local_dir: str | Path) -> Path:
    """Copy every file under directory ``uri`` to the same relative path under ``local_dir``."""
    import pyarrow.fs

    fs, fs_path = filesystem(uri)
    root = fs_path.rstrip("/")
    found = [f for f in fs.get_file_info(pyarrow.fs.FileSelector(root, recursive=True, allow_not_found=True))
             if f.type == pyarrow.fs.FileType.File]
    if not found:
        raise FileNotFoundError(f"{uri} holds no files")
    for info in found:
        target = Path(local_dir, info.path[len(root) + 1:])
        target.parent.mkdir(parents=True, exist_ok=True)
        with fs.open_input_stream(info.path, compression=None) as source:
            target.write_bytes(source.read())
    return Path(local_dir)


def put(local_dir: str | Path, directory: str | Path) -> None:
    """Copy every file under ``local_dir`` to the same relative path under ``directory`` (local or URI)."""
    if is_uri(directory):
        upload(local_dir, str(directory))
    else:
        shutil.copytree(local_dir, directory, dirs_exist_ok=True)


def remove(directory: str | Path) -> None:
    """Delete directory ``directory`` (local or URI) and everything under it; nothing if it does not exist."""
    if not is_uri(directory):
        shutil.rmtree(directory, ignore_errors=True)
        return
    import pyarrow.fs

    fs, fs_path = filesystem(str(directory))
    if fs.get_file_info(fs_path).type != pyarrow.fs.FileType.NotFound:
        fs.delete_dir(fs_path)


def names(directory: str | Path) -> list[str]:
    """The names of the entries directly under ``directory`` (local or URI); none if it does not exist."""
    if not is_uri(directory):
        return sorted(p.name for p in Path(directory).iterdir()) if Path(directory).is_dir() else []
    import pyarrow.fs

    fs, fs_path = filesystem(str(directory))
    return sorted(f.base_name for f in fs.get_file_info(pyarrow.fs.FileSelector(fs_path, allow_not_found=True)))


def read_text(path: str | Path) -> str | None:
    """The text of file ``path`` (local or URI), or ``None`` if it does not exist."""
    with fetched(path) as local:
        return None if local is None else local.read_text(encoding="utf-8")


def shown_path(path: str) -> str:
    """``path`` as a report or plan shows it: relative to the working directory where it lies under it (the checkout
    a job runs from), so that the same command shows the same text in any clone; a URI or a path elsewhere as is."""
    if is_uri(path) or not Path(path).is_absolute() or not Path(path).resolve().is_relative_to(Path.cwd()):
        return path
    return str(Path(path).resolve().relative_to(Path.cwd()))
