"""How ``jobs/sweep.py`` ends: its table, best config, results and plot in its directory (``xlt.sweep.results``),
its record, whose ``best`` classifier is the best trial's run (of a co-training trial, the learner it scored with;
the trial's other classifiers by their names), and with ``--export`` that classifier exported as its trial left
it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ..export import export_recorded
from ..record import EXPORT_DIR, FINISHED, relative, update_record, write_record
from ..report import Finished
from ..storage import join
from .best import TrialRecord
from .results import BEST_CONFIG, PLOT, RESULTS, TABLE, best_run, write_outputs
from .runner import Sweep

BEST = "best"  # the sweep's classifier: its best trial's


def finish_sweep(sweep: Sweep, records: Sequence[TrialRecord], export: bool, tracker: Any) -> Finished:
    """The sweep's files, record and export (module docstring); ``tracker``: an ``xlt.tracking.Tracker``."""
    directory = sweep.settings.directory
    text = write_outputs(sweep, records, tracker)
    outputs = {name: join(directory, file) for name, file in
               (("best config", BEST_CONFIG), ("table", TABLE), ("results", RESULTS), ("plot", PLOT))}
    run, learner = best_run(directory)
    config = {"space": asdict(sweep.space), "settings": asdict(sweep.settings), "job": asdict(sweep.config)}
    write_record(directory, "sweep", config, FINISHED, outputs=outputs,
                 classifiers={BEST: {"run": relative(directory, run), "classifier": learner,
                                     "what": f"the best trial of sweep {sweep.settings.name}"}}, default=BEST)
    if export:
        outputs |= export_recorded(directory, {None: join(directory, EXPORT_DIR)}, tracker,
                                   backend=sweep.config.output.export_backend)
        update_record(directory, outputs=outputs)
    return Finished(text, outputs)
