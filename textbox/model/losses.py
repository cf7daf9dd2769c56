"""The training token losses --loss names: cross_entropy (built in) and those a --user_dir module registers with
``textbox.register_loss`` (docs/extending.md).

No torch at import: the config check asks this module which names exist. A token loss is
``loss(logits, labels, label_smoothing) -> per-token losses``: ``logits`` [tokens, vocabulary] (float32) of the
scored target positions only, ``labels`` [tokens] their ids, the result [tokens]; textbox.model.loss sums it per
example and over the accumulation window exactly as it does the cross-entropy.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping

from textbox.utils.suggest import suggest

if TYPE_CHECKING:
    import torch

TokenLoss = Callable[["torch.Tensor", "torch.Tensor", float], "torch.Tensor"]
CROSS_ENTROPY = "cross_entropy"


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor, label_smoothing: float) -> torch.Tensor:
    """The built-in token loss: cross-entropy with --label_smoothing, one value per token."""
    import torch.nn.functional as F

    return F.cross_entropy(logits, labels, label_smoothing=label_smoothing, reduction="none")


_LOSSES: dict[str, TokenLoss] = {CROSS_ENTROPY: cross_entropy}


def register_loss(name: str, function: TokenLoss) -> None:
    """Make ``--loss=name`` (lowercase letters, digits, _) train with ``function(logits, labels, label_smoothing)``
    (see the module docstring). Called from a --user_dir module; ValueError for the built-in name or a bad one."""
    if not isinstance(name, str) or not name or name != name.lower() or not name.replace("_", "").isalnum():
        raise ValueError(f"register_loss: the name must be lowercase letters, digits and _, got {name!r}")
    if name == CROSS_ENTROPY:
        raise ValueError(f"register_loss: {name!r} is the built-in loss; choose another name")
    if not callable(function):
        raise ValueError(f"register_loss({name!r}): the function is not callable: {function!r}")
    _LOSSES[name] = function


def token_loss(name: str) -> TokenLoss:
    """The function of loss ``name`` (checked by ``problems`` before anything runs)."""
    return _LOSSES[name.lower()]


def problems(config: Mapping[str, object]) -> list[str]:
    """An unknown --loss, with a suggestion and the names available (textbox/checks.py asks this)."""
    name = str(config["loss"]).lower()
    if name in _LOSSES:
        return []
    where = getattr(config, "where", lambda key: f"--{key}")
    return [f"{where('loss')}: unknown loss {config['loss']!r}{suggest(name, _LOSSES)}; available: "
            f"{', '.join(sorted(_LOSSES))} (a --user_dir module may register more: docs/extending.md)"]
