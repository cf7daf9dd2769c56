"""Examples rendered through a decoder-only model's chat template (textbox.tokens.chat says when).

A conversation is the example's turns: an optional system turn (the data's own, else --system_prompt), then the
source as the user turn (messages data: every turn before the last assistant turn), then the target as the assistant
turn. It is rendered by ``tokenizer.apply_chat_template`` and tokenised as one text, as ``apply_chat_template(...,
tokenize=True)`` does, so that training reads exactly what the template gives. The tokens are split where the last
assistant turn starts, i.e. after the template's generation prompt:

- ``input_ids``: every token before it: the prompt, what generation continues at test time (the collator adds no
  separator to it);
- ``labels``: the last assistant turn's tokens, up to and including the last end-of-sequence token the template
  writes in it (``<|im_end|>``, ``<|eot_id|>``: the one generation stops at); eos is added when the template writes
  none, so that the model learns to stop;
- ``prompt_labels``: one per ``input_ids`` token, -100 except on earlier assistant turns (messages data), labelled
  as the last one: the loss is on every assistant turn, nothing else.

Where a turn lies in the text is found by rendering the conversation up to each assistant turn with and without it
(templates render a conversation as its turns one after the other, which is checked); a token belongs to the turn
its first character is in (fast tokenizers' offsets).

--prefix_prompt and --suffix_prompt are written around the text of the last user turn, inside the template.

Lengths: ``src_len`` bounds the prompt; a longer one loses its oldest exchanges (user turn and answer, the system turn
kept), then text of its last user turn (its tail, or its head with truncate=head), rendered again until it fits.
``tgt_len`` bounds the labels, the closing eos kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from textbox.config.errors import ConfigError
from textbox.data.split import Message
from textbox.utils.labels import IGNORE_INDEX

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

Encoded = dict[str, list[int]]  # input_ids, labels, prompt_labels


def conversation(source: str, context: Sequence[Message] | None, system_prompt: str | None) -> list[Message]:
    """The turns before the answer: ``context`` (messages data) or the source as a user turn, after the system turn
    (the context's own, else ``system_prompt``)."""
    turns = list(context) if context is not None else [{"role": "user", "content": source}]
    if system_prompt is not None and turns[0]["role"] != "system":
        turns.insert(0, {"role": "system", "content": system_prompt})
    return turns


def render(tokenizer: PreTrainedTokenizerBase, turns: Sequence[Message], generation_prompt: bool) -> str:
    """The template's text of ``turns`` (with the generation prompt after them when ``generation_prompt``)."""
    from jinja2 import TemplateError

    try:
        text = tokenizer.apply_chat_template(list(turns), tokenize=False, add_generation_prompt=generation_prompt)
    except TemplateError as error:  # the template's own raise_exception (a role it refuses), or broken Jinja
        roles = ", ".join(turn["role"] for turn in turns)
        raise ConfigError([f"the chat template cannot render a conversation of turns {roles}: {error}; give "
                           f"another with --chat_template (or --use_chat_template=False)"]) from error
    if not isinstance(text, str):
        raise ConfigError([f"the chat template rendered {type(text).__name__}, not text"])
    return text


@dataclass(frozen=True)
class Layout:
    """What every conversation of a run shares: --system_prompt, and --prefix_prompt/--suffix_prompt, written
    around the last user turn's text (never truncated: ``_fit`` shortens the text between them)."""

    system_prompt: str | None = None
    prefix: str = ""
    suffix: str = ""

    def wrapped(self, turns: Sequence[Message]) -> list[Message]:
        """``turns`` with the prompts around the last user turn's text."""
        last = max(index for index, turn in enumerate(turns) if turn["role"] == "user")
        return [{"role": "user", "content": f"{self.prefix}{turn['content']}{self.suffix}"} if index == last
                else turn for index, turn in enumerate(turns)]


def encode_prompts(tokenizer: PreTrainedTokenizerBase, sources: Sequence[str], layout: Layout, limit: int,
                   truncate: str) -> list[list[int]]:
    """Prompts alone (--input_file): each source a user turn, rendered with the generation prompt, within ``limit``."""
    prompts = []
    for source in sources:
        turns = _fit(tokenizer, conversation(source, None, layout.system_prompt), layout, limit, truncate)
        prompts.append(_ids(tokenizer, render(tokenizer, layout.wrapped(turns), True)))
    return prompts


def encode_examples(tokenizer: PreTrainedTokenizerBase, sources: Sequence[str], targets: Sequence[str],
                    contexts: Sequence[Sequence[Message]] | None, layout: Layout, src_len: int,
                    tgt_len: int, truncate: str) -> dict[str, list[list[int]]]:
    """``input_ids``, ``labels`` and ``prompt_labels`` of every example (see the module docstring)."""
    if tgt_len < 2:
        raise ConfigError([f"tgt_len={tgt_len} leaves no room for target text besides the closing eos; raise "
                           f"--tgt_len"])
    columns: dict[str, list[list[int]]] = {"input_ids": [], "labels": [], "prompt_labels": []}
    for index, (source, target) in enumerate(zip(sources, targets)):
        turns = conversation(source, None if contexts is None else contexts[index], layout.system_prompt)
        turns = layout.wrapped(_fit(tokenizer, turns, layout, src_len, truncate))
        encoded = encode_conversation(tokenizer, [*turns, {"role": "assistant", "content": target}])
        labels = encoded["labels"]
        if len(labels) > tgt_len:
            labels = [*labels[:tgt_len - 1], labels[-1]]
        columns["input_ids"].append(encoded["input_ids"])
        columns["labels"].append(labels)
        columns["prompt_labels"].append(encoded["prompt_labels"])
    return columns


def encode_conversation(tokenizer: PreTrainedTokenizerBase, turns: Sequence[Message]) -> Encoded:
    """One conversation ending with an assistant turn, untruncated (see the module docstring)."""
    full = render(tokenizer, turns, False)
    spans = []  # (start, end) of each assistant turn's text in ``full``
    for index, turn in enumerate(turns):
        if turn["role"] == "assistant":
            before, through = render(tokenizer, turns[:index], True), render(tokenizer, turns[:index + 1], False)
            if not (through.startswith(before) and full.startswith(through)):
                raise ConfigError(["the chat template does not render a conversation as its turns one after the "
                                   "other (the text up to an assistant turn changes when later turns follow), so "
                                   "its assistant tokens cannot be told apart: give another with --chat_template"])
            spans.append((len(before), len(through)))
    encoding = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True, return_attention_mask=False)
    if "offset_mapping" not in encoding:
        raise ConfigError([f"chat templates need a fast tokenizer that reports character offsets; "
                           f"{type(tokenizer).__name__} does not"])
    ids, starts = encoding["input_ids"], [start for start, _ in encoding["offset_mapping"]]
    eos = tokenizer.eos_token_id
    turn_tokens = [[position for position, start in enumerate(starts) if first <= start < last]
                   for first, last in spans]
    labelled = [_through_last_eos(positions, ids, eos) for positions in turn_tokens]
    prompt_end = turn_tokens[-1][0] if turn_tokens[-1] else len(ids)
    earlier = {position for positions in labelled[:-1] for position in positions}
    labels = [ids[position] for position in labelled[-1]]
    if not labels or labels[-1] != eos:
        labels.append(eos)  # a template that writes no eos after a turn: the model must still learn to stop
    return {"input_ids": ids[:prompt_end], "labels": labels,
            "prompt_labels": [ids[position] if position in earlier else IGNORE_INDEX for position in range(prompt_end)]}


