"""Search-space files (``search_spaces/*.yaml``) -> a Ray Tune space or an Optuna define-by-run space.

Wang et al. (2022) tune their alignment term by hand: λ "that we tune for each downstream task" (§3.3),
λ ∈ {1, 10} against the similarity measure (§5.2, Table 4), τ ∈ {0.1, 0.3, 1.0} (§5.3,
Table 5), r_c and the view counts t_f / t_p / t_c per task (§4.1). A space file states such a
sweep once, as data; ``to_tune`` is the one function that turns it into what the searcher needs.

Schema (every key but ``job`` and ``params`` optional)::

    job: finetune                 # finetune | cotrain: the trainable, and the config the keys address
    preset: ../configs/finetune_<task>.yaml      # the job's YAML preset, relative to this file
    sweep_only: [optim.epochs=2]  # --set-style overrides for every trial, NOT in the exported best config
    metric: val/acc/avg_target    # what the searcher and the scheduler optimise (a val/ metric: dev)
    mode: max                     # max | min
    num_samples: 20               # trials (jobs/sweep.py --num-samples replaces it)
    seed: 0                       # the searcher's seed
    params:
      objectives[0].params.temperature: {loguniform: [0.05, 2.0]}
      optim.lr: {loguniform: [1.0e-5, 1.0e-4]}
      data.augment.t_c: {choice: [0, 1]}
      data.augment.r_c:
        uniform: [0.1, 0.9]
        when: {data.augment.t_c: 1}

Parameter types (one per entry):

- ``loguniform: [low, high]``: a float, uniform in log space; 0 < low < high
- ``uniform: [low, high]``: a float; low < high
- ``int: [low, high]``: an integer, both ends included; low < high
- ``choice: [v, ...]``: one of ≥ 2 distinct scalars (string, number, boolean, null), sampled
- ``grid: [v, ...]``: every value in turn, ``num_samples`` times each (Tune's grid search);
  random searcher only: Optuna samples, it does not enumerate

Keys are dotted config paths, ``name[i]`` for list item i (``xlt.config.apply_overrides``
spells them the same way, and so do config errors), so a trial is exactly a set of overrides on
the preset. ``when: {key: value | [values]}`` makes an entry conditional on a ``choice`` /
``grid`` entry listed above it: the entry is sampled and applied only when that entry took one
of the values; otherwise the preset's value stands. Optuna gets the conditions as a
define-by-run function (an inactive entry is never suggested, so TPE models each entry only on
the trials where it mattered); Tune's random searcher samples every entry and
``active_values`` drops the inactive ones, so both searchers hand a trial the same kind of set.

Errors name the file, the key and the reason (``SpaceError``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..config import ConfigError, read_yaml
from ..metrics import VAL_AVG_TARGET_ACC

if TYPE_CHECKING:
    import optuna

Job = Literal["finetune", "cotrain"]
ParamType = Literal["loguniform", "uniform", "int", "choice", "grid"]
Searcher = Literal["optuna", "random"]
JOB_NAMES: tuple[str, ...] = get_args(Job)
PARAM_TYPES: tuple[str, ...] = get_args(ParamType)
SEARCHERS: tuple[str, ...] = get_args(Searcher)
TOP_LEVEL_KEYS: tuple[str, ...] = ("job", "preset", "sweep_only", "metric", "mode", "num_samples", "seed", "params")
DEFAULT_METRIC = VAL_AVG_TARGET_ACC
# A dotted path of identifiers, each optionally indexed: objectives[0].params.temperature
KEY_PATTERN = re.compile(r"[A-Za-z_]\w*(\[\d+\])?(\.[A-Za-z_]\w*(\[\d+\])?)*")
Scalar = str | int | float | bool | None


class SpaceError(ConfigError):
    """An invalid search-space file; the message names the file, the key and the reason."""


@dataclass(frozen=True)
class Param:
    """One entry of ``params``: ``args`` is ``(low, high)`` for ranges, the values for choice / grid;
    ``when`` holds ``(key, allowed values)`` pairs that must all hold."""

    key: str
    type: ParamType
    args: tuple[Any, ...]
    when: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()


@dataclass(frozen=True)
class SearchSpace:
    """A parsed space file; ``source`` is the file it came from (for messages)."""

    source: str
    job: Job
    params: tuple[Param, ...]
    preset: str | None = None
    sweep_only: tuple[str, ...] = ()
    metric: str = DEFAULT_METRIC
    mode: Literal["max", "min"] = "max"
    num_samples: int = 10
    seed: int = 0


def _fail(source: str, key: str, reason: str) -> SpaceError:
    return SpaceError(f"{source}: {key}: {reason}")


def load_space(path: str | Path) -> SearchSpace:
    """Read and validate a space file; ``preset`` is resolved relative to the file's directory."""
    path = Path(path)
    space = parse_space(read_yaml(path), source=str(path))
    if space.preset is None:
        return space
    preset = (path.parent / space.preset).resolve()
    if not preset.is_file():
        raise _fail(str(path), "preset", f"{space.preset!r} is not a file (resolved to {preset}; "
                                         "the path is relative to the space file)")
    return dataclasses.replace(space, preset=str(preset))


