"""Packed training batches for decoder-only models (--packing): several examples per row instead of one row each.

A padded batch costs ``examples x longest joined example`` tokens however short most examples are; a packed batch
lays the same examples end to end in rows as wide as that longest example (first-fit, longest first), so the batch
holds the same tokens in fewer rows and the model computes little padding. Each row carries ``position_ids`` that
restart at 0 for every example and no attention mask: transformers then builds a mask in which a token attends
only to earlier tokens of its own example (transformers.masking_utils: ``find_packed_sequence_indices`` in
``create_causal_mask``, which the eager and sdpa attention of --attn_implementation both follow; transformers'
flash attention would read packed position ids in a batch of one row only). Every token
therefore sees what it sees alone, at the position it has alone, and the loss (summed over the same target tokens,
divided by their same number) equals the padded batch's up to float rounding. Only models whose attention follows
this are accepted (textbox.model.causal_lm's ``PACKABLE_MODEL_TYPES``).

The label of each example's first token is ignored: alone, nothing scores it (the loss shifts logits by one);
packed, the previous example's last logits would.

Only training batches are packed: validation loss, decoding and testing read the padded batches of
textbox.data.collate. The batches themselves (which examples, in which order) are the sampler's, unchanged, and
packing depends on them alone, so a resumed run packs the batches an uninterrupted one would.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

import torch

from textbox.utils.labels import IGNORE_INDEX, PACKED_EXAMPLES

if TYPE_CHECKING:
    from textbox.data.examples import Example


class JoinsExamples(Protocol):
    """What packing needs of textbox.data.collate's CausalLMCollator (which imports this module): one example as
    a sequence, and the padding id."""

    pad_token_id: int

    def joined(self, example: Example) -> tuple[list[int], list[int]]: ...


class PackedCausalLMCollator:
    """Packs the examples of one training batch into rows (see the module docstring); ``joined`` is the run's
    CausalLMCollator, which says how one example reads as a sequence."""

    def __init__(self, joined: JoinsExamples):
        self.joined = joined

    def __call__(self, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
        sequences = [self.joined.joined(example) for example in examples]
        width = max(len(ids) for ids, _ in sequences)
        rows = pack(sorted(range(len(sequences)), key=lambda i: (-len(sequences[i][0]), i)),
                    [len(ids) for ids, _ in sequences], width)
        used = max(sum(len(sequences[i][0]) for i in row) for row in rows)
        input_ids = torch.full((len(rows), used), self.joined.pad_token_id, dtype=torch.long)
        labels = torch.full((len(rows), used), IGNORE_INDEX, dtype=torch.long)
        position_ids = torch.zeros((len(rows), used), dtype=torch.long)
        for row, members in enumerate(rows):
            start = 0
            for member in members:
                ids, member_labels = sequences[member]
                end = start + len(ids)
                input_ids[row, start:end] = torch.tensor(ids, dtype=torch.long)
                labels[row, start:end] = torch.tensor(member_labels, dtype=torch.long)
                labels[row, start] = IGNORE_INDEX  # scored by nothing alone (see the module docstring)
                position_ids[row, start:end] = torch.arange(len(ids))
                start = end
            position_ids[row, start:] = torch.arange(used - start)  # trailing padding: a sequence of its own
        trained = sum(any(label != IGNORE_INDEX for label in member_labels[1:]) for _, member_labels in sequences)
        return {"input_ids": input_ids, "labels": labels, "position_ids": position_ids,
                PACKED_EXAMPLES: torch.tensor(trained, dtype=torch.long)}


def pack(order: Sequence[int], lengths: Sequence[int], width: int) -> list[list[int]]:
    """Items taken in ``order`` into rows of at most ``width`` total length, each into the first row it fits
    (first-fit; longest first, it wastes little). Deterministic: the same items give the same rows."""
    rows: list[list[int]] = []
    free: list[int] = []
    for item in order:
        length = lengths[item]
        for row, room in enumerate(free):
            if length <= room:
                rows[row].append(item)
                free[row] -= length
                break
        else:
            rows.append([item])
            free.append(width - length)
    return rows
