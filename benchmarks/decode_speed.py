"""Decoding throughput of this framework against a plain loop over ``model.generate``, with the same weights.

Ours: Trainer.eval_loader (length-sorted batches) and generate_texts (cross-attention once per source under beam
search, in-place n-gram blocking, detokenisation on a background thread). Plain: the test split in dataset order,
the same number of examples per batch, ``model.generate`` then ``batch_decode``. Same inputs (the framework's
tokenisation), same generation settings, fp32. Greedy and beam-search runs of both alternate for --repeats
rounds; figures are medians of examples/s, with the number of outputs that differ and the BLEU of each.

Without --model_path, the framework first trains its default transformer on the dataset for --train_steps
steps (once, ~15 minutes on one core: the run is kept under .cache/benchmarks/ and reused).

    python benchmarks/decode_speed.py [--data=DIR] [--model_path=DIR] [--examples=320] [--batch_size=32]
                                      [--num_beams=4] [--repeats=3]
"""
from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from common import (CACHE_DIR, DEFAULT_DATA, add_threads_option, framework_config, median, print_json_line,
                    set_threads)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--model_path", type=Path, help="a trained checkpoint (default: train one, see above)")
    parser.add_argument("--train_steps", type=int, default=3000, help="steps of the model trained when needed")
    parser.add_argument("--examples", type=int, default=320, help="first N test examples decoded")
    parser.add_argument("--batch_size", type=int, default=32, help="examples per generate call (both)")
    parser.add_argument("--num_beams", type=int, default=4)
    parser.add_argument("--no_repeat_ngram_size", type=int, default=0, help="0: no n-gram blocking")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of greedy and beam runs, alternating")
    add_threads_option(parser)
    return parser.parse_args()


def trained_model(args: argparse.Namespace) -> Path:
    """checkpoint_best of a framework run on the dataset: a model whose outputs end where a real one's do."""
    if args.model_path:
        return args.model_path
    name = f"decode-{args.data.name}-{args.train_steps}"
    best = CACHE_DIR / "runs" / name / "checkpoint_best"
    if not (best / "config.json").is_file():
        from textbox.pipeline import run

        print(f"training the model decoded here ({args.train_steps} steps) into {best.parent}", flush=True)
        run(framework_config(args.data, saved_dir=str(CACHE_DIR / "runs"), filename=name, max_steps=args.train_steps,
                             max_tokens=2048, learning_rate=1e-3, do_valid=False, do_test=False, logging_steps=100))
    return best


def plain_loop(model: Any, tokenizer: Any, inputs: list[list[int]], batch_size: int,
               settings: dict[str, Any]) -> list[str]:
    """What a user without the framework writes: dataset order, fixed batches, generate, decode."""
    import torch

    from textbox.decoding.detokenize import one_line

    texts = []
    with torch.no_grad():
        for start in range(0, len(inputs), batch_size):
            batch = tokenizer.pad({"input_ids": inputs[start:start + batch_size]}, return_tensors="pt")
            ids = model.generate(**batch, **settings)
            texts.extend(one_line(text) for text in tokenizer.batch_decode(ids, skip_special_tokens=True))
    return texts


def timed(work: Callable[[], list[str]]) -> tuple[list[str], float]:
    start = time.perf_counter()
    texts = work()
    return texts, time.perf_counter() - start


def ngram_blocking_ms(num_hypotheses: int, length: int, vocabulary: int, size: int = 3) -> float:
    """Milliseconds per decoding step of transformers' NoRepeatNGramLogitsProcessor (already vectorised)."""
    import torch
    from transformers import NoRepeatNGramLogitsProcessor

    processor = NoRepeatNGramLogitsProcessor(size)
    ids = torch.randint(0, 50, (num_hypotheses, length))
    scores = torch.zeros(num_hypotheses, vocabulary)
    start = time.perf_counter()
    for _ in range(20):
        processor(ids, scores)
    return (time.perf_counter() - start) / 20 * 1e3


