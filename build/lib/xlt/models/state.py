"""A module's state without what its model source already holds: frozen weights stay out of checkpoints.

A parameter that does not require grad is never trained, so it is what the source gave (e5-small's
word embeddings under ``optim.freeze_word_embeddings``: 96 M of its 118 M parameters, 384 of the
470 MB its full ``state_dict`` takes). A checkpoint written every epoch of every fit need not copy
them: ``trained_state`` leaves them out and names them, and ``load_trained`` loads such a state
into a module built from the same source (whose values for those names are the ones left out),
refusing any other gap. A checkpoint therefore needs its model source to be loaded, as a
fine-tuning checkpoint always did (its config names the source the classifier is rebuilt from).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch
from torch import nn


def frozen_names(module: nn.Module) -> list[str]:
    """The ``state_dict`` names of ``module``'s parameters that do not require grad, tied ones under
    each of their names."""
    return sorted(name for name, p in module.named_parameters(remove_duplicate=False) if not p.requires_grad)


def trained_state(module: nn.Module) -> tuple[dict[str, torch.Tensor], list[str]]:
    """``module``'s ``state_dict`` without its frozen parameters, and the names left out."""
    left_out = frozen_names(module)
    skip = set(left_out)
    return {name: value for name, value in module.state_dict().items() if name not in skip}, left_out


def load_trained(module: nn.Module, state: Mapping[str, torch.Tensor], from_source: Iterable[str] = ()) -> None:
    """Load ``state`` into ``module`` as a strict ``load_state_dict`` would, except that the names in
    ``from_source`` may be absent: they keep the values ``module`` was built with from its source.
    Raises ``RuntimeError`` (as a strict load does) naming any other missing or unexpected entry."""
    missing, unexpected = module.load_state_dict(state, strict=False)
    gaps = sorted(set(missing) - set(from_source))
    if gaps or unexpected:
        raise RuntimeError(f"the state does not fit {type(module).__name__}: missing {gaps or 'nothing'}, "
                           f"unexpected {sorted(unexpected) or 'nothing'}")
