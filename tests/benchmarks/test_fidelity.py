"""benchmarks/fidelity.py: the smoke comparison killed after its first stored unit, then continued."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

from conftest import REPO

FIDELITY = REPO / "benchmarks" / "fidelity.py"
UNITS = {"ce/seed0", "ce/seed1", "scl/seed0", "scl/seed1"}


def test_a_killed_comparison_continues_with_the_units_not_stored(data_dir, tmp_path):
    out = tmp_path / "fidelity.md"
    command = [sys.executable, str(FIDELITY), "smoke", "--seeds", "0", "1", "--out", str(out),
               "--storage", str(tmp_path / "runs")]
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "RAY_ADDRESS": ""}
    store = out.with_suffix(".json")

    def stored() -> dict:
        return json.loads(store.read_text())["units"].get("smoke", {}) if store.is_file() else {}

    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and not stored():
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)  # the runner and its local Ray, in the middle of the next unit
    proc.wait()
    first = stored()
    assert 1 <= len(first) < len(UNITS), first.keys()

    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    units = stored()
    assert set(units) == UNITS
    for key, record in first.items():
        assert units[key] == record and f"== smoke {key}: stored" in done.stderr  # not run again
    for record in units.values():
        assert len(record["items"]) == 32  # 16 test sentences in each of de and zh, one 0/1 each
        hits = [c == "1" for c in record["items"]]
        assert record["acc"]["avg_target"] == sum(hits) / 32  # the items are what the accuracy counts
        assert record["acc"]["avg_target"] == (record["acc"]["de"] + record["acc"]["zh"]) / 2
    text = out.read_text()
    assert "python benchmarks/fidelity.py smoke --seeds 0 1" in text.replace(str(FIDELITY), "benchmarks/fidelity.py")
    assert re.search(r"\| CE\+SCL +\| 2 +\|", text) and re.search(r"\| CE\+SCL − CE +\| none \(runner check\)", text)
    assert (tmp_path / "fidelity_smoke.png").is_file()
