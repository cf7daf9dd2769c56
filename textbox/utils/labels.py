"""Conventions of the token loss that data, models, training and evaluation must agree on, declared once."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# The label value that torch's cross-entropy and Hugging Face models leave out of the loss: padding, a decoder-only
# model's source positions, evaluation fillers.
IGNORE_INDEX = -100

# The figures computed from the loss alone (no generation): validation by these needs no decoding, and
# denoising pre-training (whose target is its input) is validated by nothing else.
LOSS_FIGURES = ("loss", "perplexity")


def shifted_right(labels: torch.Tensor, start_token_id: int, pad_token_id: int) -> torch.Tensor:
    """An encoder-decoder's decoder inputs for ``labels`` ([batch, positions]): the labels shifted one position right
    behind ``start_token_id``, ignored positions (IGNORE_INDEX) read as padding. It is what transformers'
    ``shift_tokens_right`` (BART, M2M100, Blenderbot, ...) and T5's ``_shift_right`` compute."""
    shifted = labels.new_full(labels.shape, pad_token_id)
    shifted[:, 1:] = labels[:, :-1]
    shifted[:, 0] = start_token_id
    return shifted.masked_fill(shifted == IGNORE_INDEX, pad_token_id)
