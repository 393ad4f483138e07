"""The one module of ``xlt.sweep`` that talks to Ray Tune's session, so that a change of Tune's API is one module's.

Trials report once per epoch (fine-tuning) or per iteration (co-training) through ``report``,
so that ASHA can stop a trial whose dev score lags at a rung. Trials write no Tune checkpoints:
a fine-tuning trial of a few epochs restarts from scratch when a sweep resumes (a checkpoint of
an e5-small per epoch and trial would cost more I/O than the epoch), and a co-training trial
keeps its own per-iteration loop state in its trial directory (``TrialSetup.trial_run``), from which
``run_cotraining`` resumes.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import placement


def report(metrics: Mapping[str, float | int | str]) -> None:
    """One result of the running trial (``ray.tune.report``), with the node of the trial's process
    (``placement/trial``: Tune's own ``node_ip`` cannot tell apart nodes that share a host, as a
    cluster tested on one machine does)."""
    from ray import tune

    tune.report({**metrics, placement.key("trial"): placement.as_text([placement.this_node()])})


def trial_id() -> str:
    """The running trial's id (its directory in the sweep is ``trial_<id>``)."""
    from ray import tune

    return tune.get_context().get_trial_id()
