"""The files a finished sweep leaves in its directory, and the text the job prints.

``results.md`` (one row per trial: status, values, score, epochs or iterations run; the best trial as
``--set`` overrides, "best so far" while trials were interrupted; totals), ``results.json`` (trials,
best, settings, space, exported config, the command), ``best_so_far.png`` and ``best.yaml`` (the best
trial's config for the job's ``--config``: the base config with its values, without ``sweep_only``;
see ``best``). ``best_run`` finds the best trial's own run again (a model for ``jobs/predict.py`` and
``jobs/export.py``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from ..report import markdown_table, write_results
from ..storage import join, read_text, staged
from .best import TrialRecord, best_trial, export_config, interrupted, plot_best_so_far, results_rows, summary
from .overrides import as_overrides
from .runner import Sweep
from .trainables import trial_run

BEST_CONFIG, TABLE, RESULTS, PLOT = "best.yaml", "results.md", "results.json", "best_so_far.png"


def write_outputs(sweep: Sweep, records: Sequence[TrialRecord], tracker: Any = None) -> str:
    """Write the four files into the sweep's directory (and log them to ``tracker``, an
    ``xlt.tracking.Tracker``); returns the markdown summary."""
    with staged(sweep.settings.directory) as out:  # a URI gets the files when the block ends
        text = _write(sweep, records, out)
        if tracker is not None:
            tracker.artifacts(*(out / name for name in (BEST_CONFIG, TABLE, RESULTS, PLOT)))
    return text


def _write(sweep: Sweep, records: Sequence[TrialRecord], out: Path) -> str:
    space, settings, job = sweep.space, sweep.settings, sweep.job
    best = best_trial(records, space.metric, space.mode, job.time_attr, job.max_t(sweep.config))
    cfg = export_config(job.config, sweep.base, best.values, job.renames(settings.name), out / BEST_CONFIG)
    table = markdown_table(results_rows(records, space.params, space.metric, job.time_attr), digits=4)
    totals = summary(records, job.time_attr)
    title = f"{settings.name}: {space.job}, {settings.searcher} + {settings.scheduler}"
    unfinished = interrupted(records)
    best_line = (f"best so far ({unfinished} of {len(records)} trials interrupted; --resume continues them)"
                 if unfinished else "best")
    text = (f"## Sweep {title}, {len(records)} trials\n\n{table}\n\n"
            f"{best_line}: trial {best.index}, {space.metric} = {best.result[space.metric]:.4f}: "
            f"{' '.join('--set ' + o for o in as_overrides(best.values))}\n\n"
            f"trials per status: {totals['statuses']}; {job.time_attr} summed over trials: "
            f"{totals[f'total {job.time_attr}']}\n")
    (out / TABLE).write_text(text, encoding="utf-8")
    plot_best_so_far(records, space.metric, space.mode, out / PLOT, title)
    write_results(out / RESULTS, {"trials": [asdict(r) for r in records], "best": asdict(best), "summary": totals,
                                  "settings": asdict(settings), "space": asdict(space), "best_config": asdict(cfg)})
    return text


def best_run(directory: str) -> tuple[str, str | None] | None:
    """The run of the best trial of the sweep in ``directory`` (local or URI), as its ``results.json``
    names it (the best so far when trials were interrupted), and the learner a co-training trial
    scored with (``None`` for fine-tuning); ``None`` if ``directory`` holds no sweep's results.

    The run is the trial's, trained with the space's ``sweep_only`` overrides (fewer epochs, say):
    ``best.yaml`` retrains it at the preset's full length."""
    text = read_text(join(directory, RESULTS))
    results = json.loads(text) if text is not None else {}
    if "best" not in results or "space" not in results:  # another job's results.json
        return None
    best = results["best"]
    return trial_run(directory, best["trial_id"], results["space"]["job"]), best["result"].get("best_learner")
