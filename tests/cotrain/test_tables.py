"""Co-training's tables (xlt.cotrain.tables) from a hand-made history."""

from __future__ import annotations

import math

from xlt.cotrain.tables import iteration_rows
from xlt.report import markdown_table


def test_the_per_iteration_table_shows_a_dash_for_the_accuracy_of_no_selected_rows():
    history = [{"iteration": 0, "learner": "lm", "train/rows": 150.0, "test/acc/en": 0.69, "test/acc/avg_target": 0.64,
                "pseudo/candidates": 0.0, "pseudo/selected": 0.0, "pseudo/accuracy": math.nan},
               {"iteration": 0, "learner": "emb", "train/rows": 150.0, "test/acc/en": 0.755,
                "test/acc/avg_target": 0.553, "pseudo/candidates": 117.0, "pseudo/selected": 50.0,
                "pseudo/accuracy": 1.0}]
    rows = iteration_rows(history, "test", "en")
    assert [r["pseudo acc"] for r in rows] == [None, 1.0]
    assert [r["selected"] for r in rows] == [0, 50]
    table = markdown_table(rows).splitlines()
    assert table[2].endswith("| 0          | 0        | –          |") and "nan" not in "\n".join(table)
