"""Training step time with the fused token cross-entropy (textbox.model.loss.token_cross_entropy) against torch's
own ``F.cross_entropy``, interleaved in one process on the same batches and weights.

The default from-scratch transformer (d=128, 2+2 layers, 8k vocabulary: the output layer and its loss are about
half of a step) on train_speed.py's token-budget batches, with label smoothing 0 (what train_speed.py compares)
and 0.1 (configs/model/transformer.yaml's). A step is forward, backward, gradient clipping and a fused AdamW
update (freed memory kept for reuse, as the Trainer does on a CPU); figures are medians over --repeats rounds of
--steps steps, in CPU seconds of this process (steadier than wall time on a shared machine), and the largest
difference between the two ways' losses.

    python benchmarks/token_loss.py [--data=DIR] [--max_tokens=1087] [--steps=10] [--repeats=5] [--threads=1]
        [--write_doc]
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path
from typing import Any

from common import (DEFAULT_DATA, REPO, add_threads_option, framework_config, median, prepare_data_and_model,
                    print_json_line, set_threads, write_doc_block)

DOC = REPO / "docs" / "speedups.md"
BEGIN, END = "<!-- token loss: written by benchmarks/token_loss.py -->", "<!-- end of token loss -->"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--max_tokens", type=int, default=1087, help="token budget of a batch")
    parser.add_argument("--steps", type=int, default=10, help="steps (batches) per round")
    parser.add_argument("--repeats", type=int, default=5, help="rounds, each timing both ways")
    parser.add_argument("--write_doc", action="store_true", help="write the table into docs/speedups.md")
    add_threads_option(parser)
    parser.set_defaults(threads=1)
    return parser.parse_args()


def compare(base: Any, batches: list[dict], smoothing: float, repeats: int) -> dict[str, Any]:
    """Median CPU seconds per step of both ways, each on its own copy of the model, and their largest loss gap."""
    import torch
    import torch.nn.functional as F

    import textbox.model.loss as loss

    fused = loss.token_cross_entropy
    ways = {"torch": lambda logits, targets, smoothing: F.cross_entropy(
        logits, targets, label_smoothing=smoothing, reduction="none"), "fused": fused}
    models = {way: copy.deepcopy(base).train() for way in ways}
    optimizers = {way: torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True) for way, model in models.items()}
    losses: dict[str, list[float]] = {way: [] for way in ways}

    def run(way: str) -> float:
        loss.token_cross_entropy = ways[way]
        model, optimizer = models[way], optimizers[way]
        start = time.process_time()
        for number, batch in enumerate(batches):
            torch.manual_seed(number)  # the same dropout masks both ways
            sums, counts = loss.forward_token_losses(model, model, batch, smoothing)
            mean = sums.sum() / counts.sum()
            mean.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses[way].append(float(mean.detach()))
        return (time.process_time() - start) / len(batches)

    try:
        for way in ways:  # warm-up
            run(way)
        seconds: dict[str, list[float]] = {way: [] for way in ways}
        for _ in range(repeats):
            for way in ways:
                seconds[way].append(run(way))
    finally:
        loss.token_cross_entropy = fused
    return {"torch_ms": round(median(seconds["torch"]) * 1e3, 1), "fused_ms": round(median(seconds["fused"]) * 1e3, 1),
            "speedup": round(median(seconds["torch"]) / median(seconds["fused"]), 3),
            "loss_max_abs_diff": max(abs(a - b) for a, b in zip(losses["torch"], losses["fused"]))}


def main() -> None:
    args = parse_args()
    from textbox.data import Seq2SeqCollator
    from textbox.data.batching import TokenBudgetBatchSampler, column_lengths
    from textbox.trainer.allocator import keep_freed_memory

    keep_freed_memory()  # as the Trainer does on a CPU (--cpu_memory_reuse, its default)
    threads = set_threads(args.threads)
    model, tokenizer, tokenized, _ = prepare_data_and_model(framework_config(args.data), splits=())
    train = tokenized["train"]
    collate = Seq2SeqCollator(tokenizer.pad_token_id)
    order = TokenBudgetBatchSampler(column_lengths(train, "input_ids"), column_lengths(train, "labels"),
                                    args.max_tokens, seed=0).batches()[:args.steps]
    batches = [collate(train.__getitems__(batch)) for batch in order]
    figures: dict[str, Any] = {"threads": threads, "repeats": args.repeats, "steps": args.steps,
                               "max_tokens": args.max_tokens}
    loads = [os.getloadavg()[0]]
    for smoothing in (0.0, 0.1):
        figures[f"label_smoothing_{smoothing}"] = result = compare(model, batches, smoothing, args.repeats)
        loads.append(os.getloadavg()[0])
        print(f"label smoothing {smoothing}: torch's cross-entropy {result['torch_ms']:.1f} ms per step, fused "
              f"{result['fused_ms']:.1f} ms ({result['speedup']:.2f}x); losses differ by at most "
              f"{result['loss_max_abs_diff']:.1e}", flush=True)
    figures["load"] = f"median {median(loads):.1f} (from {min(loads):.1f} to {max(loads):.1f})"
    if args.write_doc:
        write_doc(figures, " ".join(["python benchmarks/token_loss.py", *sys.argv[1:]]))
    print_json_line(figures)


def write_doc(figures: dict[str, Any], command_line: str) -> None:
    lines = [BEGIN, "", "## The token loss: one pass over the output layer's logits", "",
             f"Written by `{command_line}`: training steps of the default from-scratch transformer (d=128, 2+2 layers, "
             f"8k vocabulary) on token-budget batches of {figures['max_tokens']} tokens, {figures['threads']} thread, "
             f"with torch's `F.cross_entropy` and with textbox.model.loss's fused token cross-entropy (the logits "
             f"become their gradient in the forward pass: no log-softmax kept, no zero-filled gradient, no separate "
             f"smoothing pass). CPU milliseconds per step, medians of {figures['repeats']} interleaved rounds of "
             f"{figures['steps']} steps (load average {figures['load']}); the losses of both ways, step by step from "
             f"the same weights, differ by at most the last column.", "",
             "| label smoothing | torch's cross-entropy (ms) | fused (ms) | speed-up | loss difference |",
             "|---:|---:|---:|---:|---:|"]
    for smoothing in (0.0, 0.1):
        row = figures[f"label_smoothing_{smoothing}"]
        lines.append(f"| {smoothing} | {row['torch_ms']:.1f} | {row['fused_ms']:.1f} | {row['speedup']:.2f}x | "
                     f"{row['loss_max_abs_diff']:.1e} |")
    lines += ["", END]
    write_doc_block(DOC, BEGIN, END, "\n".join(lines))


if __name__ == "__main__":
    main()
