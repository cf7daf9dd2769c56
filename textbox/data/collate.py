"""Batches: tokenised examples into padded tensors, in the layout of the run's model, and the choice of that layout
(``make_collator``).

Denoising pre-training noises sources on the fly (textbox.data.denoising) and pads them as an encoder-decoder's;
decoder-only models read source and target as one sequence (CausalLMCollator); encoder-decoders take them apart
(Seq2SeqCollator). The choice asks the family table (textbox.config.families), as tokenisation does, so that targets
and batches always agree.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import torch

from textbox.config.families import is_decoder_only
from textbox.data.denoising import DenoisingCollator
from textbox.data.packing import PackedCausalLMCollator
from textbox.tokens.chat import templating
from textbox.utils.labels import IGNORE_INDEX
from textbox.utils.padding import right_padded

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from textbox.config import Config
    from textbox.data.examples import Example


def make_collator(config: Config, tokenizer: PreTrainedTokenizerBase, training: bool = False
                  ) -> DenoisingCollator | CausalLMCollator | PackedCausalLMCollator | Seq2SeqCollator:
    """The batch builder for this run (see the module docstring); ``training``: for the training batches, which
    --packing packs (textbox.data.packing), while evaluation always reads padded ones."""
    if config.pretrain_task == "denoising":
        return DenoisingCollator(config, tokenizer, Seq2SeqCollator(tokenizer.pad_token_id))
    if is_decoder_only(config.model):
        collator = CausalLMCollator(tokenizer, templated=templating(config, tokenizer))
        return PackedCausalLMCollator(collator) if training and config.packing else collator
    return Seq2SeqCollator(tokenizer.pad_token_id)


class Seq2SeqCollator:
    """Right-pads ``input_ids`` (with an attention mask) and ``labels`` (with -100) of a list of examples.

    An integer ``index`` column, if present, is kept so that generations can be matched to their examples.
    Decoder inputs are not built here: models derive them from ``labels``.
    """

    def __init__(self, pad_token_id: int):
        self.pad_token_id = pad_token_id

    def __call__(self, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
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


class CausalLMCollator:
    """Batches for decoder-only LMs: source and target joined into one sequence, the loss on the target only.

    The sequence is ``source eos target eos``. The eos between source and target is the separator: without one the
    model must infer from the tokens alone where the source ends (tiny 32-wide GPT-2 / Llama, 480 steps on the
    reverse-the-words task: 3 and 2 of 13 test outputs empty without it, none with it; BLEU 2.5 -> 4.1 and
    6.0 -> 8.6). A source that already ends with eos (tokenizers whose template adds ``</s>``, like the project's own
    BPE) gets no second one; an empty source is the separator alone.

    Max lengths are split between source and target: ``src_len`` bounds the source part and ``tgt_len`` the target
    part (its closing eos included), as textbox.data.tokenize encodes them; with the separator a joined sequence is
    at most ``src_len + 1 + tgt_len`` tokens.

    Every batch carries two views of its examples:

    - for the loss, ``input_ids`` = source + eos + target, right-padded, with ``attention_mask`` and ``labels`` (the
      same positions; -100 on the source, the separator and padding). The model's logits at position t predict token
      t + 1, and textbox.model.loss shifts them so;
    - for generation, ``prompt_ids`` = source + eos alone, LEFT-padded (every prompt ends at the last column, where
      generation continues), with ``prompt_attention_mask``.

    Padding positions are found from lengths, never from the pad id, which may equal eos. Evaluation fillers (labels
    all -100, see textbox.data.batching.EvalExamples) keep their length with padding tokens in the target part, and
    add nothing to the loss.

    ``templated``: the examples were rendered through a chat template (textbox.data.chat): the source is the prompt
    as the template writes it, ending with its generation prompt, so no separator is added; an example's
    ``prompt_labels`` (earlier assistant turns) label the source part.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, templated: bool = False):
        if tokenizer.eos_token_id is None:
            raise ValueError("CausalLMCollator needs a tokenizer with an eos token (it separates and ends targets)")
        self.eos_token_id = int(tokenizer.eos_token_id)
        self.pad_token_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_token_id)
        self.templated = templated

    def prompt(self, source: Sequence[int]) -> list[int]:
        """The source followed by the separating eos (not repeated when the source already ends with it); a
        templated source as it is."""
        tokens = [int(token) for token in source]
        if self.templated:
            return tokens
        return tokens if tokens and tokens[-1] == self.eos_token_id else [*tokens, self.eos_token_id]

    def joined(self, example: Example) -> tuple[list[int], list[int]]:
        """One example's model input (source, separator, target; ignored target tokens read as padding) and its
        labels at the same positions (-100 on the source and separator, except a chat example's
        ``prompt_labels``: its earlier assistant turns)."""
        source = self.prompt(example["input_ids"])
        target = [int(token) for token in example["labels"]]
        ids = source + [self.pad_token_id if token == IGNORE_INDEX else token for token in target]
        prompt_labels = example.get("prompt_labels")
        labels = ([int(token) for token in prompt_labels] if prompt_labels is not None
                  else [IGNORE_INDEX] * len(source)) + target
        return ids, labels

    def __call__(self, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
        sources = [self.prompt(example["input_ids"]) for example in examples]
        count = len(examples)
        rows = [self.joined(example) for example in examples]
        joined_length = max(len(ids) for ids, _ in rows)
        prompt_length = max(len(source) for source in sources)

        input_ids = torch.full((count, joined_length), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((count, joined_length), dtype=torch.long)
        labels = torch.full((count, joined_length), IGNORE_INDEX, dtype=torch.long)
        prompt_ids = torch.full((count, prompt_length), self.pad_token_id, dtype=torch.long)
        prompt_attention_mask = torch.zeros((count, prompt_length), dtype=torch.long)
        for row, ((ids, row_labels), source) in enumerate(zip(rows, sources)):
            input_ids[row, :len(ids)] = torch.tensor(ids, dtype=torch.long)
            attention_mask[row, :len(ids)] = 1
            labels[row, :len(ids)] = torch.tensor(row_labels, dtype=torch.long)
            prompt_ids[row, prompt_length - len(source):] = torch.tensor(source, dtype=torch.long)
            prompt_attention_mask[row, prompt_length - len(source):] = 1
        batch = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels,
                 "prompt_ids": prompt_ids, "prompt_attention_mask": prompt_attention_mask}
        if "index" in examples[0]:
            batch["index"] = torch.tensor([int(example["index"]) for example in examples], dtype=torch.long)
        return batch
