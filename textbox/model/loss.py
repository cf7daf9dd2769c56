"""The token loss of both model families, computed from logits so that label smoothing and per-example sums
(needed for an exact distributed validation loss) work the same for every model.

Encoder-decoders: the decoder reads the labels shifted right, and its logits at position t score label t.
Decoder-only LMs (textbox.data.collate): ``input_ids`` is source + eos + target and ``labels`` holds the target at the
same positions (-100 elsewhere); the logits at position t score token t + 1, so they are shifted by one, exactly
as Hugging Face's own causal-LM loss does.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

import torch
import torch.nn.functional as F

from textbox.config import TextBoxUserError
from textbox.config.families import is_decoder_only_model
from textbox.model.losses import TokenLoss
from textbox.utils.labels import IGNORE_INDEX, PACKED_EXAMPLES


def decoder_inputs(model: torch.nn.Module, labels: torch.Tensor) -> torch.Tensor:
    """The decoder inputs the model's own forward would build from ``labels``, so that training reads targets as the
    family was pretrained to. Classes with ``prepare_decoder_input_ids_from_labels`` say it themselves (mBART and
    PLBART rotate the last token to the front instead of starting with decoder_start_token_id); the others
    (M2M100 and NLLB, Blenderbot, Blenderbot-Small in transformers 5) shift right behind decoder_start_token_id
    inside their forward, which ``shifted_right`` repeats."""
    prepare = getattr(model, "prepare_decoder_input_ids_from_labels", None)
    if prepare is not None:
        return prepare(labels=labels)
    config = model.config
    start = getattr(config, "decoder_start_token_id", None)
    if start is None:
        raise ValueError(f"{type(model).__name__} has no decoder_start_token_id in its config, which starts the "
                         f"decoder's inputs; set it with --config_kwargs={{'decoder_start_token_id': <id>}}")
    return shifted_right(labels, start, config.pad_token_id)


def shifted_right(labels: torch.Tensor, start_token_id: int, pad_token_id: int) -> torch.Tensor:
    """An encoder-decoder's decoder inputs for ``labels`` ([batch, positions]): the labels shifted one position right
    behind ``start_token_id``, ignored positions (IGNORE_INDEX) read as padding. It is what transformers'
    ``shift_tokens_right`` (BART, M2M100, Blenderbot, ...) and T5's ``_shift_right`` compute."""
    shifted = labels.new_full(labels.shape, pad_token_id)
    shifted[:, 1:] = labels[:, :-1]
    shifted[:, 0] = start_token_id
    return shifted.masked_fill(shifted == IGNORE_INDEX, pad_token_id)


