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
