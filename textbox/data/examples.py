"""The shapes of tokenised data: one example as a loader reads it, a tokenised split, a batch and what builds one.

Annotations only: the TypedDict is all that exists at run time, so importing this costs nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence, TypedDict, Union

if TYPE_CHECKING:
    import datasets
    import torch


class Example(TypedDict, total=False):
    """One tokenised example (textbox.data.tokenize) as a loader reads it."""

    input_ids: list[int]
    labels: list[int]
    prompt_labels: list[int]  # chat-templated examples only: labels of input_ids' earlier assistant turns, else -100
    index: int  # evaluation only: its position in the split (textbox.data.batching.EvalExamples)


# A tokenised split: a datasets.Dataset of input_ids/labels, or any sequence of such examples (tests, small inputs).
Examples = Union["datasets.Dataset", Sequence[Example]]
Batch = dict[str, "torch.Tensor"]  # padded tensors by name: input_ids, attention_mask, labels, ...
Collator = Callable[[Sequence[Example]], Batch]
