"""Studies: recipes compared over seeds, each (variant, seed) a Ray Tune trial of the ordinary job,
with paired intervals from ``xlt.eval.stats`` (``jobs/study.py``)."""

from .spec import Comparison, SetFitSettings, Study, Unit, Variant, load_study

__all__ = ["Comparison", "SetFitSettings", "Study", "Unit", "Variant", "load_study"]
