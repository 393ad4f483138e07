"""``make test``'s two lanes (``pytest -n 2 --lanes``): the tests that start Ray run one after another in one
pytest-xdist worker, as in a serial run, and the rest beside them in the other.

The Ray tests share the session's Ray and co-training smoke run, and each keeps ~1.4 of the machine's 2 cores
busy on its own: two of them side by side slow each other as much as they gain, and the multi-node ones fail
under load (``benchmarks/test_time.md``). The rest (no Ray, no job) fill the cores those leave idle. Which test
starts Ray is known from its markers, which only the workers (they collect) see, while the controller decides
where each test runs: each worker writes the Ray lane's test ids to a file the controller names
(``pytest_configure_node``), and the controller's scheduler reads it once collection is complete.
"""

from __future__ import annotations

import os
from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

RAY_LANE = "ray"
IN_RAY_LANE = ("ray", "cluster")  # the markers of a test that starts Ray


def order_and_record(items: list, lane_file: Path) -> None:
    """In a worker: the Ray lane first (the longer lane starts at once), its ``cluster`` tests last (they wait on
    nodes joining and being declared dead, which the other lane's load would slow; by then that lane is done),
    then the rest; the Ray lane's ids written to ``lane_file``."""
    def in_ray_lane(item) -> bool:
        return any(item.get_closest_marker(marker) for marker in IN_RAY_LANE)

    items.sort(key=lambda item: (not in_ray_lane(item), item.get_closest_marker("cluster") is not None))
    ids = [item.nodeid for item in items if in_ray_lane(item)]
    partial = lane_file.with_name(f"{lane_file.name}.{os.getpid()}")
    partial.write_text("".join(f"{nodeid}\n" for nodeid in ids))
    partial.replace(lane_file)  # every worker writes the same list: whole, whichever lands last


class TwoLanes(LoadScopeScheduling):
    """One scope for the Ray lane, one per test module for the rest, handed out in collection order (the Ray
    lane's first): the first worker takes the Ray lane and is given nothing else while it has more than two
    tests to run; the other worker takes every other module."""

    def __init__(self, config, log, lane_file: Path) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False  # else scopes go out largest first, and a module may outsize the lane
        self.lane_file = lane_file
        self.ray_lane: set[str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self.ray_lane is None:  # first called once every worker has collected
            self.ray_lane = set(self.lane_file.read_text().splitlines())
        return RAY_LANE if nodeid in self.ray_lane else nodeid.split("::", 1)[0]
