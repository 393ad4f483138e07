"""``xlt.augment.views``: target languages drawn per view, distinct while there are enough."""

from __future__ import annotations

import random

from xlt.augment.views import draw_languages


def test_draw_languages_distinct_while_possible() -> None:
    rng = random.Random(0)
    assert sorted(draw_languages(rng, ["de", "fr", "es"], 3)) == ["de", "es", "fr"]
    assert draw_languages(rng, ["de"], 2) == ["de", "de"]
    for _ in range(20):
        drawn = draw_languages(rng, ["de", "fr", "es"], 5)
        assert len(set(drawn[:3])) == 3 and len(set(drawn[3:])) == 2
