"""What a finished sweep hands back: a table of trials, the best trial, its config, a plot.

Pure functions of ``TrialRecord`` (what ``runner`` reads out of Tune's trials), tested without Ray.

Which trial is best: the best score among the trials that ran to the end (``max_t`` epochs or
iterations), falling back to all trials with a score when none did. A trial's score is its *last*
report, not its best epoch: the exported config trains for the preset's full length, so the score
it will reproduce is the last epoch's. ASHA stops a trial early only when it trails its rung, so
a stopped trial's last score is not comparable to the score of a trial that finished.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..config import apply_overrides, save_config
from .overrides import exported_data
from .space import Param


@dataclass(frozen=True)
class TrialRecord:
    """One trial: its creation ``index`` (Tune numbers trials in the order the searcher made them),
    status, the sampled values that applied to it, and its last reported result ({} if none)."""

    index: int
    trial_id: str
    status: str
    values: dict[str, Any]
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


INTERRUPTED = "INTERRUPTED"


def reported_status(status: str, saved: str | None) -> str:
    """A trial's status for the report, from its status when ``tune.run`` returned and the one in the
    experiment state Tune saved last (``saved``; ``None``: not in it). Stopped by SIGINT, ``tune.run``
    saves its state with the unfinished trials still RUNNING or PENDING, then stops them and marks them
    TERMINATED, as if they had finished; a resumed sweep continues them. So a trial the saved state
    does not call TERMINATED or ERROR was interrupted."""
    return status if saved in (None, "TERMINATED", "ERROR") else INTERRUPTED


def interrupted(records: Sequence[TrialRecord]) -> int:
    """How many of ``records`` were interrupted: what ``--resume`` would continue."""
    return sum(r.status == INTERRUPTED for r in records)


def score(record: TrialRecord, metric: str) -> float | None:
    """The last reported ``metric``, or ``None`` (no report, or not a finite number)."""
    value = record.result.get(metric)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def steps_run(record: TrialRecord, time_attr: str) -> int:
    """Epochs (fine-tuning) or iterations (co-training) the trial completed."""
    return int(record.result.get(time_attr, 0))


def best_trial(records: Sequence[TrialRecord], metric: str, mode: Literal["max", "min"], time_attr: str,
               max_t: int) -> TrialRecord:
    """See the module docstring. Ties go to the earlier trial."""
    scored = [r for r in records if score(r, metric) is not None]
    if not scored:
        raise ValueError(f"no trial reported {metric!r}; statuses: "
                         f"{', '.join(sorted({r.status for r in records})) or 'no trials'}")
    finished = [r for r in scored if steps_run(r, time_attr) >= max_t] or scored
    sign = 1.0 if mode == "max" else -1.0
    return max(sorted(finished, key=lambda r: r.index), key=lambda r: sign * score(r, metric))


def results_rows(records: Sequence[TrialRecord], params: Sequence[Param], metric: str,
                 time_attr: str) -> list[dict[str, Any]]:
    """One row per trial in creation order: trial, status, each entry's value (– when inactive),
    the score and the epochs / iterations it ran."""
    return [{"trial": r.index, "status": r.status, **{p.key: r.values.get(p.key) for p in params},
             metric: score(r, metric), time_attr: steps_run(r, time_attr)}
            for r in sorted(records, key=lambda r: r.index)]


def best_so_far(records: Sequence[TrialRecord], metric: str, mode: Literal["max", "min"]) -> list[float | None]:
    """The best score among trials 0..i, for each trial i in creation order (``None`` until one scores)."""
    out: list[float | None] = []
    best: float | None = None
    for record in sorted(records, key=lambda r: r.index):
        value = score(record, metric)
        if value is not None and (best is None or (value > best if mode == "max" else value < best)):
            best = value
        out.append(best)
    return out


def plot_best_so_far(records: Sequence[TrialRecord], metric: str, mode: Literal["max", "min"], path: str | Path,
                     title: str) -> Path:
    """Each trial's score (dots) and the best so far (line) against the trial number; a PNG."""
    from ..report.plots import new_figure, save_figure

    ordered = sorted(records, key=lambda r: r.index)
    fig, ax = new_figure((5.5, 3.5))
    points = [(i + 1, score(r, metric)) for i, r in enumerate(ordered) if score(r, metric) is not None]
    if points:
        ax.scatter(*zip(*points), s=14, alpha=0.5, label="trial (last report)")
    line = [(i + 1, v) for i, v in enumerate(best_so_far(ordered, metric, mode)) if v is not None]
    if line:
        ax.step(*zip(*line), where="post", label="best so far")
    return save_figure(fig, ax, path, xlabel="trial", ylabel=metric, title=title)


def summary(records: Sequence[TrialRecord], time_attr: str) -> dict[str, Any]:
    """Counts per status and the compute spent: epochs / iterations summed over trials."""
    statuses: dict[str, int] = {}
    for r in records:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    return {"trials": len(records), "statuses": statuses, f"total {time_attr}": sum(steps_run(r, time_attr)
                                                                                  for r in records)}



def export_config(build: Callable[[dict[str, Any]], Any], base: Mapping[str, Any], values: Mapping[str, Any],
                  renames: Sequence[str], path: str | Path) -> Any:
    """Save the best trial's config as YAML that the job's ``--config`` reads: ``base`` with the
    sampled ``values`` and the ``renames`` (its own run name, so that running it does not resume
    the preset's run), without the space's ``sweep_only``. Returns the config."""
    cfg = build(apply_overrides(exported_data(base, values), renames))
    save_config(cfg, path)
    return cfg
