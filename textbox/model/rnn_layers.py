"""The RNN encoder-decoder's layers: the encoder, the attentional decoder and the state they hand over.

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

Sources must be right-padded (the collators do that); a left-padded attention mask is rejected.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers.utils import ModelOutput

from textbox.model.rnn_config import RNNSeq2SeqConfig


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
    gradient_checkpointing = False  # set (with _gradient_checkpointing_func) by activation_checkpointing_enable

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
                return_dict: bool | None = None, **kwargs: object) -> RNNEncoderOutput:
        lengths = _source_lengths(attention_mask, input_ids)
        steps = input_ids.shape[1]
        positions = torch.arange(steps, device=input_ids.device)
        valid = positions[None, :] < lengths[:, None]
        # position p of a text reversed within its length; padding positions read position 0 (never used)
        reverse = (lengths[:, None] - 1 - positions[None, :]).clamp(min=0)[:, :, None]
        states = self.dropout(self.embed_tokens(input_ids))
        finals = []
        for layer in range(self.config.num_layers):
            if layer > 0:
                states = self.dropout(states)  # between layers, as a multi-layer torch RNN does
            if self.gradient_checkpointing and self.training and torch.is_grad_enabled():
                states, last = self._gradient_checkpointing_func(self._layer, layer, states, lengths, reverse)
            else:
                states, last = self._layer(layer, states, lengths, reverse)
            finals.append(last)
        memory = self.memory(states * valid[:, :, None].to(states.dtype))
        joined = torch.stack(finals, dim=1)  # [B, layers, directions x H]
        init = torch.tanh(self.bridge(joined))
        if self.cell_bridge is not None:
            init = torch.cat([init, self.cell_bridge(joined)], dim=1)
        keys = self.attention_key(memory) if self.attention_key is not None else None
        return RNNEncoderOutput(last_hidden_state=memory, attention_keys=keys, decoder_init=init)

    def _layer(self, layer: int, states: torch.Tensor, lengths: torch.Tensor,
               reverse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One layer, both directions: (its outputs [B, S, directions x H], its final states [B, directions x H])."""
        directions = 2 if self.config.bidirectional else 1
        rows = torch.arange(states.shape[0], device=states.device)
        ahead, _ = self.layers[layer * directions](states)
        outputs, last = [ahead], [ahead[rows, lengths - 1]]
        if directions == 2:
            backward, _ = self.layers[layer * directions + 1](
                states.gather(1, reverse.expand(-1, -1, states.shape[-1])))
            last.append(backward[rows, lengths - 1])  # having read the text back to its first token
            outputs.append(backward.gather(1, reverse.expand(-1, -1, backward.shape[-1])))
        return torch.cat(outputs, dim=-1), torch.cat(last, dim=-1)


class RNNDecoder(nn.Module):
    """The recurrent decoder with attention; it takes embedded tokens (the embeddings live in the encoder)."""

    gradient_checkpointing = False  # set (with _gradient_checkpointing_func) by activation_checkpointing_enable

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
        if self.gradient_checkpointing and self.training and torch.is_grad_enabled():
            return self._gradient_checkpointing_func(self._decode, embedded, state, encoder, source_mask)
        return self._decode(embedded, state, encoder, source_mask)

    def _decode(self, embedded: torch.Tensor, state: torch.Tensor, encoder: RNNEncoderOutput,
                source_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
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

    def _from_rnn_state(self, hidden: torch.Tensor | tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        if isinstance(hidden, tuple):
            hidden = torch.cat(hidden, dim=0)
        return hidden.transpose(0, 1)

