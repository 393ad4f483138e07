"""``AugmentConfig``: languages normalised and not the source, ranges checked, a language for every kind asked for."""

from __future__ import annotations

import pytest

from xlt.augment.config import AugmentConfig
from xlt.config import ConfigError


def test_config_is_validated() -> None:
    with pytest.raises(ValueError, match="contains the source language 'en'"):
        AugmentConfig(languages=("de", "eng_Latn"))
    with pytest.raises(ConfigError, match="r_c=1.5 is not valid"):
        AugmentConfig(r_c=1.5, languages=("de",))
    with pytest.raises(ValueError, match="t_c=1 asks for codeswitch views but no target language"):
        AugmentConfig(t_f=0, t_p=0, t_c=1)
