"""How ``jobs/study.py`` ends: the report of the units finished (and imported) so far, ``results.md``,
``results.json`` and the plot in the study's output (local or on a store), tracked, and the study's record,
which names each unit's run that trained a classifier (a model path for ``jobs/predict.py`` with
``model.learner=<unit>``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..record import FINISHED, RECORD_FILE, write_record
from ..report import Finished
from ..storage import join, read_text, staged
from ..report import write_results
from .report import build, markdown, plot
from .spec import Study
from .units import RUNS, imported_records, read_unit_record

STUDY_RESULTS, STUDY_TABLE, STUDY_PLOT = "results.json", "results.md", "results.png"


@dataclass(frozen=True)
class FinishedStudy(Finished):
    missing: tuple[str, ...] = ()  # units without a record: what the same command runs again


def finish_study(study: Study, command: str, errors: dict[str, str], tracker: Any) -> FinishedStudy:
    """The study's report (module docstring), ``command`` the line that made it; ``tracker``: an
    ``xlt.tracking.Tracker``."""
    records = [r for r in (read_unit_record(study.output, u.name) for u in study.units()) if r is not None]
    records += imported_records(study.output)
    if not records:
        raise RuntimeError(f"no unit of {study.source} finished: {errors}")
    missing = tuple(u.name for u in study.units() if read_unit_record(study.output, u.name) is None)
    content = build(study, records)
    reading = Path(study.reading).read_text(encoding="utf-8") if study.reading else None
    text = markdown(study, content, command, STUDY_PLOT, list(missing), errors, reading)
    with staged(study.output) as local:
        (local / STUDY_TABLE).write_text(text, encoding="utf-8")
        # The command and time of the study, not of this report: a rerun of a finished study rewrites it as it is.
        write_results(local / STUDY_RESULTS, {"command": command, "finished": max(r["finished"] for r in records),
                                              **content, "missing": list(missing), "failed": errors})
        plot(study, content, str(local / STUDY_PLOT))
        tracker.artifacts(local / STUDY_TABLE, local / STUDY_RESULTS, local / STUDY_PLOT)
    tracker.metrics({f"{arm}/avg_target": v["mean"] for arm, v in content["avg_target"].items()}, step=0)
    outputs = {name: join(study.output, file) for name, file in
               (("table", STUDY_TABLE), ("results", STUDY_RESULTS), ("plot", STUDY_PLOT), ("units", "units"))}
    runs = {u.name: {"run": f"{RUNS}/{u.name}", "classifier": None} for u in study.units()
            if read_text(join(study.output, RUNS, u.name, RECORD_FILE)) is not None}
    # The job finished; the units it left (a part of the study run with --only, or failed) are what it runs next.
    write_record(study.output, "study", study, FINISHED,
                 metrics={**{f"{arm}/avg_target": v["mean"] for arm, v in content["avg_target"].items()},
                          "units finished": len(study.units()) - len(missing), "units left": len(missing)},
                 classifiers=runs, outputs=outputs)
    return FinishedStudy(text, outputs, missing)
