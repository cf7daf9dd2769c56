"""Training throughput of a decoder-only model with padded batches against --packing (textbox.data.packing), on the
same batches and weights, interleaved in one process.

The batches are the default sampler's (train_batch_size examples in random order, where padding costs most) of a
real dataset's training split, joined as the framework joins them (source eos target eos). The model is a small
Llama built from a config over a BPE tokenizer trained on the split (the framework's own trainer). A step is
forward, backward and an AdamW update; figures are medians over --repeats rounds of --steps steps, in CPU seconds of
this process (steadier than wall time on a shared machine), as target tokens (those the loss scores) per second;
the packed and padded losses of each batch are checked equal on the way.

    python benchmarks/packing_speed.py [--data=DIR] [--batch_size=32] [--steps=8] [--repeats=3] [--width=64]
"""
from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

from common import CACHE_DIR, DEFAULT_DATA, add_threads_option, median, print_json_line, set_threads


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--batch_size", type=int, default=32, help="examples per batch (random batches)")
    parser.add_argument("--steps", type=int, default=8, help="steps (batches) per round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds, each timing both ways")
    parser.add_argument("--width", type=int, default=64, help="the model's hidden size (2 layers)")
    parser.add_argument("--examples", type=int, default=4000, help="training lines read (tokenizer and batches)")
    add_threads_option(parser)
    return parser.parse_args()


def batches_of(data: Path, count: int, batch_size: int, steps: int) -> tuple[Any, list[list[dict[str, list[int]]]]]:
    """(tokenizer, ``steps`` random batches of examples tokenised as the framework does for a decoder-only model)."""
    from textbox.model.tokenizer import train_bpe_tokenizer

    sources = (data / "train.src").read_text().splitlines()[:count]
    targets = (data / "train.tgt").read_text().splitlines()[:count]
    tokenizer = train_bpe_tokenizer([*sources, *targets], vocab_size=2000, min_frequency=2, cache_dir=CACHE_DIR,
                                    log=lambda _: None)
    examples = [{"input_ids": tokenizer(source, add_special_tokens=False)["input_ids"],
                 "labels": [*tokenizer(target, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]}
                for source, target in zip(sources, targets)]
    rng = random.Random(0)
    return tokenizer, [rng.sample(examples, batch_size) for _ in range(steps)]


def main() -> None:
    args = parse_args()
    set_threads(args.threads)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from textbox.data.collate import CausalLMCollator
    from textbox.data.packing import PackedCausalLMCollator
    from textbox.model.loss import forward_token_losses

    tokenizer, examples = batches_of(args.data, args.examples, args.batch_size, args.steps)
    padded = CausalLMCollator(tokenizer)
    layouts = {"padded": [padded(batch) for batch in examples],
               "packed": [PackedCausalLMCollator(padded)(batch) for batch in examples]}
    torch.manual_seed(0)
    model = LlamaForCausalLM._from_config(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=args.width, intermediate_size=4 * args.width, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
        eos_token_id=tokenizer.eos_token_id), attn_implementation="sdpa")
    with torch.no_grad():
        for one, other in zip(layouts["padded"], layouts["packed"]):
            (sums, counts), (packed_sums, packed_counts) = (forward_token_losses(model, model, batch)
                                                            for batch in (one, other))
            assert abs(float(sums.sum() / counts.sum() - packed_sums.sum() / packed_counts.sum())) < 1e-4
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    target_tokens = sum(int((batch["labels"] != -100).sum()) for batch in layouts["padded"])

    def run(layout: str) -> float:
        start = time.process_time()
        for batch in layouts[layout]:
            sums, counts = forward_token_losses(model, model, batch)
            (sums.sum() / counts.sum()).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return time.process_time() - start

    run("padded"), run("packed")  # warm-up
    seconds: dict[str, list[float]] = {"padded": [], "packed": []}
    for _ in range(args.repeats):
        for layout in seconds:
            seconds[layout].append(run(layout))
    figures: dict[str, Any] = {}
    for layout, batches in layouts.items():
        positions = sum(batch["input_ids"].numel() for batch in batches)
        figures[layout] = {"rows_per_batch": sum(batch["input_ids"].shape[0] for batch in batches) / len(batches),
                           "positions": positions,
                           "target_tokens_per_s": target_tokens / median(seconds[layout])}
        print(f"{layout}: {figures[layout]['rows_per_batch']:.1f} rows a batch, {positions} positions, "
              f"{figures[layout]['target_tokens_per_s']:.0f} target tokens/s (median CPU seconds)")
    speedup = figures["packed"]["target_tokens_per_s"] / figures["padded"]["target_tokens_per_s"]
    print(f"packed / padded: {speedup:.2f}x")
    print_json_line({"benchmark": "packing_speed", "data": args.data.name, "batch_size": args.batch_size,
                     "width": args.width, "steps": args.steps, "repeats": args.repeats, **figures,
                     "speedup": speedup})


if __name__ == "__main__":
    main()
