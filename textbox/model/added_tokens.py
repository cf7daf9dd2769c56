"""--tokenizer_add_tokens: tokens added to the run's tokenizer (TextBox 2.0's multiwoz.yaml adds its 48
delexicalisation tokens, [value_name], [db_0], ...), each then read as one token, with the model's embeddings
grown to hold them (new rows initialised as transformers' resize does: the mean and covariance of the others).

Added as ordinary tokens (``add_tokens``, as TextBox 2.0 did): generated ones stay in the output text, which is what
a delexicalised reference holds. A checkpoint a run saved has them already: nothing is added again.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from textbox.config.errors import TextBoxUserError


def add_tokens(tokens: Sequence[str], model: Any, tokenizer: Any, log: Callable[[str], None]) -> None:
    """Add ``tokens`` that ``tokenizer`` lacks and grow ``model``'s embeddings to every id it can now write."""
    if not tokens:
        return
    added = tokenizer.add_tokens(list(tokens))
    rows = model.get_input_embeddings().weight.shape[0]
    needed = max(len(tokenizer), max(tokenizer.convert_tokens_to_ids(list(tokens))) + 1)
    if needed > rows:
        try:
            model.resize_token_embeddings(needed)
        except (NotImplementedError, AttributeError) as error:
            raise TextBoxUserError(f"--tokenizer_add_tokens: the {type(model).__name__} cannot grow its embeddings "
                                   f"({error}); drop tokenizer_add_tokens") from error
        model.config.vocab_size = model.get_input_embeddings().weight.shape[0]
    log(f"tokenizer_add_tokens: {added} of {len(tokens)} tokens added to the tokenizer (the others it had); "
        f"embeddings {rows} -> {model.get_input_embeddings().weight.shape[0]} rows")
