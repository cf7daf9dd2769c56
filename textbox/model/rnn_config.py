"""The RNN encoder-decoder's model config (model_type ``textbox_rnn``): the sizes, the cell and the attention,
checked on construction. Apart from the layers and the model so that both (and the builder) read it, and so that
a config is made and checked without building a model.
"""
from __future__ import annotations

from typing import Any

from transformers import PretrainedConfig

from textbox.config.families import RNN, RNN_MODEL_TYPE, names_of

CELLS = names_of(RNN)  # the --model names are the cells: rnn, gru, lstm
ATTENTIONS = ("luong", "bahdanau", "none")


class RNNSeq2SeqConfig(PretrainedConfig):
    model_type = RNN_MODEL_TYPE

    def __init__(self, vocab_size: int = 8000, cell: str = "gru", embedding_size: int = 256, hidden_size: int = 256,
                 num_layers: int = 2, bidirectional: bool = True, dropout: float = 0.3, attention: str = "luong",
                 tie_embeddings: bool = True, pad_token_id: int | None = 1, bos_token_id: int | None = 0,
                 eos_token_id: int | None = 2, decoder_start_token_id: int | None = 2, use_cache: bool = True,
                 **kwargs: Any):
        self.vocab_size = vocab_size
        self.cell = cell
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bidirectional = bidirectional
        self.dropout = dropout
        self.attention = attention
        self.tie_embeddings = tie_embeddings
        self.pad_token_id = pad_token_id
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self.decoder_start_token_id = decoder_start_token_id
        self.use_cache = use_cache
        kwargs["is_encoder_decoder"] = True
        kwargs.setdefault("tie_word_embeddings", False)  # tying is done in forward, not by transformers
        super().__init__(**kwargs)
        self.validate_settings()

    def validate_settings(self) -> None:
        """Values the model cannot be built with, as one ValueError (the builder turns it into a user error)."""
        problems = []
        if self.cell not in CELLS:
            problems.append(f"cell must be one of {', '.join(CELLS)}, got {self.cell!r}")
        if self.attention not in ATTENTIONS:
            problems.append(f"attention must be one of {', '.join(ATTENTIONS)}, got {self.attention!r}")
        for name in ("embedding_size", "hidden_size", "num_layers", "vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            problems.append(f"dropout must be in [0, 1), got {self.dropout!r}")
        for name in ("bidirectional", "tie_embeddings"):
            if not isinstance(getattr(self, name), bool):
                problems.append(f"{name} must be True or False, got {getattr(self, name)!r}")
        if problems:
            raise ValueError("; ".join(problems))

