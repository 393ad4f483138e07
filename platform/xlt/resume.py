"""What a resumed run may change, declared on each field of a job's config.

A run directory that holds a run is resumed by running its config again; a config that differs in
what the run learns would resume the old run's checkpoints under new settings, so the engine refuses
it (``xlt.engine.check_resumable``). Each config field says which it is, with the field function
that declares it (a ``dataclasses.field`` with ``metadata``):

- ``fixed``: what the run learns (the model, the data, the optimiser): a resumed run must keep it;
- ``free``: how or where it runs, or what it reports (threads, workers' CPUs, evaluation batch sizes,
  output): a resumed run may change it;
- ``length``: how long it trains (``optim.epochs``, co-training's ``iterations``): a resumed run may
  train on, except inside a section declared ``refitted``;
- ``refitted``: a section fitted anew, from its start, again and again in one run (co-training's
  learners): its ``length`` fields are fixed (a fit of more epochs is another fit).

A section (a field whose type is a config dataclass) declared ``fixed`` or ``free`` is so whole; an
undeclared section is classified by its own fields. ``resumable_keys`` derives a config's list of
dotted keys; ``unclassified`` names every field that declares nothing, which the tests keep empty.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable
from typing import Any

RESUME = "resume"  # the metadata key
KINDS = ("fixed", "free", "length", "refitted")


def _declared(kind: str, default: Any, factory: Any) -> Any:
    return dataclasses.field(default=default, default_factory=factory, metadata={RESUME: kind})


def fixed(default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING) -> Any:
    """A field of what the run learns: a resumed run must keep it."""
    return _declared("fixed", default, factory)


def free(default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING) -> Any:
    """A field of how or where the run runs, or what it reports: a resumed run may change it."""
    return _declared("free", default, factory)


def length(default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING) -> Any:
    """How long the run trains: a resumed run may train on (not inside a ``refitted`` section)."""
    return _declared("length", default, factory)


def refitted(default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING) -> Any:
    """A section fitted anew again and again in one run: its ``length`` fields are fixed."""
    return _declared("refitted", default, factory)


def section(hint: Any) -> type | None:
    """The config dataclass a field of type ``hint`` holds (``X`` or ``X | None``), else ``None``."""
    if dataclasses.is_dataclass(hint):
        return hint
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if dataclasses.is_dataclass(a)]
        return inner[0] if len(inner) == 1 else None
    return None


def resumable_keys(cls: type) -> tuple[str, ...]:
    """The dotted keys (and key prefixes) of config class ``cls`` that a resumed run may change."""
    return _declared_keys(cls, ("free", "length"))


def free_keys(cls: type) -> tuple[str, ...]:
    """The dotted keys (and key prefixes) of config class ``cls`` declared ``free``: how or where a run runs, or what
    it reports, never what it computes."""
    return _declared_keys(cls, ("free",))


def _declared_keys(cls: type, kinds: tuple[str, ...], prefix: str = "", refit: bool = False) -> tuple[str, ...]:
    """The keys of ``cls`` declared one of ``kinds`` (sections whole), ``length`` not inside a ``refitted`` section."""
    keys: list[str] = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        kind, nested, key = f.metadata.get(RESUME), section(hints[f.name]), prefix + f.name
        if kind in kinds and not (kind == "length" and refit):
            keys.append(key)
        elif nested is not None and kind in (None, "refitted"):
            keys.extend(_declared_keys(nested, kinds, key + ".", refit or kind == "refitted"))
    return tuple(keys)


def under(key: str, prefixes: Iterable[str]) -> bool:
    """Whether dotted ``key`` is one of ``prefixes`` or inside one of them."""
    return any(key == p or key.startswith(p + ".") for p in prefixes)


def unclassified(cls: type, prefix: str = "") -> list[str]:
    """The dotted keys of ``cls``'s fields that declare no resumability (an undeclared section's
    unclassified fields included)."""
    missing: list[str] = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        kind, nested, key = f.metadata.get(RESUME), section(hints[f.name]), prefix + f.name
        if kind is not None and kind not in KINDS:
            raise ValueError(f"{key}: resumability {kind!r} is not one of {', '.join(KINDS)}")
        if kind == "refitted" or (kind is None and nested is not None):
            missing.extend(unclassified(nested, key + ".") if nested is not None else [key])
        elif kind is None:
            missing.append(key)
    return missing


def changed_keys(old: Any, new: Any) -> list[str]:
    """Dotted keys whose values differ between two configs (nested dataclasses flattened)."""
    a, b = _flatten(dataclasses.asdict(old)), _flatten(dataclasses.asdict(new))
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def incompatible_changes(old: Any, new: Any, resumable: Iterable[str] | None = None) -> list[str]:
    """The changed keys that a resumed run may not change: all but ``resumable`` (dotted keys or
    their prefixes; ``resumable_keys`` of the config's class unless given)."""
    allowed = tuple(resumable_keys(type(new)) if resumable is None else resumable)
    return [k for k in changed_keys(old, new) if not under(k, allowed)]


def fingerprint(cfg: Any) -> str:
    """8 hex digits of what ``cfg`` computes (every key a resumed run must keep): two configs with the same
    fingerprint may share a run directory, which one continues where the other stopped."""
    import hashlib
    import json

    allowed = resumable_keys(type(cfg))
    kept = {k: v for k, v in _flatten(dataclasses.asdict(cfg)).items()
            if not under(k, allowed)}
    return hashlib.sha1(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out
