"""Phases: rows in order of start with their labels, overlapping phases from threads, a phase that
raises still recorded, the table's columns."""

from __future__ import annotations

import threading
import time

import pytest

from xlt.report import Phases


def test_phases_from_threads_overlap_and_a_failed_phase_is_recorded():
    phases = Phases()
    with phases("read data"):
        time.sleep(0.01)

    def fit(name: str) -> None:
        with phases(f"fit {name}", iteration=0):
            time.sleep(0.2)

    threads = [threading.Thread(target=fit, args=(name,)) for name in ("lm", "emb")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with pytest.raises(RuntimeError), phases("exchange", iteration=0):
        raise RuntimeError("boom")

    rows = phases.rows()
    assert [r["phase"] for r in rows][0] == "read data" and rows[-1]["phase"] == "exchange"
    assert {r["phase"] for r in rows[1:3]} == {"fit lm", "fit emb"}
    fits = rows[1:3]
    assert all(r["seconds"] >= 0.2 and r["iteration"] == 0 for r in fits)
    # The two fits ran at the same time: each started before the other ended.
    assert max(r["start s"] for r in fits) < min(r["start s"] + r["seconds"] for r in fits)
    assert rows[0]["start s"] < fits[0]["start s"] and "iteration" not in rows[0]

    header, rule, first, *_ = phases.table().splitlines()
    assert [c.strip() for c in header.strip("|").split("|")] == ["iteration", "phase", "start s", "seconds"]
    assert "| –" in first and "read data" in first
    # Plain seconds to the hundredth, the job's first start included (not 1.2e-05).
    assert [c.strip() for c in first.strip("|").split("|")][2:] == ["0.00", f"{rows[0]['seconds']:.2f}"]
    assert "e-" not in phases.table()
