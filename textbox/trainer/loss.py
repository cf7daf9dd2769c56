"""The sequence-to-sequence loss, computed from logits so that label smoothing and per-example sums
(needed for an exact distributed validation loss) work the same for every model family."""
from __future__ import annotations

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100


def decoder_inputs(model: torch.nn.Module, labels: torch.Tensor) -> torch.Tensor:
    """Shift labels right the way this model family expects (decoder start token, pad for -100)."""
    return model.prepare_decoder_input_ids_from_labels(labels=labels)


def forward_token_losses(model: torch.nn.Module, unwrapped: torch.nn.Module, batch: dict[str, torch.Tensor],
                         label_smoothing: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-example summed token loss and per-example target token counts, shape [batch] each."""
    labels = batch["labels"]
    outputs = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    decoder_input_ids=decoder_inputs(unwrapped, labels), use_cache=False)
    logits = outputs.logits.float()
    # Flattened (tokens, vocab) rows: twice as fast as cross_entropy over a transposed (batch, vocab, time) view.
    token_loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE_INDEX,
                                 label_smoothing=label_smoothing, reduction="none").view(labels.shape)
    counts = (labels != IGNORE_INDEX).sum(dim=1)
    return token_loss.sum(dim=1), counts


def target_tokens(batch: dict[str, torch.Tensor]) -> int:
    """Target tokens of a batch that count in the loss (padding excluded)."""
    return int((batch["labels"] != IGNORE_INDEX).sum())
