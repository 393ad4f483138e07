"""Opening a plot a job wrote: the PNG decodes, and it is not one flat colour."""

from __future__ import annotations

from pathlib import Path


def assert_a_drawn_png(path: Path) -> None:
    import matplotlib.image
    import numpy as np

    pixels = matplotlib.image.imread(path, format="png")  # raises on a file that is not a PNG
    assert pixels.ndim == 3 and min(pixels.shape[:2]) >= 100, pixels.shape
    # A blank figure is one colour; a plot has axes, lines and text in several.
    assert len(np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)) > 16, f"{path} is a blank image"
