"""Batches: right padding with the pad id, attention mask, labels padded with -100, index kept."""
from __future__ import annotations

import torch

from textbox.data.collate import Seq2SeqCollator


def test_pads_inputs_and_labels():
    batch = Seq2SeqCollator(pad_token_id=1)([
        {"input_ids": [5, 6, 7], "labels": [8]},
        {"input_ids": torch.tensor([9]), "labels": torch.tensor([10, 11, 12], dtype=torch.int32)},
    ])
    assert set(batch) == {"input_ids", "attention_mask", "labels"}
    assert batch["input_ids"].tolist() == [[5, 6, 7], [9, 1, 1]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [[8, -100, -100], [10, 11, 12]]
    assert all(tensor.dtype == torch.long for tensor in batch.values())


def test_keeps_the_index_column():
    batch = Seq2SeqCollator(pad_token_id=0)([
        {"input_ids": [3], "labels": [4], "index": 7},
        {"input_ids": [3, 3], "labels": [4], "index": 2},
    ])
    assert batch["index"].tolist() == [7, 2]
    assert batch["input_ids"].tolist() == [[3, 0], [3, 3]]
