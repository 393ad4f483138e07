"""Sweeps with Ray Tune + Optuna over τ, λ, augmentation counts and ratio, threshold, learning rate.

- ``space``: search-space YAML (``search_spaces/``) -> a Tune space or an Optuna define-by-run space
- ``overrides``: a trial = preset + ``sweep_only`` + sampled values; validation against the preset
- ``trainables``: the fine-tuning and co-training trials, what each reserves
- ``tune_session``: the one module that calls ``tune.report``
- ``runner``: ``tune.run`` with OptunaSearch behind a ConcurrencyLimiter (or random search) and ASHA
- ``best``: the results table, the best trial and its exported config, the best-so-far plot
"""

from .best import TrialRecord, best_so_far, best_trial, export_config, plot_best_so_far, results_rows, summary
from .space import Param, SearchSpace, SpaceError, active_values, load_space, parse_params, parse_space, to_tune

__all__ = ["Param", "SearchSpace", "SpaceError", "TrialRecord", "active_values", "best_so_far", "best_trial",
           "export_config", "load_space", "parse_params", "parse_space", "plot_best_so_far", "results_rows",
           "summary", "to_tune"]
