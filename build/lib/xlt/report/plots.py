"""Writing matplotlib figures: headless, laid out, parents created, closed after."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def new_figure(figsize: tuple[float, float] = (5, 3.5)) -> tuple[Any, Any]:
    """A figure and its axes on the headless Agg backend (jobs run without a display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=figsize)


def save_figure(fig: Any, ax: Any, path: str | Path, *, xlabel: str, ylabel: str, title: str) -> Path:
    """Label ``ax``, add a grid and legend, write ``fig`` to ``path`` (PNG, 120 dpi) and close it."""
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
