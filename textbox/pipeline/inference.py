"""Generation for arbitrary inputs: `--input_file` (one source per line, '-' for stdin) -> `--output_file`
(one generation per line in input order, '-' for stdout), with the same prompts, truncation, batching and
generation settings as a test run. With num_return_sequences=k > 1 all k generations per input also go to a file
of their own next to it (out.txt -> out_all.txt; the run directory's generation_all.txt when writing to stdout)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from textbox.config import Config, DataError
from textbox.data.lines import read_lines
from textbox.data.chat import Layout, encode_prompts
from textbox.data.tokenize import encode_within, uses_chat_template
from textbox.evaluator.evaluator import Evaluator
from textbox.decoding.generate import all_sequences_path
from textbox.tokens.languages import source_head
from textbox.trainer.context import RunContext
from textbox.utils.atomic import write_text_atomic

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase


def read_inputs(path: str) -> list[str]:
    """Lines of ``path`` (or stdin for '-'), trailing newline stripped; an empty line is an error naming it."""
    where = "stdin" if path == "-" else path
    lines = read_lines(path)
    if not lines:
        raise DataError(f"--input_file: {where} holds no lines to generate for")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise DataError(f"{where} line {number}: empty source; remove the line or give it text")
    return lines


def write_outputs(path: str, texts: list[str]) -> None:
    content = "".join(text + "\n" for text in texts)
    if path == "-":
        sys.stdout.write(content)
        sys.stdout.flush()
    else:
        write_text_atomic(Path(path), content)


def read_and_encode(config: Config, tokenizer: PreTrainedTokenizerBase) -> list[list[int]]:
    """The input lines as token ids, with the prompts and truncation of a test run (before any model is loaded:
    a bad input file fails first)."""
    if config.input_file is None:
        raise ValueError("read_and_encode reads --input_file: call it only when one is given")
    sources = read_inputs(config.input_file)
    if uses_chat_template(config, tokenizer):  # each line a user turn, the prompt ending with the generation prompt
        layout = Layout(config.system_prompt, config.prefix_prompt or "", config.suffix_prompt or "")
        return encode_prompts(tokenizer, sources, layout, config.src_len, config.truncate)
    return encode_within(tokenizer, sources, config.src_len, config.truncate, "src_len",
                         config.prefix_prompt or "", config.suffix_prompt or "", head=source_head(tokenizer, config))


def generate_for_inputs(run: RunContext, evaluator: Evaluator, model: torch.nn.Module,
                        inputs: list[list[int]]) -> list[str]:
    """Generate for every input with ``model``; write them in input order."""
    config, run_dir = run.config, run.run_dir
    loader = evaluator.loader([{"input_ids": ids, "labels": []} for ids in inputs])
    sequences = evaluator.generate(model, loader, "generate")
    texts = [candidates[0] for candidates in sequences]
    output = config.output_file or str(run_dir / "generation.txt")
    every = all_sequences_path(run_dir / "generation.txt" if output == "-" else Path(output))
    several = any(len(candidates) > 1 for candidates in sequences)
    if evaluator.accelerator.is_main_process:
        write_outputs(output, texts)
        if several:
            write_text_atomic(every, "".join(text + "\n" for candidates in sequences for text in candidates))
    run.logger.info(f"generated {len(texts)} outputs for {config.input_file}"
                + (f"; all {len(sequences[0])} per input in {every}" if several else ""))
    return texts
