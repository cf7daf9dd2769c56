"""RNN encoder-decoder baselines (``--model=rnn|gru|lstm``) with attention, trained from scratch.

The tokenizer is the ``transformer`` model's: a byte-level BPE trained on the training split (and cached).
The model is a transformers ``PreTrainedModel`` + ``GenerationMixin`` with its own config (model_type
``textbox_rnn``), registered with AutoConfig / AutoModelForSeq2SeqLM when this module is imported, so that
``save_pretrained`` / ``from_pretrained`` / ``generate`` (greedy, beam search, no_repeat_ngram_size, sampling)
work as for any Hugging Face encoder-decoder.

Architecture (sizes from ``config_kwargs``, defaults in configs/model/{rnn,gru,lstm}.yaml):

- one embedding matrix for source and target (one BPE vocabulary), also the output layer's weight when
  ``tie_embeddings`` (through a hidden -> embedding projection when the sizes differ);
- encoder: ``num_layers`` of the cell (``rnn`` = Elman tanh, ``gru``, ``lstm``; it follows ``--model``),
  bidirectional by default, padding kept out of every state (see RNNEncoder); its states are projected to
  ``hidden_size`` (the attention memory) and its final states, per layer, through a tanh bridge into the
  decoder's initial state (h, and for an LSTM also c, both from the encoder's final h);
- decoder: ``num_layers`` of the same cell with attention over the encoder states, padded positions masked:
  ``luong`` (multiplicative "general" score h_t^T W s after the RNN step, no input feeding, so training runs
  the decoder RNN over the whole target at once), ``bahdanau`` (additive score v^T tanh(W h_{t-1} + U s)
  before the step, the context fed into the RNN input: a Python loop over target positions in training) or
  ``none``; the output is tanh(W_c [h_t; context]) (h_t without attention) -> dropout -> vocabulary.

Generation keeps the decoder's recurrent state in an ``RNNDecoderState`` returned as ``past_key_values``: each
step feeds only the newest token, so a step costs O(1) in the length (recomputing the whole prefix would make a
sequence O(T^2)). It is not a transformers ``Cache``: ``_supports_default_dynamic_cache`` is False so that
``generate`` does not build a DynamicCache, ``prepare_inputs_for_generation`` feeds the last token whenever a
state exists, and beam search reorders it through ``_reorder_cache``. ``generate(..., use_cache=False)`` is
also correct: every step then reruns the decoder over the whole prefix. The encoder runs once per source
(``generate`` calls ``get_encoder()``); its output carries the attention keys (projected once, not per step)
and the decoder's initial state, all batch-first so that beam search can repeat them per beam.

Sources must be right-padded (the collators do that); a left-padded attention mask is rejected.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import (AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer, GenerationMixin, PretrainedConfig,
                          PreTrainedModel)
from transformers.modeling_outputs import Seq2SeqLMOutput
from transformers.utils import ModelOutput

from textbox.config import Config, TextBoxUserError
from textbox.data.split import Split
from textbox.model.keys import RNN_SETTINGS, config_settings
from textbox.model.loading import (from_pretrained, load_config, load_model, set_generation_length,
                                   set_special_token_ids)

CELLS = ("rnn", "gru", "lstm")
ATTENTIONS = ("luong", "bahdanau", "none")
# The settings config_kwargs may change (configs/model/<cell>.yaml documents them); the cell comes from --model.
SIZE_SETTINGS = RNN_SETTINGS


class RNNSeq2SeqConfig(PretrainedConfig):
    model_type = "textbox_rnn"

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


@dataclass
class RNNEncoderOutput(ModelOutput):
    """Batch-first tensors (``generate`` repeats dim 0 per beam): the attention memory [B, S, H], its keys
    [B, S, H] (None without attention) and the decoder's initial state [B, layers (x2 for an LSTM), H]."""

    last_hidden_state: torch.FloatTensor | None = None
    attention_keys: torch.FloatTensor | None = None
    decoder_init: torch.FloatTensor | None = None


class RNNDecoderState:
    """The decoder's recurrent state between generation steps, batch-first [B, layers (x2 for an LSTM), H],
    and the number of target positions it has consumed."""

    def __init__(self, hidden: torch.Tensor, length: int):
        self.hidden = hidden
        self.length = length

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.length

    def index_select(self, beam_idx: torch.LongTensor) -> "RNNDecoderState":
        return RNNDecoderState(self.hidden.index_select(0, beam_idx.to(self.hidden.device)), self.length)


