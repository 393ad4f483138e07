"""A run is a record: ``run.json`` in every job's output, what the job is, what it produced and where.

Every job writes one into its output directory (local or on a store), atomically, when it starts
(``running``), at the end of each phase and when it ends (``finished``, or ``failed`` with the error): the
job, the resolved config, its headline metrics, its outputs, and every classifier it produced, by name,
each as an *entry*: where it is and the spec that rebuilds it (written here, ``spec_entry``, ``export_entry``;
read by ``xlt.inference.entries``, which says every form). The jobs that use
a trained classifier (``jobs/predict.py``, ``jobs/export.py``) read this file and nothing else about a
run's layout; an entry's paths are relative to the record's directory, so a run moved or copied whole
stays usable.

The format is versioned (``VERSION``): a reader refuses a record newer than it knows, in one line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .report import command_line
from .storage import is_uri, join, read_text, staged

RECORD_FILE = "run.json"
FORMAT, VERSION = "xlt run", 1
RUNNING, FINISHED, FAILED = "running", "finished", "failed"
EXPORT_DIR = "export"  # where a run's exports go: <output.dir>/export (of several classifiers: export/<name>)


class MissingRecord(FileNotFoundError):
    """A directory that holds no run record: the one line says which command writes it."""


def write_record(directory: str | Path, job: str, config: Any, status: str, *,
                 metrics: Mapping[str, Any] | None = None, classifiers: Mapping[str, Mapping[str, Any]] | None = None,
                 default: str | None = None, outputs: Mapping[str, str] | None = None, phase: str | None = None,
                 error: str | None = None) -> str:
    """Write ``directory``'s ``run.json`` (replacing any, atomically) and return its path.

    ``config``: the resolved config (a dataclass or a mapping); ``classifiers``: entries by name; ``default``:
    the one a reader takes when none is named; ``outputs``: what else the job wrote, by name (kept relative to
    ``directory`` where inside it); ``phase``: the phase that just ended, while ``running``."""
    if status not in (RUNNING, FINISHED, FAILED):
        raise ValueError(f"a run's status is one of {RUNNING}, {FINISHED}, {FAILED}; got {status!r}")
    if default is not None and default not in (classifiers or {}):
        raise ValueError(f"the default classifier {default!r} is not one of the run's: {', '.join(classifiers or {})}")
    record = {
        "format": FORMAT, "version": VERSION, "job": job, "status": status,
        **({"phase": phase} if phase else {}), **({"error": error} if error else {}),
        "command": command_line(), "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config": dataclasses.asdict(config) if dataclasses.is_dataclass(config) else dict(config),
        "metrics": dict(metrics or {}), "classifiers": {name: dict(e) for name, e in (classifiers or {}).items()},
        "default": default, "outputs": {name: relative(directory, path) for name, path in (outputs or {}).items()},
    }
    text = json.dumps(record, indent=2, ensure_ascii=False, default=str)
    with staged(directory) as local:  # a URI gets the file when the block ends
        tmp = Path(local) / f".{RECORD_FILE}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, Path(local) / RECORD_FILE)  # never a half-written record
    return join(directory, RECORD_FILE)


def update_record(directory: str | Path, **changes: Any) -> str:
    """Rewrite ``directory``'s record with ``changes`` (``write_record``'s arguments); ``outputs`` and
    ``classifiers`` are added to the recorded ones."""
    record = read_record(directory)
    kept = {key: record[key] for key in ("metrics", "classifiers", "default", "outputs")}
    for key in ("outputs", "classifiers"):
        kept[key] = {**kept[key], **changes.pop(key, {})}
    status, config = changes.pop("status", record["status"]), changes.pop("config", record["config"])
    return write_record(directory, record["job"], config, status, **(kept | changes))


def read_record(directory: str | Path) -> dict[str, Any]:
    """The record in ``directory`` (local or URI); without one, a ``MissingRecord`` in one line naming the
    command that writes it (the directory's own, where its results say which)."""
    text = read_text(join(directory, RECORD_FILE))
    if text is None:
        raise MissingRecord(f"{directory} holds no {RECORD_FILE}, the record every xlt job writes into its output: "
                            f"{_writer(directory)}")
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{join(directory, RECORD_FILE)}:{e.lineno}: not JSON ({e.msg})") from e
    if record.get("format") != FORMAT:
        raise ValueError(f"{join(directory, RECORD_FILE)} is not an xlt run record (format {record.get('format')!r})")
    if record["version"] > VERSION:
        raise ValueError(f"{join(directory, RECORD_FILE)} is version {record['version']} of the run record; this xlt "
                         f"reads up to version {VERSION}: upgrade xlt")
    return record


def spec_entry(spec: Any, directory: str | Path, **about: Any) -> dict[str, Any]:
    """The entry of a classifier's spec (an ``xlt.inference.ClassifierSpec`` whose state is a file) in the record
    of ``directory``: its fields, the state's path relative to the record. ``about``: what it is (``what``),
    the iteration that left it, its scores (``metrics``)."""
    if not isinstance(spec.state, str):
        raise TypeError("a run records a classifier whose state is a file, not an object in Ray's store")
    fields = dataclasses.asdict(spec) | {"state": relative(directory, spec.state)}
    return {"spec": json.loads(json.dumps(fields)), **about}


def export_entry(export: str | Path, directory: str | Path, **about: Any) -> dict[str, Any]:
    """The entry of the export in ``export`` (``Classifier.save_pretrained``) in the record of ``directory``."""
    return {"export": relative(directory, export), **about}


def located(directory: str | Path, path: str) -> str:
    """``path`` of a record in ``directory``: relative to it unless absolute or a URI."""
    return path if is_uri(path) or os.path.isabs(path) else join(directory, path)


def relative(directory: str | Path, path: str | Path) -> str:
    """``path`` as a record in ``directory`` keeps it: relative where it lies inside."""
    if is_uri(path) or is_uri(directory):
        base, path = str(directory).rstrip("/") + "/", str(path)
        return path[len(base):] if path.startswith(base) else path
    inside = os.path.relpath(Path(path).resolve(), Path(directory).resolve())
    return str(path) if inside.startswith("..") else inside


def _writer(directory: str | Path) -> str:
    """The command that writes ``directory``'s record: the one its results name, else how to find it."""
    for name in ("results.json", "state.json"):
        text = read_text(join(directory, name))
        command = json.loads(text).get("command") if text and text.lstrip().startswith("{") else None
        if command:
            return f"run its own command again, which writes it without training: {command}"
    return ("run the job that wrote it again with the same config and output.dir (a finished run writes its record "
            "without training), or give a run's output directory or an export")
