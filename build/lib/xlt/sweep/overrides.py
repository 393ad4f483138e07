"""A trial = the job's preset + the space's ``sweep_only`` overrides + the sampled values.

Pure functions over plain mappings (no Ray), so that what a trial trains, what the results table
shows and what the best config exports are computed in one place:

- ``trial_data``: the config mapping a trial builds its dataclass from;
- ``exported_data``: the same without ``sweep_only`` (trial-time settings such as evaluating
  co-training on dev are not part of the configuration one deploys);
- ``check_space``: every entry's extreme values and every choice, applied to the preset, build
  a valid config (else a ``SpaceError`` naming the file, the key and the config's complaint), so
  a typo fails on the driver before any trial starts;
- ``as_overrides``: the ``--set key=value`` strings that reproduce a trial.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import yaml

from ..config import ConfigError, apply_overrides, set_value
from .space import Param, SearchSpace, SpaceError


def exported_data(base: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` (the preset with the command line's ``--set``) with the sampled ``values`` set."""
    data = apply_overrides(dict(base), [])  # a deep copy
    for key, value in values.items():
        set_value(data, key, value)
    return data


def trial_data(base: Mapping[str, Any], values: Mapping[str, Any], sweep_only: Sequence[str] = ()) -> dict[str, Any]:
    """What a trial runs: ``base`` + ``sweep_only`` overrides + the sampled ``values`` (last wins)."""
    return exported_data(apply_overrides(dict(base), sweep_only), values)


def as_overrides(values: Mapping[str, Any]) -> list[str]:
    """``key=value`` strings that ``apply_overrides`` (``--set``) parses back to ``values``."""
    return [f"{key}={_scalar(value)}" for key, value in values.items()]


def _scalar(value: Any) -> str:
    # YAML spelling: 1e-05 would come back as a string, 1.0e-05 comes back as a float.
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def _witness(param: Param, by_key: Mapping[str, Param]) -> dict[str, Any]:
    """Values of the entries ``param`` is conditional on (recursively) that make it active."""
    values: dict[str, Any] = {}
    for key, allowed in param.when:
        values.update(_witness(by_key[key], by_key))
        values[key] = allowed[0]
    return values


def check_space(space: SearchSpace, base: Mapping[str, Any], build: Callable[[dict[str, Any]], Any]) -> None:
    """Build (``build(mapping)``, e.g. ``from_dict(FinetuneConfig, ·)``) the trial config of each
    entry's low and high end, or of each of its values, with the entries it depends on active."""
    by_key = {p.key: p for p in space.params}
    try:
        build(trial_data(base, {}, space.sweep_only))
    except ConfigError as e:
        raise SpaceError(f"{space.source}: the preset with sweep_only {list(space.sweep_only)} is not a valid "
                         f"{space.job} config: {e}") from e
    for param in space.params:
        for value in param.args:
            values = {**_witness(param, by_key), param.key: value}
            try:
                build(trial_data(base, values, space.sweep_only))
            except ConfigError as e:
                raise SpaceError(f"{space.source}: {param.key}: the value {value!r} does not make a valid "
                                 f"{space.job} config from the preset: {e}") from e
