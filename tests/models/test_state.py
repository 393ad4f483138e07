"""A state without its frozen parameters: what is left out, tied weights, and loading it back into a
module built from the same source, with any other gap refused."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from xlt.models import frozen_names, load_trained, trained_state


class Tied(nn.Module):
    """Word embeddings tied to an output layer, a trained layer and a buffer."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.words = nn.Embedding(5, 3)
        self.layer = nn.Linear(3, 3)
        self.out = nn.Linear(3, 5, bias=False)
        self.out.weight = self.words.weight
        self.register_buffer("scale", torch.full((3,), float(seed)))


def test_frozen_parameters_are_left_out_under_every_name_and_loaded_from_the_source():
    source = Tied(seed=0)
    trained = Tied(seed=0)
    trained.words.weight.requires_grad_(False)
    with torch.no_grad():  # training changed everything that requires grad, and the buffer
        trained.layer.weight.add_(1.0)
        trained.scale.add_(2.0)
    state, left_out = trained_state(trained)
    assert left_out == frozen_names(trained) == ["out.weight", "words.weight"]  # both names of the tied weight
    assert set(state) == {"layer.weight", "layer.bias", "scale"}

    rebuilt = Tied(seed=0)  # from the same source, nothing frozen
    load_trained(rebuilt, state, left_out)
    for name, value in trained.state_dict().items():
        assert torch.equal(rebuilt.state_dict()[name], value), name
    assert rebuilt.out.weight is rebuilt.words.weight  # still tied
    assert torch.equal(rebuilt.words.weight, source.words.weight)

    with pytest.raises(RuntimeError, match=r"missing \['out.weight', 'words.weight'\], unexpected nothing"):
        load_trained(Tied(seed=0), state)  # a gap not named as the source's
    with pytest.raises(RuntimeError, match=r"missing \['layer.bias'\]"):
        load_trained(Tied(seed=0), {k: v for k, v in state.items() if k != "layer.bias"}, left_out)
    with pytest.raises(RuntimeError, match=r"unexpected \['extra'\]"):
        load_trained(Tied(seed=0), {**state, "extra": torch.zeros(1)}, left_out)
    # Nothing frozen: the whole state_dict, nothing left out.
    whole, none = trained_state(Tied(seed=1))
    assert none == [] and whole.keys() == Tied(seed=1).state_dict().keys()
