"""Conventions of the token loss that data, models, training and evaluation must agree on, declared once."""
from __future__ import annotations

# The label value that torch's cross-entropy and Hugging Face models leave out of the loss: padding, a decoder-only
# model's source positions, evaluation fillers.
IGNORE_INDEX = -100

# The figures computed from the loss alone (no generation): validation by these needs no decoding, and
# denoising pre-training (whose target is its input) is validated by nothing else.
LOSS_FIGURES = ("loss", "perplexity")

# A packed training batch's (textbox.data.packing) count of the examples that train something: its rows hold several
# each, so the training loop's examples figure cannot be its number of rows.
PACKED_EXAMPLES = "examples"