def forward_token_losses(model: torch.nn.Module, unwrapped: torch.nn.Module, batch: dict[str, torch.Tensor],
                         label_smoothing: float = 0.0, loss: TokenLoss | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-example summed token loss and per-example target token counts, shape [batch] each. ``loss``: a token
    loss registered for --loss (textbox.model.losses); None is the cross-entropy."""
    if is_decoder_only_model(unwrapped):
        return _causal_token_losses(model, unwrapped, batch, label_smoothing, loss)
    labels = batch["labels"]
    scored = labels != IGNORE_INDEX
    with scored_rows_only(model, unwrapped, scored) as packing:
        outputs = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                        decoder_input_ids=decoder_inputs(unwrapped, labels), use_cache=False)
    logits = outputs.logits.float()
    if packing.packed:
        _check_packed(logits, scored, unwrapped)
        token_loss = torch.zeros(labels.shape, dtype=logits.dtype, device=logits.device)
        token_loss[scored] = _per_token(loss, logits[0], labels[scored], label_smoothing)
    elif loss is not None:
        token_loss = torch.zeros(labels.shape, dtype=logits.dtype, device=logits.device)
        token_loss[scored] = _per_token(loss, logits[scored], labels[scored], label_smoothing)
    else:
        # Flattened (tokens, vocab) rows: twice as fast as cross_entropy over a transposed (batch, vocab, time) view.
        token_loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                     ignore_index=IGNORE_INDEX, label_smoothing=label_smoothing,
                                     reduction="none").view(labels.shape)
    return token_loss.sum(dim=1), scored.sum(dim=1)


def _check_packed(logits: torch.Tensor, scored: torch.Tensor, unwrapped: torch.nn.Module) -> None:
    if logits.shape[:2] != (1, int(scored.sum())):
        raise RuntimeError(f"{type(unwrapped).__name__} reshaped its output layer's result ({tuple(logits.shape)} for "
                           f"{int(scored.sum())} scored positions): scored_rows_only does not fit it")


@dataclass
class Packing:
    """Whether the output layer projected only the scored positions in the block (set by its hook)."""

    packed: bool = False


@contextlib.contextmanager
def scored_rows_only(model: torch.nn.Module, unwrapped: torch.nn.Module, scored: torch.Tensor) -> Iterator[Packing]:
    """Within the block, the model's output layer (a Linear: the projection to the vocabulary, the largest matrix
    product of a small model, ~45% of a training step of the default d=128 model with its log-softmax) projects
    only the positions ``scored`` marks ([batch, positions]: an encoder-decoder's decoder positions, a decoder-only
    model's input positions; virtual tokens that prompt tuning puts first are left out) instead of every padded
    one: its input [batch, positions, d] becomes [1, scored, d], and so do the logits. The yielded Packing says
    whether it did: not for a batch without padding, an output layer that is no Linear (the RNN, adapters wrapped
    around it), a torch.compile'd forward (a hook made per batch would be compiled again every step), or an output
    layer called with another shape (ProphetNet projects its [batch, streams, positions, d] n-gram streams at once):
    the model's own logits are then left as they are."""
    packing = Packing()
    head = unwrapped.get_output_embeddings() if hasattr(unwrapped, "get_output_embeddings") else None
    if type(head) is not torch.nn.Linear or hasattr(model, "_orig_mod") or bool(scored.all()):
        yield packing
        return

    def keep_scored(module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...] | None:
        hidden = args[0]
        extra = hidden.shape[1] - scored.shape[1] if hidden.dim() == 3 else -1
        if extra < 0 or hidden.shape[0] != scored.shape[0] or packing.packed:
            return None  # not the [batch, positions, d] call this was made for, or a second call: left alone
        packing.packed = True
        return (hidden[:, extra:][scored].unsqueeze(0), *args[1:])

    handle = head.register_forward_pre_hook(keep_scored)
    try:
        yield packing
    finally:
        handle.remove()


def _causal_token_losses(model: torch.nn.Module, unwrapped: torch.nn.Module, batch: dict[str, torch.Tensor],
                         label_smoothing: float, loss: TokenLoss | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits at t score labels at t + 1. Only the target positions are projected onto the vocabulary (and cast to
    float): the source, usually the longer part, costs no output-layer work and no loss memory."""
    labels = batch["labels"][:, 1:]
    scored = labels != IGNORE_INDEX
    projected = torch.cat([scored, scored.new_zeros(scored.shape[0], 1)], dim=1)  # the last input scores nothing
    with scored_rows_only(model, unwrapped, projected) as packing:
        outputs = model(input_ids=batch["input_ids"], **_attention(batch), use_cache=False)
    logits = outputs.logits
    if packing.packed:
        _check_packed(logits, scored, unwrapped)
        logits = logits[0].float()
    else:
        # Prompt tuning (peft) puts virtual tokens before the input, and their logits first: the last columns are ours.
        logits = logits[:, logits.shape[1] - batch["input_ids"].shape[1]:-1]
        logits = logits[scored].float()
    token_loss = torch.zeros(labels.shape, dtype=logits.dtype, device=logits.device)
    token_loss[scored] = _per_token(loss, logits, labels[scored], label_smoothing)
    return token_loss.sum(dim=1), scored.sum(dim=1)


def _attention(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """How the model keeps examples apart: a padded batch's attention mask, or a packed batch's position ids
    (textbox.data.packing: no mask, so that transformers reads the examples from positions restarting at 0)."""
    if "position_ids" in batch:
        return {"position_ids": batch["position_ids"]}
    return {"attention_mask": batch["attention_mask"]}


def _per_token(loss: TokenLoss | None, logits: torch.Tensor, labels: torch.Tensor,
               label_smoothing: float) -> torch.Tensor:
    """One loss per scored token: the cross-entropy, or a registered loss's, whose result is checked (a wrong
    shape would otherwise be broadcast into a silently wrong sum)."""
    if loss is None:
        return F.cross_entropy(logits, labels, label_smoothing=label_smoothing, reduction="none")
    values = loss(logits, labels, label_smoothing)
    if not isinstance(values, torch.Tensor) or values.shape != labels.shape:
        shape = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
        raise TextBoxUserError(f"the --loss function {getattr(loss, '__qualname__', loss)!r} returned {shape} for "
                               f"{tuple(labels.shape)} tokens: it must return one loss per token")
    return values


def trained_examples(batch: dict[str, torch.Tensor]) -> int:
    """Examples of a batch that train something (fillers, all labels ignored, count none): its rows, or what a
    packed batch (textbox.data.packing, several examples a row) says it holds."""
    if PACKED_EXAMPLES in batch:
        return int(batch[PACKED_EXAMPLES])
    return int((batch["labels"] != IGNORE_INDEX).any(dim=1).sum())


def target_tokens(batch: dict[str, torch.Tensor]) -> int:
    """Target tokens of a batch that count in the loss (padding excluded). For decoder-only batches too: their
    first position is always source or separator (textbox.data.collate), so the shift by one drops no target token."""
    return int((batch["labels"] != IGNORE_INDEX).sum())
