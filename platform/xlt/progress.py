"""Progress bars with rate and ETA, from the driver and from Ray workers alike.

``progress`` is Ray's ``tqdm_ray``: in a Ray worker (a Ray Train worker, an actor) it prints its
state as a JSON line that the driver draws, one line per bar however many workers report; in the
driver it draws directly. A Ray Train worker's ``print`` is routed to Train's logger unless
``RAY_TRAIN_ENABLE_PRINT_PATCH=0``, which ``xlt.cli.init_ray`` sets for every job's workers so
that the bars reach the driver.
"""

from __future__ import annotations

from typing import Any


def progress(total: int | None, desc: str, unit: str = "it") -> Any:
    """A bar of ``total`` ``unit``s labelled ``desc`` (``update(n)``, ``set_description``, ``close``)."""
    from ray.experimental.tqdm_ray import tqdm

    return tqdm(total=total, desc=desc, unit=unit)


def trials_progress(total: int, unit: str) -> Any:
    """A Ray Tune callback that draws a bar of ``total`` trials ended (each a ``unit``: a sweep's trial, a study's
    unit), failed ones included, with rate and ETA, on the driver: what a sweep or study shows in place of Tune's
    own tables (``xlt.logs.tune_verbosity``)."""
    from ray.tune import Callback

    class TrialsEnded(Callback):
        def setup(self, **info: Any) -> None:
            self.bar = progress(total, f"{unit}s ended", unit)

        def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            self.bar.update(1)

        def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            self.bar.update(1)

        def on_experiment_end(self, trials: list, **info: Any) -> None:
            self.bar.close()

    return TrialsEnded()
