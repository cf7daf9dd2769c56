"""Generation for arbitrary inputs: `--input_file` (one source per line, '-' for stdin) -> `--output_file`
(one generation per line in input order, '-' for stdout), with the same prompts, truncation, batching and
generation settings as a test run. With num_return_sequences=k > 1 all k generations per input also go to a file
of their own next to it (out.txt -> out_all.txt; the run directory's generation_all.txt when writing to stdout)."""
from __future__ import annotations

import sys
from pathlib import Path

from textbox.config import Config, DataError
from textbox.data.readers import read_lines
from textbox.data.tokenize import encode_within
from textbox.evaluator.generate import all_sequences_path, generate_sequences
from textbox.utils.atomic import write_text_atomic


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


def run_inference(config: Config, trainer, run_dir: Path) -> list[str]:
    """Generate for every input line with the trainer's best (or given) model; write them in input order."""
    sources = read_inputs(config.input_file)
    inputs = encode_within(trainer.tokenizer, sources, config.src_len, config.truncate, "src_len",
                           config.prefix_prompt or "", config.suffix_prompt or "")
    trainer.use_best_model()
    loader = trainer.eval_loader([{"input_ids": ids, "labels": []} for ids in inputs])
    sequences = generate_sequences(trainer.accelerator, trainer.model, trainer.tokenizer, loader,
                                   trainer.generation, "generate", trainer.decoding)
    texts = [candidates[0] for candidates in sequences]
    output = config.output_file or str(run_dir / "generation.txt")
    every = all_sequences_path(run_dir / "generation.txt" if output == "-" else Path(output))
    several = any(len(candidates) > 1 for candidates in sequences)
    if trainer.accelerator.is_main_process:
        write_outputs(output, texts)
        if several:
            write_text_atomic(every, "".join(text + "\n" for candidates in sequences for text in candidates))
    trainer.logger.info(f"generated {len(texts)} outputs for {config.input_file}"
                        + (f"; all {len(sequences[0])} per input in {every}" if several else ""))
    return texts
