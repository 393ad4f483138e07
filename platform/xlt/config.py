"""Typed, frozen configuration loaded from YAML with ``--set key=value`` overrides.

Every job describes its settings as a frozen dataclass. ``load_config(Cls, path, overrides)``
reads a YAML mapping, applies dotted overrides (``--set model.pooling=cls``), and builds the
dataclass tree, checking every value against its type hint. Unknown keys and bad values fail
with a message naming the key, the value received and what is valid: a typo in a sweep
should never silently fall back to a default.

Dataclasses add their own range checks in ``__post_init__`` (``check`` helps); the job passes
``asdict(cfg)`` to Ray and the worker rebuilds ``Cls(**config)`` with ``from_dict``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration value or key that is not valid; the message says which and why."""


def check(condition: bool, key: str, value: Any, expected: str) -> None:
    """Raise ``ConfigError`` naming ``key``, ``value`` and the ``expected`` range unless true."""
    if not condition:
        raise ConfigError(f"{key}={value!r} is not valid: expected {expected}")


def from_dict(cls: type[T], data: dict[str, Any] | None, prefix: str = "") -> T:
    """Build dataclass ``cls`` from a (nested) mapping, validating keys and value types."""
    data = dict(data or {})
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(prefix + k for k in unknown)} for {cls.__name__}; "
            f"valid keys: {', '.join(prefix + k for k in fields)}"
        )
    required = [name for name, f in fields.items()
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [name for name in required if name not in data]
    if missing:
        hint = " (e.g. task: {include: tasks/sib200.yaml}; presets in configs/tasks/)" if "task" in missing else ""
        raise ConfigError(f"missing key{'s' if len(missing) > 1 else ''} {', '.join(prefix + m for m in missing)} "
                          f"for {cls.__name__}{hint}")
    kwargs = {name: _coerce(hints[name], value, prefix + name) for name, value in data.items()}
    try:
        return cls(**kwargs)
    except TypeError as e:  # a required field without a default was not given
        raise ConfigError(f"{cls.__name__}: {e}") from e
    except ConfigError as e:  # a nested dataclass checks its own field names: say where it sits
        placed = _placed(str(e), prefix)
        if placed != str(e):
            raise ConfigError(placed) from e
        raise
    except ValueError as e:
        raise ConfigError(f"{prefix.rstrip('.') or cls.__name__}: {e}") from e


def _placed(message: str, prefix: str) -> str:
    """``message``, a nested dataclass's check, with its key placed under ``prefix``.

    A dataclass's checks name its keys either relative to it (``BitextConfig``: ``name``) or from
    the place it usually has (``TaskConfig``: ``task.path``, as in a fine-tuning config). That place
    is the last part of ``prefix`` wherever the dataclass sits, so it is replaced, not repeated: a
    task nested in a bitext source reads ``data.sources[0].task.path``, not ``...task.task.path``.
    """
    if not prefix or message.startswith(prefix):
        return message
    usual = prefix.rstrip(".").rsplit(".", 1)[-1] + "."
    return prefix + message.removeprefix(usual)


def _coerce(hint: Any, value: Any, key: str) -> Any:
    origin, args = get_origin(hint), get_args(hint)
    if dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return value
        check(isinstance(value, dict), key, value, f"a mapping of {hint.__name__} fields")
        return from_dict(hint, value, prefix=key + ".")
    if origin is Literal:
        check(value in args, key, value, "one of " + ", ".join(repr(a) for a in args))
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(arg, value, key)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError("; ".join(errors))
    if origin in (tuple, list):
        check(isinstance(value, (list, tuple)), key, value, "a list")
        item = args[0] if args else Any
        return tuple(_coerce(item, v, f"{key}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        check(isinstance(value, dict), key, value, "a mapping")
        return dict(value)
    if hint is Any:
        return value
    if hint is bool:
        check(isinstance(value, bool), key, value, "true or false")
        return value
    if hint is int:
        check(isinstance(value, int) and not isinstance(value, bool), key, value, "an integer")
        return value
    if hint is float:
        if isinstance(value, str):  # PyYAML (YAML 1.1) reads "1e-4" as a string: it wants "1.0e-4"
            value = _parse_float(value)
        check(isinstance(value, (int, float)) and not isinstance(value, bool), key, value, "a number")
        return float(value)
    if hint is str:
        check(isinstance(value, str), key, value, "a string")
        return value
    raise ConfigError(f"{key}: unsupported type {hint!r} in the config schema")


def _parse_float(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def apply_overrides(data: dict[str, Any], overrides: typing.Iterable[str]) -> dict[str, Any]:
    """Apply ``key.sub=value`` strings to a nested mapping; values are parsed as YAML scalars.
    A list item is addressed by its index, as errors name it: ``objectives[0].weight=2``. An
    ``include`` in a value is a path relative to the current directory
    (``--set 'task={include: configs/tasks/xnli.yaml}'``)."""
    data = _plain(data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {item!r} is not of the form key=value (e.g. model.pooling=cls)")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as e:
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise ConfigError(f"override {item!r}: the value {raw!r} is not valid YAML ({problem}); quote it, "
                              "e.g. --set 'key=[de, fr]' or --set \"key='a: b'\"") from e
        set_value(data, key.strip(), value, item)
    return _expand_includes(data, Path.cwd() / "--set")


_INDEXED = re.compile(r"(?P<name>.+)\[(?P<index>\d+)\]")


def set_value(data: dict[str, Any], key: str, value: Any, item: str | None = None) -> None:
    """Set dotted ``key`` (sections are created; ``name[i]`` is item i of an existing list) to
    ``value`` in ``data``, in place. ``item`` is the override quoted in errors (default: ``key``)."""
    item = item or key
    node: Any = data
    parts = key.split(".")
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        indexed = _INDEXED.fullmatch(part)
        name = indexed["name"] if indexed else part
        if last and not indexed:
            node[name] = value
            return
        child = node.setdefault(name, {} if not indexed else [])
        if indexed:
            if not isinstance(child, list):
                raise ConfigError(f"override {item!r}: {name!r} is not a list")
            index = int(indexed["index"])
            if index >= len(child):
                raise ConfigError(f"override {item!r}: {name} has {len(child)} item(s), so no index {index}")
            if last:
                child[index] = value
                return
            node, child = child, child[index]
        if not isinstance(child, dict):
            raise ConfigError(f"override {item!r}: {part!r} is a value, not a section")
        node = child



def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; an empty file is an empty mapping.

    A nested mapping with an ``include: FILE`` key is that file's mapping (a path relative to the
    including file) with the other keys merged over it: ``task: {include: tasks/xnli.yaml,
    target_langs: [de]}``, also as an item of a list (``sources: [{include: bitext/tatoeba.yaml}]``).
    The result holds no ``include`` keys, so a saved config is whole.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ConfigError(f"config file {path} does not exist") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys at the top level, got {type(data).__name__}")
    return _expand_includes(data, path)


def _expand_includes(data: dict[str, Any], path: Path, prefix: str = "") -> dict[str, Any]:
    """``data`` with every ``include`` in it read and merged; errors name keys from ``data``'s root
    (``data.sources[1].include``), after ``prefix``."""
    return {key: _expanded(value, prefix + key, path) for key, value in data.items()}


def _expanded(value: Any, key: str, path: Path) -> Any:
    """``value`` with every ``include`` in it, or in the mappings of a list, read and merged."""
    if isinstance(value, list):
        return [_expanded(item, f"{key}[{i}]", path) for i, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    value = _expand_includes(value, path, key + ".")
    if "include" not in value:
        return value
    target = path.parent / str(value.pop("include"))
    if not target.is_file():
        where = "--set" if path.name == "--set" else str(path)
        raise ConfigError(f"{where}: {key}.include names {target}, which does not exist")
    return _merge(read_yaml(target), value)


SMOKE_OUTPUT = "results/smoke"


def load_config(cls: type[T], path: str | Path | None = None, overrides: typing.Iterable[str] = (),
                smoke: str | Path | None = None) -> T:
    """YAML preset (optional), then the ``smoke`` preset merged over it (if given), then
    ``--set`` overrides -> validated frozen dataclass ``cls``.

    Every job's ``--smoke`` comes through here: with a ``smoke`` preset, ``output.dir`` becomes
    ``results/smoke/<the preset's file stem>``, so that the smoke runs of two presets never share
    (and refuse to resume) one directory; an ``output.dir`` given with ``--set`` still wins."""
    data = merge_presets(path, smoke)
    if smoke:
        data["output"] = {**data.get("output", {}), "dir": smoke_output(path)}
    overrides = list(overrides)
    return with_own_output(cls, data, overrides, from_dict(cls, apply_overrides(drop_alternatives(cls, data, overrides),
                                                                                overrides)))


def with_own_output(cls: type[T], preset: dict[str, Any], overrides: typing.Sequence[str], cfg: T) -> T:
    """``cfg`` writing where no command of another config writes: where ``overrides`` change what the run computes
    (a key a resumed run must keep, ``xlt.resume``) and leave ``output.dir`` as the ``preset`` mapping has it, its
    directory is the preset's followed by what they change (``results/cotrain/demo-policy-agreement`` for ``--set
    selection.policy=agreement``), so that a preset's commands never resume, refuse or overwrite each other's
    output. Overrides that change only how or where it runs (threads, workers, evaluation batch size) or how
    long it trains keep the directory: the same run, continued. A preset that is no whole config on its own
    (``jobs/predict.py``'s) keeps it too."""
    from .resume import incompatible_changes

    output, keys = getattr(cfg, "output", None), [item.partition("=")[0].strip() for item in overrides]
    if not isinstance(getattr(output, "dir", None), str) or any(key in ("output", "output.dir") for key in keys):
        return cfg
    try:
        plain = from_dict(cls, _plain(preset))
    except (ConfigError, TypeError, ValueError):
        return cfg
    changed = incompatible_changes(plain, cfg)
    words = [_slug(item) for item, key in zip(overrides, keys)
             if any(c == key or c.startswith(key + ".") or key.startswith(c + ".") for c in changed)]
    suffix = "-".join(word for word in words if word)
    if not suffix:
        return cfg
    if len(suffix) > MAX_SUFFIX:  # long values (lists, mappings) keep their start and a digest of the whole
        import hashlib

        suffix = suffix[:MAX_SUFFIX - 9].rstrip("-") + "-" + hashlib.sha1(suffix.encode()).hexdigest()[:8]
    directory = f"{output.dir.rstrip('/')}-{suffix}"
    logging.getLogger(__name__).info(f"output.dir: {directory} (the preset's, named after what --set changes in it; "
                                     "--set output.dir=... chooses another)")
    return dataclasses.replace(cfg, output=dataclasses.replace(output, dir=directory))


MAX_SUFFIX = 48  # characters of a derived output directory's suffix (with_own_output)


def _slug(item: str) -> str:
    """An override as words of a directory name: its key's last part and its value, an included file by its stem
    (``task={include: configs/tasks/xnli.yaml}`` -> ``task-xnli``)."""
    key, _, value = item.partition("=")
    value = re.sub(r"include:\s*([^,}\]]+)", lambda m: Path(m.group(1).strip().strip("'\"")).stem, value)
    return re.sub(r"[^a-z0-9.]+", "-", f"{key.strip().rsplit('.', 1)[-1]} {value}".lower()).strip("-.")


def drop_alternatives(cls: type, data: dict[str, Any], overrides: typing.Sequence[str]) -> dict[str, Any]:
    """``data`` (a preset's mapping) without the keys that an override's key replaces: a dataclass names
    keys of which one is given in ``ALTERNATIVES`` (``InputConfig``: ``path`` or ``task``), so
    ``--set input.path=corpus.jsonl`` over a preset with ``input.task`` reads the file, the task gone,
    unless the overrides set it too."""
    data = _plain(data)
    keys = {item.partition("=")[0].strip() for item in overrides}
    for key in keys:
        *sections, leaf = key.split(".")
        owner, node = _section_class(cls, sections), data
        for part in sections:
            node = node.get(part) if isinstance(node, dict) else None
        if owner is None or not isinstance(node, dict):
            continue
        for group in getattr(owner, "ALTERNATIVES", ()):
            if leaf in group:
                for other in group:
                    if other != leaf and ".".join([*sections, other]) not in keys:
                        node.pop(other, None)
    return data


def _section_class(cls: type, sections: typing.Sequence[str]) -> type | None:
    """The dataclass at dotted ``sections`` of config class ``cls`` (``None`` where a part is not one)."""
    for part in sections:
        if not dataclasses.is_dataclass(cls) or _INDEXED.fullmatch(part):
            return None
        hint = get_type_hints(cls).get(part)
        optional = get_origin(hint) in (Union, types.UnionType)
        args = [a for a in get_args(hint) if a is not type(None)] if optional else [hint]
        cls = args[0] if len(args) == 1 else None
    return cls if dataclasses.is_dataclass(cls) else None


def smoke_output(preset: str | Path | None) -> str:
    """Where a smoke run of ``preset`` writes: ``results/smoke/<stem>``."""
    return f"{SMOKE_OUTPUT}/{Path(preset).stem if preset else 'default'}"


def save_config(cfg: Any, path: str | Path) -> None:
    """Write ``cfg`` as YAML that ``load_config`` reads back to an equal object."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(config_text(cfg), encoding="utf-8")


def config_text(cfg: Any) -> str:
    """``cfg`` as the YAML ``save_config`` writes."""
    return yaml.safe_dump(_plain(dataclasses.asdict(cfg)), sort_keys=False)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def merge_presets(path: str | Path | None, smoke: str | Path | None = None) -> dict[str, Any]:
    """The mapping of YAML preset ``path`` (empty if None) with preset ``smoke`` merged over it
    key by key (nested mappings merge; anything else replaces)."""
    data = read_yaml(path) if path else {}
    return _merge(data, read_yaml(smoke)) if smoke else data