def _through_last_eos(positions: list[int], ids: list[int], eos: int) -> list[int]:
    """A turn's token positions up to its last eos (a template's line break after ``<|im_end|>`` is not the
    assistant's); all of them when it has none."""
    ends = [number for number, position in enumerate(positions) if ids[position] == eos]
    return positions[:ends[-1] + 1] if ends else positions


def _ids(tokenizer: PreTrainedTokenizerBase, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False, return_attention_mask=False)["input_ids"])


def _fit(tokenizer: PreTrainedTokenizerBase, turns: list[Message], layout: Layout, limit: int,
         truncate: str) -> list[Message]:
    """``turns`` whose prompt (rendered with the generation prompt, ``layout``'s prompts around the last user turn)
    fits ``limit`` tokens: the oldest exchanges dropped first, then text of the last user turn (see the module
    docstring)."""
    while True:
        excess = len(_ids(tokenizer, render(tokenizer, layout.wrapped(turns), True))) - limit
        if excess <= 0:
            return turns
        first = 1 if turns[0]["role"] == "system" else 0
        users = [index for index in range(first, len(turns)) if turns[index]["role"] == "user"]
        if len(users) > 1:
            turns = [*turns[:first], *turns[users[1]:]]  # the oldest exchange goes
            continue
        last = max(users)
        turns = [*turns[:last], {"role": "user", "content": _shorten(tokenizer, turns[last]["content"], excess,
                                                                        truncate, limit)}, *turns[last + 1:]]


def _shorten(tokenizer: PreTrainedTokenizerBase, text: str, excess: int, truncate: str, limit: int) -> str:
    """``text`` without its last (tail) or first (head) ``excess`` tokens, cut where a token ends."""
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    if excess < len(offsets):
        shortened = (text[:offsets[-excess - 1][1]] if truncate == "tail" else text[offsets[excess - 1][1]:])
        if shortened == text:  # offsets trimmed of the whitespace that ends the text: one character more
            shortened = text[:-1] if truncate == "tail" else text[1:]
        if shortened.strip():
            return shortened
    raise ConfigError([f"src_len={limit} leaves no room for the last user turn's text: the chat template's own "
                       f"tokens (and the system turn) take it all; raise --src_len"])