def _make_rnn(cell: str, input_size: int, hidden_size: int, num_layers: int, dropout: float,
              bidirectional: bool) -> nn.RNNBase:
    kind = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[cell]
    return kind(input_size, hidden_size, num_layers=num_layers, batch_first=True, bidirectional=bidirectional,
                dropout=dropout if num_layers > 1 else 0.0)


def _source_lengths(attention_mask: torch.Tensor | None, input_ids: torch.Tensor) -> torch.Tensor:
    if attention_mask is None:
        return torch.full((input_ids.shape[0],), input_ids.shape[1], dtype=torch.long, device=input_ids.device)
    lengths = attention_mask.long().sum(dim=1)
    positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)
    if not torch.equal(attention_mask.bool(), positions[None, :] < lengths[:, None]):
        raise ValueError("the RNN encoder needs right-padded sources: attention_mask must be 1s followed by 0s")
    return lengths.clamp(min=1)


class RNNEncoder(nn.Module):
    """Embeddings (shared with the decoder) -> (bi)RNN layers -> memory, attention keys, decoder initial state.

    Each layer and direction is its own one-layer RNN run over the padded batch (not a packed sequence: PyTorch's
    CPU kernels for packed input copy the whole batch at every time step, which made training 1.3-1.7x slower).
    Right padding never reaches a valid position: the forward direction meets it only after the text, and the
    backward direction reads each text reversed within its own length. The final state of a direction is its
    output at the text's last position (for an LSTM that is h; the decoder's initial c is bridged from it too).
    """

    main_input_name = "input_ids"

    def __init__(self, config: RNNSeq2SeqConfig):
        super().__init__()
        self.config = config
        hidden, directions = config.hidden_size, 2 if config.bidirectional else 1
        self.embed_tokens = nn.Embedding(config.vocab_size, config.embedding_size, padding_idx=config.pad_token_id)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(
            _make_rnn(config.cell, config.embedding_size if layer == 0 else directions * hidden, hidden, 1, 0.0, False)
            for layer in range(config.num_layers) for _ in range(directions))
        self.memory = nn.Linear(directions * hidden, hidden) if config.bidirectional else nn.Identity()
        self.bridge = nn.Linear(directions * hidden, hidden)
        self.cell_bridge = nn.Linear(directions * hidden, hidden) if config.cell == "lstm" else None
        self.attention_key = (None if config.attention == "none" else
                              nn.Linear(hidden, hidden, bias=config.attention == "bahdanau"))

    def forward(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None,
                return_dict: bool | None = None, **kwargs: Any) -> RNNEncoderOutput:
        lengths = _source_lengths(attention_mask, input_ids)
        batch, steps = input_ids.shape
        positions = torch.arange(steps, device=input_ids.device)
        valid = positions[None, :] < lengths[:, None]
        # position p of a text reversed within its length; padding positions read position 0 (never used)
        reverse = (lengths[:, None] - 1 - positions[None, :]).clamp(min=0)[:, :, None]
        rows = torch.arange(batch, device=input_ids.device)
        directions = 2 if self.config.bidirectional else 1
        states = self.dropout(self.embed_tokens(input_ids))
        finals = []
        for layer in range(self.config.num_layers):
            if layer > 0:
                states = self.dropout(states)  # between layers, as a multi-layer torch RNN does
            ahead, _ = self.layers[layer * directions](states)
            outputs, last = [ahead], [ahead[rows, lengths - 1]]
            if directions == 2:
                backward, _ = self.layers[layer * directions + 1](
                    states.gather(1, reverse.expand(-1, -1, states.shape[-1])))
                last.append(backward[rows, lengths - 1])  # having read the text back to its first token
                outputs.append(backward.gather(1, reverse.expand(-1, -1, backward.shape[-1])))
            states = torch.cat(outputs, dim=-1)
            finals.append(torch.cat(last, dim=-1))
        memory = self.memory(states * valid[:, :, None].to(states.dtype))
        joined = torch.stack(finals, dim=1)  # [B, layers, directions x H]
        init = torch.tanh(self.bridge(joined))
        if self.cell_bridge is not None:
            init = torch.cat([init, self.cell_bridge(joined)], dim=1)
        keys = self.attention_key(memory) if self.attention_key is not None else None
        return RNNEncoderOutput(last_hidden_state=memory, attention_keys=keys, decoder_init=init)


