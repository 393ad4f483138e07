"""Benchmarks under test: ``benchmarks/`` is a folder of scripts, not a package."""

from __future__ import annotations

import sys

from conftest import REPO


def load_benchmark(name: str):
    """``benchmarks/<name>.py`` as a module, its folder on the path as when the script runs (``harness``)."""
    import importlib.util

    if str(REPO / "benchmarks") not in sys.path:
        sys.path.append(str(REPO / "benchmarks"))

    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module
