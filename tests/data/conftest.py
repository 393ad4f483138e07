"""Fixtures for the data-layer tests: small synthetic data roots for malformed-input cases."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .helpers import SIB_LABELS


@pytest.fixture
def sib_root(tmp_path: Path) -> Callable[[bytes], Path]:
    """``make(train_bytes)`` -> a data root with ``sib200/deu_Latn/train.tsv`` holding those bytes."""

    def make(train: bytes) -> Path:
        lang_dir = tmp_path / "sib200" / "deu_Latn"
        lang_dir.mkdir(parents=True, exist_ok=True)
        (lang_dir / "labels.txt").write_text("\n".join(SIB_LABELS) + "\n", encoding="utf-8")
        (lang_dir / "train.tsv").write_bytes(train)
        return tmp_path

    return make
