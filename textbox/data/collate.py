"""Batch tokenised examples of an encoder-decoder into padded tensors (textbox.data.collator_choice chooses the
collator of a run)."""
from __future__ import annotations

from typing import Any, Sequence

import torch

from textbox.utils.labels import IGNORE_INDEX
from textbox.utils.padding import right_padded


class Seq2SeqCollator:
    """Right-pads ``input_ids`` (with an attention mask) and ``labels`` (with -100) of a list of examples.

    An integer ``index`` column, if present, is kept so that generations can be matched to their examples.
    Decoder inputs are not built here: models derive them from ``labels``.
    """

    def __init__(self, pad_token_id: int):
        self.pad_token_id = pad_token_id

    def __call__(self, examples: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        input_ids = [example["input_ids"] for example in examples]
        lengths = torch.tensor([len(ids) for ids in input_ids])
        batch = {
            "input_ids": right_padded(input_ids, self.pad_token_id),
            "attention_mask": (torch.arange(int(lengths.max()))[None, :] < lengths[:, None]).long(),
            "labels": right_padded([example["labels"] for example in examples], IGNORE_INDEX),
        }
        if "index" in examples[0]:
            batch["index"] = torch.tensor([int(example["index"]) for example in examples], dtype=torch.long)
        return batch

