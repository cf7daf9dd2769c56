"""Training step time with the output layer projecting every position against only the scored ones
(textbox.model.loss.scored_rows_only), interleaved in one process on the same batches and weights.

Three layouts: the default from-scratch transformer with the default sampler (train_batch_size examples in random
order: padded targets), the same with train_speed.py's token budget (0.4% of target positions padding; the batches
timed are ones with some, so that the hook works, and its cost shows), and a GPT-2 of the same
width with the framework's decoder-only layout (source and separator unscored). A step is forward, backward,
gradient clipping and a fused AdamW update; figures are medians over --repeats rounds of --steps steps, in CPU
seconds of this process (steadier than wall time on a shared machine).

    python benchmarks/scored_rows.py [--data=DIR] [--batch_size=32] [--steps=6] [--repeats=5] [--threads=1]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import time
from pathlib import Path
from typing import Any

from common import (DEFAULT_DATA, add_threads_option, framework_config, median, prepare_data_and_model,
                    print_json_line, set_threads)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--batch_size", type=int, default=32, help="examples per batch (random batches)")
    parser.add_argument("--max_tokens", type=int, default=1087, help="the token budget of the budget layout")
    parser.add_argument("--steps", type=int, default=6, help="steps (batches) per round")
    parser.add_argument("--repeats", type=int, default=5, help="rounds, each timing both ways")
    add_threads_option(parser)
    return parser.parse_args()


def step_seconds(model: Any, batches: list[dict], repeats: int) -> dict[str, float]:
    """Median CPU seconds per step projecting every position ("full") and the scored ones ("scored")."""
    import torch

    import textbox.model.loss as loss

    scored_only = loss.scored_rows_only
    every_position = lambda *args: contextlib.nullcontext(loss.Packing())  # noqa: E731
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def run(way: str) -> float:
        loss.scored_rows_only = scored_only if way == "scored" else every_position
        start = time.process_time()
        for batch in batches:
            sums, counts = loss.forward_token_losses(model, model, batch)
            (sums.sum() / counts.sum()).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return (time.process_time() - start) / len(batches)

    try:
        run("scored"), run("full")  # warm-up
        seconds: dict[str, list[float]] = {"full": [], "scored": []}
        for _ in range(repeats):
            for way in seconds:
                seconds[way].append(run(way))
    finally:
        loss.scored_rows_only = scored_only
    return {way: median(values) for way, values in seconds.items()}


def main() -> None:
    args = parse_args()
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from textbox.data import Seq2SeqCollator
    from textbox.data.batching import ShuffledBatchSampler, TokenBudgetBatchSampler, column_lengths
    from textbox.data.collate import CausalLMCollator

    threads = set_threads(args.threads)
    model, tokenizer, tokenized, _ = prepare_data_and_model(framework_config(args.data), splits=())
    train = tokenized["train"]
    collate = Seq2SeqCollator(tokenizer.pad_token_id)
    random_batches = ShuffledBatchSampler(len(train), args.batch_size, seed=0).batches()[:args.steps]
    targets = column_lengths(train, "labels")
    budget = [batch for batch in TokenBudgetBatchSampler(column_lengths(train, "input_ids"), targets,
                                                         args.max_tokens, seed=0).batches()
              if targets[batch].min() < targets[batch].max()][:args.steps]  # with some padding: the hook at work
    torch.manual_seed(0)
    width = model.config.d_model
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=width, n_layer=4, n_head=4, n_positions=256,
                                      bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id))
    layouts = {
        "transformer_random": (model, [collate(train.__getitems__(batch)) for batch in random_batches]),
        "transformer_budget": (model, [collate(train.__getitems__(batch)) for batch in budget]),
        "gpt2_random": (gpt2, [CausalLMCollator(tokenizer)(train.__getitems__(batch)) for batch in random_batches])}
    figures: dict[str, Any] = {"threads": threads, "repeats": args.repeats, "steps": args.steps}
    loads = [os.getloadavg()[0]]
    for name, (network, batches) in layouts.items():
        labels = [batch["labels"] for batch in batches]
        padding = 1 - sum(int((each != -100).sum()) for each in labels) / sum(each.numel() for each in labels)
        seconds = step_seconds(network, batches, args.repeats)
        loads.append(os.getloadavg()[0])
        figures.update({f"{name}_full_ms": round(seconds["full"] * 1e3, 1),
                        f"{name}_scored_ms": round(seconds["scored"] * 1e3, 1),
                        f"{name}_speedup": round(seconds["full"] / seconds["scored"], 3),
                        f"{name}_unscored_label_fraction": round(padding, 4)})
        print(f"{name}: {padding:.1%} of label positions unscored; {seconds['full'] * 1e3:.1f} ms per step "
              f"projecting every position, {seconds['scored'] * 1e3:.1f} ms the scored ones "
              f"({seconds['full'] / seconds['scored']:.2f}x)", flush=True)
    figures["load"] = f"from {min(loads):.1f} to {max(loads):.1f}"
    print_json_line(figures)


if __name__ == "__main__":
    main()
