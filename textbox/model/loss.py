"""The token loss of both model families, computed from logits so that label smoothing and per-example sums
(needed for an exact distributed validation loss) work the same for every model.

Encoder-decoders: the decoder reads the labels shifted right, and its logits at position t score label t.
Decoder-only LMs (textbox.data.causal): ``input_ids`` is source + eos + target and ``labels`` holds the target at the
same positions (-100 elsewhere); the logits at position t score token t + 1, so they are shifted by one, exactly
as Hugging Face's own causal-LM loss does.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from textbox.config.families import is_decoder_only_model
from textbox.utils.labels import IGNORE_INDEX


def decoder_inputs(model: torch.nn.Module, labels: torch.Tensor) -> torch.Tensor:
    """Shift labels right the way this model family expects (decoder start token, pad for -100)."""
    return model.prepare_decoder_input_ids_from_labels(labels=labels)


def forward_token_losses(model: torch.nn.Module, unwrapped: torch.nn.Module, batch: dict[str, torch.Tensor],
                         label_smoothing: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-example summed token loss and per-example target token counts, shape [batch] each."""
    if is_decoder_only_model(unwrapped):
        return _causal_token_losses(model, batch, label_smoothing)
    labels = batch["labels"]
    outputs = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    decoder_input_ids=decoder_inputs(unwrapped, labels), use_cache=False)
    logits = outputs.logits.float()
    # Flattened (tokens, vocab) rows: twice as fast as cross_entropy over a transposed (batch, vocab, time) view.
    token_loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE_INDEX,
                                 label_smoothing=label_smoothing, reduction="none").view(labels.shape)
    counts = (labels != IGNORE_INDEX).sum(dim=1)
    return token_loss.sum(dim=1), counts


def _causal_token_losses(model: torch.nn.Module, batch: dict[str, torch.Tensor],
                         label_smoothing: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits at t score labels at t + 1. Only the target positions' logit rows are scored (and cast to float):
    the source, usually the longer part, costs no loss memory."""
    outputs = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], use_cache=False)
    logits = outputs.logits
    # Prompt tuning (peft) puts virtual tokens before the input, and their logits first: the last columns are ours.
    logits = logits[:, logits.shape[1] - batch["input_ids"].shape[1]:-1]
    labels = batch["labels"][:, 1:]
    scored = labels != IGNORE_INDEX
    logits = logits[scored].float()
    token_loss = torch.zeros(labels.shape, dtype=logits.dtype, device=logits.device)
    token_loss[scored] = F.cross_entropy(logits, labels[scored], label_smoothing=label_smoothing, reduction="none")
    return token_loss.sum(dim=1), scored.sum(dim=1)


def target_tokens(batch: dict[str, torch.Tensor]) -> int:
    """Target tokens of a batch that count in the loss (padding excluded). For decoder-only batches too: their
    first position is always source or separator (textbox.data.causal), so the shift by one drops no target token."""
    return int((batch["labels"] != IGNORE_INDEX).sum())
