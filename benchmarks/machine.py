"""What the benchmark results record about the machine they ran on."""

from __future__ import annotations

import platform as pyplatform  # stdlib; the source root named platform/ is not a package
from pathlib import Path


def cpu_model() -> str:
    """The CPU model name (``/proc/cpuinfo``), else what the platform module reports."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return pyplatform.processor() or "unknown"
