"""Every objective computes its similarities in full precision, even under autocast."""

from __future__ import annotations

import pytest
import torch

from xlt.losses.contrastive import ContrastiveAlignment
from xlt.losses.multiview import MultiViewAlignment
from xlt.losses.semantic_alignment import SemanticAlignment
from xlt.losses.supcon import LabelAlignment, SupervisedContrastiveAlignment

from .naive_sentence import random_view_batch


@pytest.mark.parametrize("objective", [MultiViewAlignment("cosine"), ContrastiveAlignment(0.1),
                                       SupervisedContrastiveAlignment(0.1), LabelAlignment(0.1),
                                       SemanticAlignment(0.1)], ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_autocast_does_not_lower_precision(objective, dtype):
    batch = random_view_batch([2, 3, 1, 2], dim=64, seed=0, dtype=torch.float32)
    reference = objective(batch)
    with torch.autocast(device_type="cpu", dtype=dtype):
        under_autocast = objective(batch)
    assert under_autocast.dtype == torch.float32
    assert torch.allclose(under_autocast, reference, rtol=1e-5, atol=1e-6)