def parse_space(data: Mapping[str, Any], source: str = "<space>") -> SearchSpace:
    """Validate the top level of a space file (see the module docstring) and its ``params``."""
    unknown = sorted(set(data) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise _fail(source, ", ".join(unknown), f"unknown key; valid keys: {', '.join(TOP_LEVEL_KEYS)}")
    job = data.get("job")
    if job not in JOB_NAMES:
        raise _fail(source, "job", f"got {job!r}; expected one of {', '.join(JOB_NAMES)} (the job whose config the "
                                   "keys address)")
    metric, mode = data.get("metric", DEFAULT_METRIC), data.get("mode", "max")
    if not isinstance(metric, str) or not metric.startswith("val/"):
        raise _fail(source, "metric", f"got {metric!r}; expected a val/ metric such as {DEFAULT_METRIC} "
                                      "(a sweep selects on dev, never on test)")
    if mode not in ("max", "min"):
        raise _fail(source, "mode", f"got {mode!r}; expected max or min")
    for key in ("num_samples", "seed"):
        value = data.get(key, 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < (1 if key == "num_samples" else 0):
            raise _fail(source, key, f"got {value!r}; expected an integer >= {1 if key == 'num_samples' else 0}")
    preset = data.get("preset")
    if preset is not None and not isinstance(preset, str):
        raise _fail(source, "preset", f"got {preset!r}; expected a path relative to the space file")
    sweep_only = data.get("sweep_only", [])
    if not isinstance(sweep_only, list) or not all(isinstance(s, str) and "=" in s for s in sweep_only):
        raise _fail(source, "sweep_only", f"got {sweep_only!r}; expected a list of key=value strings")
    return SearchSpace(source=source, job=job, params=parse_params(data.get("params"), source), preset=preset,
                       sweep_only=tuple(sweep_only), metric=metric, mode=mode,
                       num_samples=data.get("num_samples", SearchSpace.num_samples),
                       seed=data.get("seed", SearchSpace.seed))


def parse_params(entries: Any, source: str = "<space>") -> tuple[Param, ...]:
    """The ``params`` mapping -> ``Param``s in file order (conditions refer to earlier entries)."""
    if not isinstance(entries, Mapping) or not entries:
        raise _fail(source, "params", f"got {entries!r}; expected a non-empty mapping of config key -> "
                                      f"{{type: arguments}} with type one of {', '.join(PARAM_TYPES)}")
    params: list[Param] = []
    for key, entry in entries.items():
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            raise _fail(source, str(key), "not a dotted config key (e.g. optim.lr, objectives[0].weight)")
        params.append(_parse_param(key, entry, params, source))
    return tuple(params)


def _parse_param(key: str, entry: Any, earlier: Sequence[Param], source: str) -> Param:
    if not isinstance(entry, Mapping):
        raise _fail(source, key, f"got {entry!r}; expected a mapping such as {{loguniform: [1.0e-5, 1.0e-4]}}")
    types = [t for t in entry if t in PARAM_TYPES]
    unknown = sorted(str(k) for k in entry if k not in PARAM_TYPES and k != "when")
    if unknown or len(types) != 1:
        raise _fail(source, key, f"got keys {', '.join(map(str, entry)) or 'none'}; expected exactly one type "
                                 f"({', '.join(PARAM_TYPES)}) and optionally when")
    kind: ParamType = types[0]
    args = _range(key, kind, entry[kind], source) if kind in ("loguniform", "uniform", "int") \
        else _values(key, kind, entry[kind], source)
    return Param(key, kind, args, _conditions(key, entry.get("when"), earlier, source))


def _number(value: Any) -> Any:
    # PyYAML (YAML 1.1) reads 1e-5 as a string (it wants 1.0e-5): accept what float() accepts.
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _range(key: str, kind: ParamType, value: Any, source: str) -> tuple[Any, ...]:
    if not isinstance(value, list) or len(value) != 2:
        raise _fail(source, key, f"{kind}: got {value!r}; expected [low, high]")
    low, high = (_number(v) for v in value)
    if kind == "int":
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)):
            raise _fail(source, key, f"int: got {value!r}; expected two integers [low, high] (both included)")
    elif not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (low, high)):
        raise _fail(source, key, f"{kind}: got {value!r}; expected two finite numbers [low, high]")
    if not low < high:
        raise _fail(source, key, f"{kind}: low {low!r} is not below high {high!r} (a constant belongs in the "
                                 "preset or in sweep_only)")
    if kind == "loguniform" and low <= 0:
        raise _fail(source, key, f"loguniform: low {low!r} must be > 0 (log scale)")
    return (low, high) if kind == "int" else (float(low), float(high))


