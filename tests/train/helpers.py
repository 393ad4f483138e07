"""Configs and rows shared by the fine-tuning tests."""

from __future__ import annotations

from xlt.augment import AugmentConfig
from xlt.losses import ObjectiveConfig
from xlt.models import EncoderConfig
from xlt.tasks import Fields, TaskConfig

from xlt.train.config import DataSettings, FinetuneConfig, FinetuneOptim

LABELS = ("science", "sports", "travel")


def tiny_task(paired: bool = False) -> TaskConfig:
    """A resolved task config (labels and languages explicit) whose files are never read."""
    return TaskConfig(type="files", name="tiny", path="unused/{lang}/{split}.tsv", labels=LABELS,
                      target_langs=("de", "fr"), fields=Fields(text_pair="hypothesis" if paired else None), link="line")


def tiny_config(objectives: tuple[ObjectiveConfig, ...] = (), paired: bool = False, augment: AugmentConfig | None = None,
                **optim) -> FinetuneConfig:
    """A resolved config over tiny:bert with three labels (no data on disk needed)."""
    return FinetuneConfig(task=tiny_task(paired), model=EncoderConfig(source="tiny:bert", max_length=32),
                          objectives=objectives, data=DataSettings(train_rows=4, augment=augment),
                          optim=FinetuneOptim(**{"batch_size": 4, "epochs": 1, **optim}))


def rows_with_views() -> list[dict]:
    """Four originals; views inherit their original's label; one original has none."""
    return [
        {"text": "the rover found water on mars", "label": "science", "lang": "en",
         "views": ["der rover fand wasser auf dem mars", "le rover a trouvé de l'eau sur mars"],
         "view_kinds": ["full", "full"], "view_langs": ["de", "fr"]},
        {"text": "the final ended two to one", "label": "sports", "lang": "en",
         "views": ["das finale endete zwei zu eins"], "view_kinds": ["full"], "view_langs": ["de"]},
        {"text": "the museum opens at nine", "label": "travel", "lang": "en",
         "views": [], "view_kinds": [], "view_langs": []},
        {"text": "cells divide by mitosis", "label": "science", "lang": "en",
         "views": ["zellen teilen sich durch mitose"], "view_kinds": ["codeswitch"], "view_langs": ["de"]},
    ]
