"""How ``generate`` bounds the number of new tokens, so that both engines stop where transformers stops.

transformers 5 (``generate``'s ``_prepare_generated_length``): ``max_new_tokens`` and ``min_new_tokens`` count new
tokens only and take precedence over ``max_length`` and ``min_length``, which also count the decoder's input: the
decoder start token of an encoder-decoder, and for a decoder-only model the whole prompt as generate sees it, i.e.
the batch's left-padded width (an example gets fewer new tokens in a batch with a longer prompt; that is
transformers' rule and both engines follow it, on the same batches). Without either maximum, generate makes 20 new
tokens (its default ``max_length`` of 20, counted past the input).

A bound stored in a checkpoint's generation config must not outrank one the user gives in the other form:
``textbox.decoding.generate.generation_settings`` clears the stored ``max_new_tokens`` (``min_new_tokens``) when
the user gives ``max_length`` (``min_length``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from textbox.config import TextBoxUserError

if TYPE_CHECKING:
    from transformers import GenerationConfig

DEFAULT_MAX_NEW_TOKENS = 20  # transformers' default max_length, counted past the input when no maximum is set


def new_token_bounds(effective: GenerationConfig, decoder_input_width: int) -> tuple[int, int]:
    """(most, fewest) new tokens ``generate`` allows with the generation config ``effective`` when the decoder's
    input is ``decoder_input_width`` tokens wide (1, the start token, for an encoder-decoder; the batch's
    left-padded prompt width for a decoder-only model). A max_length that leaves no room is an error naming it,
    where generate would raise a ValueError mid-run."""
    if effective.max_new_tokens is not None:
        most = effective.max_new_tokens
    elif effective.max_length is not None:
        most = effective.max_length - decoder_input_width
        if most <= 0:
            raise TextBoxUserError(
                f"--generation_kwargs: max_length={effective.max_length} counts the decoder's input too, which is "
                f"{decoder_input_width} tokens here (for a decoder-only model the left-padded prompt: source, "
                f"prompts and separator), so no token is left to generate; use max_new_tokens, which counts new "
                f"tokens only, or raise max_length")
    else:
        most = DEFAULT_MAX_NEW_TOKENS
    if effective.min_new_tokens is not None:
        fewest = effective.min_new_tokens
    else:
        fewest = max(0, (effective.min_length or 0) - decoder_input_width)
    return most, fewest