def _values(key: str, kind: ParamType, value: Any, source: str) -> tuple[Scalar, ...]:
    if not isinstance(value, list) or len(value) < 2:
        raise _fail(source, key, f"{kind}: got {value!r}; expected a list of at least two values")
    bad = [v for v in value if not isinstance(v, (str, int, float, bool)) and v is not None]
    if bad:
        raise _fail(source, key, f"{kind}: {bad[0]!r} is not a scalar; values are strings, numbers, booleans or "
                                 "null (Optuna's categorical values)")
    if len({(type(v), v) for v in value}) != len(value):
        raise _fail(source, key, f"{kind}: {value!r} repeats a value")
    return tuple(value)


def _conditions(key: str, when: Any, earlier: Sequence[Param], source: str) -> tuple[tuple[str, tuple[Scalar, ...]], ...]:
    if when is None:
        return ()
    if not isinstance(when, Mapping) or not when:
        raise _fail(source, key, f"when: got {when!r}; expected a mapping {{earlier key: value or [values]}}")
    by_key = {p.key: p for p in earlier}
    out = []
    for other, allowed in when.items():
        param = by_key.get(other)
        if param is None or param.type not in ("choice", "grid"):
            listed = [p.key for p in earlier if p.type in ("choice", "grid")]
            raise _fail(source, key, f"when: {other!r} is not a choice or grid entry listed above {key}; "
                                     f"those are: {', '.join(listed) or 'none'}")
        allowed = tuple(allowed) if isinstance(allowed, list) else (allowed,)
        missing = [v for v in allowed if v not in param.args]
        if missing or not allowed:
            raise _fail(source, key, f"when: {other} never takes {missing or allowed!r}; its values are "
                                     f"{list(param.args)!r}")
        out.append((other, allowed))
    return tuple(out)


_UNSET = object()


def is_active(param: Param, values: Mapping[str, Any]) -> bool:
    """Whether every condition of ``param`` holds for the ``values`` sampled so far."""
    return all(values.get(key, _UNSET) in allowed for key, allowed in param.when)


def active_values(params: Sequence[Param], sampled: Mapping[str, Any]) -> dict[str, Any]:
    """The sampled values that apply to a trial, in file order: inactive entries are dropped
    (the random searcher samples them anyway; Optuna never does). Raises ``KeyError`` naming an
    active entry that was not sampled."""
    values: dict[str, Any] = {}
    for param in params:
        if not is_active(param, values):
            continue
        if param.key not in sampled:
            raise KeyError(f"the trial's config has no value for the active entry {param.key!r}; "
                           f"it has {', '.join(sampled) or 'nothing'}")
        values[param.key] = sampled[param.key]
    return values


class OptunaSpace:
    """Optuna define-by-run function of ``params``: suggests the active entries, in file order.

    A class, not a closure: ``OptunaSearch`` pickles its space with the searcher state that a
    resumed sweep restores.
    """

    def __init__(self, params: Sequence[Param]) -> None:
        self.params = tuple(params)

    def __call__(self, trial: optuna.Trial) -> None:
        values: dict[str, Any] = {}
        for p in self.params:
            if not is_active(p, values):
                continue
            if p.type == "loguniform":
                values[p.key] = trial.suggest_float(p.key, *p.args, log=True)
            elif p.type == "uniform":
                values[p.key] = trial.suggest_float(p.key, *p.args)
            elif p.type == "int":
                values[p.key] = trial.suggest_int(p.key, *p.args)
            else:
                values[p.key] = trial.suggest_categorical(p.key, list(p.args))


def to_tune(params: Sequence[Param], searcher: Searcher, source: str = "<space>") -> dict[str, Any] | OptunaSpace:
    """The space ``searcher`` takes: for ``random``, a Tune ``param_space`` (``tune.loguniform``,
    ``tune.uniform``, ``tune.randint`` with the upper end included, ``tune.choice``,
    ``tune.grid_search``) sampling every entry; for ``optuna``, an ``OptunaSpace`` (define-by-run,
    which is what conditional entries need). ``grid`` with ``optuna`` is a ``SpaceError``."""
    if searcher not in SEARCHERS:
        raise ValueError(f"searcher={searcher!r} is not valid: expected one of {', '.join(SEARCHERS)}")
    if searcher == "optuna":
        grid = [p.key for p in params if p.type == "grid"]
        if grid:
            raise _fail(source, grid[0], "grid enumerates its values, which Optuna does not do: use choice, or "
                                         "--searcher random")
        return OptunaSpace(params)
    from ray import tune

    build = {"loguniform": lambda a: tune.loguniform(*a), "uniform": lambda a: tune.uniform(*a),
             "int": lambda a: tune.randint(a[0], a[1] + 1), "choice": lambda a: tune.choice(list(a)),
             "grid": lambda a: tune.grid_search(list(a))}
    return {p.key: build[p.type](p.args) for p in params}