class RNNDecoder(nn.Module):
    """The recurrent decoder with attention; it takes embedded tokens (the embeddings live in the encoder)."""

    def __init__(self, config: RNNSeq2SeqConfig):
        super().__init__()
        self.config = config
        hidden = config.hidden_size
        feed_context = config.attention == "bahdanau"
        self.rnn = _make_rnn(config.cell, config.embedding_size + (hidden if feed_context else 0), hidden,
                             config.num_layers, config.dropout, False)
        self.query = nn.Linear(hidden, hidden, bias=False) if config.attention == "bahdanau" else None
        self.score = nn.Linear(hidden, 1, bias=False) if config.attention == "bahdanau" else None
        self.combine = nn.Linear(2 * hidden, hidden) if config.attention != "none" else None
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, embedded: torch.Tensor, state: torch.Tensor, encoder: RNNEncoderOutput,
                source_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``embedded`` [B, T, E], ``state`` batch-first [B, L(x2), H] -> (attentional outputs [B, T, H], new state)."""
        hidden = self._to_rnn_state(state)
        embedded = self.dropout(embedded)
        mask = source_mask.bool() if source_mask is not None else None
        if self.config.attention == "bahdanau":
            outputs = []
            for t in range(embedded.shape[1]):
                top = (hidden[0] if isinstance(hidden, tuple) else hidden)[-1]  # [B, H]
                context = self._attend_additive(top, encoder, mask)
                output, hidden = self.rnn(torch.cat([embedded[:, t:t + 1], context[:, None]], dim=-1), hidden)
                outputs.append(torch.tanh(self.combine(torch.cat([output, context[:, None]], dim=-1))))
            result = torch.cat(outputs, dim=1)
        else:
            output, hidden = self.rnn(embedded, hidden)
            if self.config.attention == "luong":
                scores = torch.bmm(output, encoder.attention_keys.transpose(1, 2))  # [B, T, S]
                context = torch.bmm(self._masked_softmax(scores, mask), encoder.last_hidden_state)
                result = torch.tanh(self.combine(torch.cat([output, context], dim=-1)))
            else:
                result = output
        return self.dropout(result), self._from_rnn_state(hidden)

    def _attend_additive(self, query: torch.Tensor, encoder: RNNEncoderOutput,
                         mask: torch.Tensor | None) -> torch.Tensor:
        energy = self.score(torch.tanh(self.query(query)[:, None, :] + encoder.attention_keys)).squeeze(-1)  # [B, S]
        weights = self._masked_softmax(energy[:, None, :], mask)  # [B, 1, S]
        return torch.bmm(weights, encoder.last_hidden_state).squeeze(1)

    @staticmethod
    def _masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, :], torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1)

    def _to_rnn_state(self, state: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        layers = self.config.num_layers
        time_major = state.transpose(0, 1).contiguous()  # [L(x2), B, H]
        if self.config.cell == "lstm":
            return time_major[:layers].contiguous(), time_major[layers:].contiguous()
        return time_major

    def _from_rnn_state(self, hidden: Any) -> torch.Tensor:
        if isinstance(hidden, tuple):
            hidden = torch.cat(hidden, dim=0)
        return hidden.transpose(0, 1)


class RNNSeq2SeqModel(PreTrainedModel, GenerationMixin):
    """RNN encoder-decoder with attention (see the module docstring)."""

    config_class = RNNSeq2SeqConfig
    base_model_prefix = "rnn"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False
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
        """Labels shifted right behind the decoder start token; -100 (ignored positions) becomes pad."""
        shifted = labels.new_full(labels.shape, self.config.pad_token_id)
        shifted[:, 1:] = labels[:, :-1]
        shifted[:, 0] = self.config.decoder_start_token_id
        return shifted.masked_fill(shifted == -100, self.config.pad_token_id)

    # --- forward -------------------------------------------------------------------------------------------
    def forward(self, input_ids: torch.LongTensor | None = None, attention_mask: torch.Tensor | None = None,
                decoder_input_ids: torch.LongTensor | None = None,
                encoder_outputs: RNNEncoderOutput | tuple | None = None,
                past_key_values: RNNDecoderState | None = None, labels: torch.LongTensor | None = None,
                use_cache: bool | None = None, return_dict: bool | None = None, **kwargs: Any) -> Seq2SeqLMOutput:
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
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
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
                                      **kwargs: Any) -> dict[str, Any]:
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


AutoConfig.register(RNNSeq2SeqConfig.model_type, RNNSeq2SeqConfig, exist_ok=True)
AutoModelForSeq2SeqLM.register(RNNSeq2SeqConfig, RNNSeq2SeqModel, exist_ok=True)


def build(config: Config, train_split: Split | None) -> tuple[RNNSeq2SeqModel, Any]:
    """Reload ``config.model_path`` (an RNN checkpoint, e.g. a run's checkpoint_best) or train the transformer
    model's BPE tokenizer on ``train_split`` and build a fresh model whose cell is ``config.model``."""
    cell = config.model.lower()
    if config.model_path:  # the config_kwargs the user set apply over the checkpoint's (textbox.model.keys)
        settings = config_settings(config, "config_kwargs")
        model_config = load_config(config.model_path, settings)
        if not isinstance(model_config, RNNSeq2SeqConfig):
            raise TextBoxUserError(f"--model_path={config.model_path} holds a {model_config.model_type!r} model, "
                                   f"not an RNN encoder-decoder; give the checkpoint of an rnn/gru/lstm run or "
                                   f"choose the --model that matches it")
        if model_config.cell != cell:
            raise TextBoxUserError(f"--model_path={config.model_path} is a {model_config.cell} model, not "
                                   f"{cell}: use --model={model_config.cell}")
        try:
            model_config.validate_settings()
        except ValueError as error:
            raise TextBoxUserError(f"--config_kwargs of the {config.model} model: {error}") from error
        model = load_model(AutoModelForSeq2SeqLM, config.model_path, model_config, config.from_scratch)
        return model, from_pretrained(AutoTokenizer.from_pretrained, config.model_path)
    if train_split is None:
        raise TextBoxUserError(f"model {cell!r} starts untrained: use --do_train=True to train it, or "
                               f"--model_path=<a run's checkpoint directory, e.g. saved/<run>/checkpoint_best> "
                               f"to test a trained one")
    from textbox.model.tokenizer import train_bpe_tokenizer
    from textbox.model.transformer import _tokenizer_settings
    from textbox.utils.logging import get_logger

    model_config = rnn_config(config, vocab_size=0)  # settings checked before the tokenizer is trained
    texts = [*train_split.sources, *(references[0] for references in train_split.targets)]
    tokenizer = train_bpe_tokenizer(texts, **_tokenizer_settings(config), cache_dir=config.cache_dir,
                                    log=get_logger().info)
    model_config = rnn_config(config, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                              decoder_start_token_id=tokenizer.eos_token_id)  # as the transformer (BART) does
    model = RNNSeq2SeqModel(model_config)
    set_special_token_ids(model, pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                          eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.eos_token_id)
    set_generation_length(model, config.tgt_len)
    return model, tokenizer


def rnn_config(config: Config, vocab_size: int, **ids: int | None) -> RNNSeq2SeqConfig:
    """The model config of ``--model`` (the cell) with ``config_kwargs`` (configs/model/<cell>.yaml holds the
    defaults, merged key by key with the user's); an unknown or unusable setting is a TextBoxUserError."""
    settings = dict(config.config_kwargs)
    if "cell" in settings:
        raise TextBoxUserError("--config_kwargs: 'cell' is chosen by the model name: use --model=rnn, gru or lstm")
    unknown = sorted(set(settings) - set(SIZE_SETTINGS))
    if unknown:
        raise TextBoxUserError(f"--config_kwargs: {', '.join(unknown)} "
                               f"{'is not a setting' if len(unknown) == 1 else 'are not settings'} of the "
                               f"{config.model} model; it takes {', '.join(SIZE_SETTINGS)}")
    try:
        return RNNSeq2SeqConfig(vocab_size=max(vocab_size, 1), cell=config.model.lower(), **settings, **ids)
    except ValueError as error:
        raise TextBoxUserError(f"--config_kwargs of the {config.model} model: {error}") from error
