"""The evaluation protocols' registry (xlt.eval.protocols.PROTOCOLS)."""

from __future__ import annotations

from typing import get_args

import pytest

from xlt.config import ConfigError, from_dict
from xlt.eval.protocols import PROTOCOLS, EvaluateConfig, Protocol


def test_every_protocol_a_config_may_name_is_registered_and_no_other():
    assert set(get_args(Protocol)) == set(PROTOCOLS)
    with pytest.raises(ConfigError, match="protocol"):
        from_dict(EvaluateConfig, {"protocol": "xnli-probe"})