def main() -> None:
    args = parse_args()
    import sacrebleu
    from transformers.utils import logging as transformers_logging

    from textbox.data import Seq2SeqCollator, read_splits, tokenize_splits
    from textbox.evaluator.generate import generate_texts
    from textbox.model.registry import get_builder
    from textbox.pipeline import build_accelerator
    from textbox.trainer.loop import Trainer

    transformers_logging.set_verbosity_error()
    threads = set_threads(args.threads)
    model_path = trained_model(args)
    config = framework_config(args.data, model_path=str(model_path), quick_test=args.examples,
                              eval_batch_size=args.batch_size)
    model, tokenizer = get_builder(config.model)(config, None)
    model.eval()
    split = read_splits(config, ["test"], log=lambda message: None)["test"]
    test = tokenize_splits(config, {"test": split}, tokenizer, log=lambda message: None)["test"]
    inputs = [list(ids) for ids in test["input_ids"]]
    references = [refs[0] for refs in split.targets]
    accelerator = build_accelerator(config)
    with tempfile.TemporaryDirectory() as work:
        trainer = Trainer(config, accelerator, model, tokenizer, Seq2SeqCollator(tokenizer.pad_token_id), Path(work),
                          logging.getLogger("ours"))

        def ours(settings: dict[str, Any]) -> list[str]:
            return generate_texts(accelerator, model, tokenizer, trainer.eval_loader(test), settings, "ours")

        base = {"max_new_tokens": config.tgt_len}
        runs = {"greedy": {**base, "num_beams": 1}, "beam": {**base, "num_beams": args.num_beams}}
        if args.no_repeat_ngram_size:
            for settings in runs.values():
                settings["no_repeat_ngram_size"] = args.no_repeat_ngram_size
        print(f"{len(inputs)} test examples of {args.data}, model {model_path}, {args.batch_size} examples per batch, "
              f"settings {runs}", flush=True)
        decoders = {"ours": ours, "plain": lambda settings: plain_loop(model, tokenizer, inputs, args.batch_size,
                                                                         settings)}
        for decode in decoders.values():  # warm-up: first calls pay for allocations and lazy imports
            decode({**runs["beam"], "max_new_tokens": 4})
        texts: dict[tuple[str, str], list[str]] = {}
        rates: dict[tuple[str, str], list[float]] = {(d, r): [] for d in decoders for r in runs}
        for repeat in range(args.repeats):
            for run_name, settings in runs.items():
                for decoder_name, decode in decoders.items():
                    texts[decoder_name, run_name], seconds = timed(lambda: decode(settings))
                    rates[decoder_name, run_name].append(len(inputs) / seconds)
            print(f"round {repeat + 1}: " + ", ".join(f"{d} {r} {rates[d, r][-1]:.1f} examples/s" for d, r in rates),
                  flush=True)

    def differing(run_name: str) -> int:
        return sum(a != b for a, b in zip(texts["ours", run_name], texts["plain", run_name]))

    figures: dict[str, Any] = {"examples": len(inputs), "batch_size": args.batch_size, "num_beams": args.num_beams,
                               "no_repeat_ngram_size": args.no_repeat_ngram_size, "repeats": args.repeats,
                               "threads": threads}
    for run_name in runs:
        prefix = "" if run_name == "beam" else "greedy_"
        ours_rate, plain_rate = median(rates["ours", run_name]), median(rates["plain", run_name])
        figures[f"{prefix}examples_per_s"] = round(ours_rate, 2)
        figures[f"{prefix}plain_examples_per_s"] = round(plain_rate, 2)
        figures[f"{prefix}ratio"] = round(ours_rate / plain_rate, 3)
        figures[f"{prefix}outputs_differing"] = differing(run_name)
        figures[f"{prefix}bleu"] = round(sacrebleu.corpus_bleu(texts["ours", run_name], [references]).score, 2)
        figures[f"{prefix}plain_bleu"] = round(sacrebleu.corpus_bleu(texts["plain", run_name], [references]).score, 2)
    figures["greedy_identical"] = figures["greedy_outputs_differing"] == 0
    figures["ngram_blocking_ms_per_step"] = round(
        ngram_blocking_ms(args.batch_size * args.num_beams, config.tgt_len, len(tokenizer)), 3)
    print_json_line(figures)


if __name__ == "__main__":
    main()
