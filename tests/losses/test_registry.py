"""Objectives by name, with their parameters checked against the constructor."""

from __future__ import annotations

import pytest
import torch

from xlt.config import ConfigError, from_dict
from xlt.losses import OBJECTIVES, ObjectiveConfig, build_objective, build_objectives

from .naive_sentence import random_view_batch


def test_every_objective_is_registered_under_its_name():
    assert all(cls.name == name for name, cls in OBJECTIVES.items())
    assert {"supervised_contrastive_alignment", "cross_zero_nce", "mlm", "token_alignment"} <= set(OBJECTIVES)


def test_build_from_yaml_like_mapping():
    cfg = from_dict(ObjectiveConfig, {"name": "supervised_contrastive_alignment", "weight": 0.5,
                                      "params": {"temperature": 0.3}})
    mix = build_objectives([cfg, ObjectiveConfig("multiview_alignment", 10.0, {"similarity": "cosine"})])
    batch = random_view_batch([2, 2, 3], seed=1, dtype=torch.float32)
    total, parts = mix(batch)
    assert torch.allclose(total, 0.5 * parts["supervised_contrastive_alignment"] + 10 * parts["multiview_alignment"])
    assert mix.objectives["supervised_contrastive_alignment"].temperature == 0.3


@pytest.mark.parametrize("kwargs, match", [
    ({"name": "supcon"}, "name='supcon' is not valid: expected one of multiview_alignment"),
    ({"name": "mlm", "weight": -1.0}, "mlm.weight=-1.0 is not valid"),
    ({"name": "cross_zero_nce", "params": {"tau": 0.1}}, "unknown: tau"),
])
def test_config_errors(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        ObjectiveConfig(**kwargs)


def test_duplicates_and_single_build():
    with pytest.raises(ValueError, match="more than once"):
        build_objectives([ObjectiveConfig("mlm"), ObjectiveConfig("mlm")])
    assert build_objective("parallel_info_nce", temperature=0.05).temperature == 0.05
