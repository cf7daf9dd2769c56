"""The RNN encoder-decoder as a transformers model (``PreTrainedModel`` + ``GenerationMixin``), so that
``save_pretrained`` / ``from_pretrained`` / ``generate`` (greedy, beam search, no_repeat_ngram_size, sampling) work as
for any Hugging Face encoder-decoder; the layers are textbox.model.rnn_layers'.

Generation keeps the decoder's recurrent state in an ``RNNDecoderState`` returned as ``past_key_values``: each
step feeds only the newest token, so a step costs O(1) in the length (recomputing the whole prefix would make a
sequence O(T^2)). It is not a transformers ``Cache``: ``_supports_default_dynamic_cache`` is False so that
``generate`` does not build a DynamicCache, ``prepare_inputs_for_generation`` feeds the last token whenever a
state exists, and beam search reorders it through ``_reorder_cache``. ``generate(..., use_cache=False)`` is
also correct: every step then reruns the decoder over the whole prefix. The encoder runs once per source
(``generate`` calls ``get_encoder()``); its output carries the attention keys (projected once, not per step)
and the decoder's initial state, all batch-first so that beam search can repeat them per beam.

``register_auto_classes`` tells AutoConfig / AutoModelForSeq2SeqLM about model_type ``textbox_rnn``. It is an
explicit call (textbox.model.build.build_model and the RNN builder make it; so can anyone who loads an RNN
checkpoint with the Auto classes), never a side effect of importing this module.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModelForSeq2SeqLM, GenerationMixin, PreTrainedModel
from transformers.modeling_outputs import Seq2SeqLMOutput

from textbox.model.loss import shifted_right
from textbox.model.rnn_config import RNNSeq2SeqConfig
from textbox.model.rnn_layers import RNNDecoder, RNNDecoderState, RNNEncoder, RNNEncoderOutput
from textbox.utils.labels import IGNORE_INDEX


class RNNSeq2SeqModel(PreTrainedModel, GenerationMixin):
    """RNN encoder-decoder with attention (see the module docstring)."""

    config_class = RNNSeq2SeqConfig
    base_model_prefix = "rnn"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True  # each encoder layer and the decoder (textbox.model.rnn_layers)
    _no_split_modules: list[str] = []

    def __init__(self, config: RNNSeq2SeqConfig):
        super().__init__(config)
        self.encoder = RNNEncoder(config)
        self.decoder = RNNDecoder(config)
        projected = config.tie_embeddings and config.hidden_size != config.embedding_size
        self.output_projection = nn.Linear(config.hidden_size, config.embedding_size) if projected else None
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))
        output_size = config.embedding_size if config.tie_embeddings else config.hidden_size
        self.lm_head = None if config.tie_embeddings else nn.Linear(output_size, config.vocab_size, bias=False)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        """Uniform(-0.1, 0.1) for the recurrent and linear weights, N(0, 0.1) embeddings (pad row zero),
        zero biases: the usual RNN seq2seq initialisation."""
        if isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.1)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.Linear):
            nn.init.uniform_(module.weight, -0.1, 0.1)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.RNNBase):
            for name, parameter in module.named_parameters():
                if name.startswith("weight"):
                    nn.init.uniform_(parameter, -0.1, 0.1)
                else:
                    nn.init.zeros_(parameter)
        elif isinstance(module, RNNSeq2SeqModel):
            nn.init.zeros_(module.output_bias)

    # --- the pieces transformers looks for -----------------------------------------------------------------
    def get_encoder(self, modality: str | None = None) -> RNNEncoder:
        return self.encoder

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.embed_tokens = value

    def get_output_embeddings(self) -> None:
        return None  # the output layer is the embedding matrix itself (tie_embeddings) or lm_head

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the recurrent state travels as an RNNDecoderState, not a key/value cache

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """Labels shifted right behind the decoder start token; IGNORE_INDEX (ignored positions) becomes pad."""
        return shifted_right(labels, self.config.decoder_start_token_id, self.config.pad_token_id)

    # --- forward -------------------------------------------------------------------------------------------
    def forward(self, input_ids: torch.LongTensor | None = None, attention_mask: torch.Tensor | None = None,
                decoder_input_ids: torch.LongTensor | None = None,
                encoder_outputs: RNNEncoderOutput | tuple | None = None,
                past_key_values: RNNDecoderState | None = None, labels: torch.LongTensor | None = None,
                use_cache: bool | None = None, return_dict: bool | None = None, **kwargs: object) -> Seq2SeqLMOutput:
        if encoder_outputs is None:
            encoder_outputs = self.encoder(input_ids, attention_mask=attention_mask)
        elif not isinstance(encoder_outputs, RNNEncoderOutput):
            encoder_outputs = RNNEncoderOutput(*encoder_outputs)
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("give decoder_input_ids or labels")
            decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        state = past_key_values.hidden if past_key_values is not None else encoder_outputs.decoder_init
        consumed = past_key_values.length if past_key_values is not None else 0
        outputs, new_state = self.decoder(self.encoder.embed_tokens(decoder_input_ids), state, encoder_outputs,
                                          attention_mask)
        logits = self._logits(outputs)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                   ignore_index=IGNORE_INDEX)
        use_cache = self.config.use_cache if use_cache is None else use_cache
        cache = RNNDecoderState(new_state, consumed + decoder_input_ids.shape[1]) if use_cache else None
        return Seq2SeqLMOutput(loss=loss, logits=logits, past_key_values=cache,
                               encoder_last_hidden_state=encoder_outputs.last_hidden_state)

    def _logits(self, outputs: torch.Tensor) -> torch.Tensor:
        if self.lm_head is not None:
            return self.lm_head(outputs) + self.output_bias
        if self.output_projection is not None:
            outputs = self.output_projection(outputs)
        return F.linear(outputs, self.encoder.embed_tokens.weight, self.output_bias)

    # --- generation ----------------------------------------------------------------------------------------
    def prepare_inputs_for_generation(self, input_ids: torch.LongTensor, past_key_values: RNNDecoderState | None = None,
                                      attention_mask: torch.Tensor | None = None,
                                      encoder_outputs: RNNEncoderOutput | None = None, use_cache: bool | None = None,
                                      **kwargs: object) -> dict[str, object]:
        """Only the tokens the state has not consumed yet (the newest one, with a state); the whole prefix
        from the encoder's initial state otherwise (first step, or use_cache=False)."""
        if past_key_values is not None:
            input_ids = input_ids[:, past_key_values.length:]
        return {"decoder_input_ids": input_ids.contiguous(), "past_key_values": past_key_values,
                "attention_mask": attention_mask, "encoder_outputs": encoder_outputs,
                "use_cache": use_cache}

    def _reorder_cache(self, past_key_values: RNNDecoderState | None,
                       beam_idx: torch.LongTensor) -> RNNDecoderState | None:
        """Beam search keeps the states of the surviving beams, in their new order."""
        return past_key_values.index_select(beam_idx) if past_key_values is not None else None



def register_auto_classes() -> None:
    """Make AutoConfig / AutoModelForSeq2SeqLM load ``textbox_rnn`` checkpoints. Idempotent."""

    AutoConfig.register(RNNSeq2SeqConfig.model_type, RNNSeq2SeqConfig, exist_ok=True)
    AutoModelForSeq2SeqLM.register(RNNSeq2SeqConfig, RNNSeq2SeqModel, exist_ok=True)
