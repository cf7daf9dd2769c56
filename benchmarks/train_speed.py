"""Training throughput of this framework against transformers' Seq2SeqTrainer, side by side in one process.

Same model (the framework's from-scratch transformer, same initial weights), tokenizer, tokenised data,
optimiser (fused AdamW as in Seq2SeqTrainer's defaults, linear schedule, gradient clipping at 1.0) and
precision; the same average number of examples per optimiser step (ours: a max_tokens budget chosen to give
--batch_size examples on average; Seq2SeqTrainer: --batch_size examples).
The three trainers alternate for --repeats rounds, each round from the same initial weights on a fresh copy of the
model (accelerate wraps a prepared model's forward for mixed precision: a reused model would carry every earlier
trainer's wrappers); the figures are medians over the rounds of target tokens per second in steady state (after
--warmup steps), timed by the model's forward calls on two clocks: wall time, and this process's CPU time, which
other work on a busy machine stretches less (a trainer that waits for a core gains no CPU time meanwhile). The
ratios are taken round by round (trainers of one round ran minutes apart at most) and their median and lowest
value are shown. The framework's Trainer switches the process's malloc to keeping freed memory
(--cpu_memory_reuse) when it first trains, so Seq2SeqTrainer's rounds run with that too: the comparison leaves
that gain out.

    python benchmarks/train_speed.py [--data=DIR] [--batch_size=32] [--steps=40] [--repeats=5] [--precision=fp32]
        [--write_doc]
"""
from __future__ import annotations

import argparse
import copy
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import (DEFAULT_DATA, REPO, StepClock, add_threads_option, bart_training_flops, counted_training_flops,
                    framework_config, gemm_peak_flops, median, prepare_data_and_model, print_json_line, set_threads,
                    write_doc_block)

TRAINERS = ("ours", "hf_default", "hf_group_by_length")
DOC = REPO / "docs" / "speedups.md"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--batch_size", type=int, default=32, help="average examples per optimiser step")
    parser.add_argument("--steps", type=int, default=40, help="optimiser steps per trainer and round")
    parser.add_argument("--warmup", type=int, default=5, help="first steps left out of the timing")
    parser.add_argument("--repeats", type=int, default=5, help="rounds of the three trainers, alternating")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--write_doc", action="store_true", help="write the table into docs/speedups.md")
    add_threads_option(parser)
    return parser.parse_args()


def budget_for(sampler_lengths: tuple[Any, Any], batch_size: int) -> int:
    """The max_tokens whose batches hold ``batch_size`` examples on average (the closest budget from below)."""
    from textbox.data.batching import TokenBudgetBatchSampler

    sources, targets = sampler_lengths
    low, high = int(sources.max() + targets.max()), int((sources.max() + targets.max()) * batch_size * 2)
    while high - low > 1:
        middle = (low + high) // 2
        average = len(sources) / len(TokenBudgetBatchSampler(sources, targets, middle, seed=0))
        low, high = (middle, high) if average <= batch_size else (low, middle)
    return low


def train_ours(config: Any, model: Any, tokenizer: Any, data: Any, work: Path) -> StepClock:
    from textbox.data import Seq2SeqCollator
    from textbox.config.launcher import agreed_launch
    from textbox.pipeline.processes import build_accelerator
    from textbox.trainer.context import RunContext, TrainerContext
    from textbox.trainer.loop import Trainer

    clock = StepClock(model, Seq2SeqCollator(tokenizer.pad_token_id))
    run = RunContext(config, build_accelerator(config, agreed_launch(config)), work, logging.getLogger("ours"))
    trainer = Trainer(TrainerContext(run, model, tokenizer, clock))
    trainer.fit(data)
    return clock


def train_hf(config: Any, model: Any, tokenizer: Any, data: Any, work: Path, sampling: str) -> StepClock:
    from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments

    arguments = Seq2SeqTrainingArguments(
        output_dir=str(work), per_device_train_batch_size=config.train_batch_size, max_steps=config.max_steps,
        learning_rate=config.learning_rate, lr_scheduler_type="linear", warmup_steps=0, weight_decay=0.0,
        max_grad_norm=config.grad_clip, seed=config.seed, use_cpu=True, bf16=config.mixed_precision == "bf16",
        train_sampling_strategy=sampling, report_to="none", save_strategy="no", eval_strategy="no",
        logging_strategy="no", disable_tqdm=True, dataloader_num_workers=config.num_workers)
    clock = StepClock(model, DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100))
    Seq2SeqTrainer(model=model, args=arguments, train_dataset=data, data_collator=clock,
                   processing_class=tokenizer).train()
    return clock


def summarise(clock: StepClock, warmup: int, model_config: Any) -> dict[str, float]:
    batches, seconds, cpu_seconds = clock.steady(warmup)
    flops = sum(bart_training_flops(model_config, b["examples"], b["source_len"], b["target_len"]) for b in batches)
    tokens = sum(b["target_tokens"] for b in batches)
    return {"tokens_per_s": tokens / seconds, "tokens_per_cpu_s": tokens / cpu_seconds,
            "examples_per_step": sum(b["examples"] for b in batches) / len(batches),
            "padding_fraction": 1 - sum(b["real_tokens"] for b in batches) / sum(b["padded_tokens"] for b in batches),
            "flops_per_s": flops / seconds}


def main() -> None:
    args = parse_args()
    from accelerate.state import AcceleratorState
    from transformers.utils import logging as transformers_logging

    from textbox.data.batching import TokenBudgetBatchSampler, column_lengths, padding_fraction

    transformers_logging.set_verbosity_error()
    logging.getLogger("accelerate").setLevel(logging.ERROR)
    threads = set_threads(args.threads)
    config = framework_config(args.data, train_batch_size=args.batch_size, max_steps=args.steps,
                              learning_rate=5e-5, scheduler="linear", warmup_steps=0, label_smoothing=0.0,
                              grad_clip=1.0, logging_steps=10 ** 6, optimizer_kwargs={"fused": True},
                              mixed_precision="bf16" if args.precision == "bf16" else "no")
    model, tokenizer, tokenized, _ = prepare_data_and_model(config, splits=())
    train = tokenized["train"]
    lengths = (column_lengths(train, "input_ids"), column_lengths(train, "labels"))
    config = config.replace(max_tokens=budget_for(lengths, args.batch_size))
    epoch_batches = TokenBudgetBatchSampler(*lengths, config.max_tokens, config.seed).batches()
    print(f"data {args.data}: {len(train)} training examples; model {sum(p.numel() for p in model.parameters()):,} "
          f"parameters; ours: max_tokens={config.max_tokens} -> {len(train) / len(epoch_batches):.1f} examples per "
          f"batch on average, {padding_fraction(epoch_batches, *lengths):.2%} padding over an epoch", flush=True)
    formula = bart_training_flops(model.config, 8, 20, 18)
    counted = counted_training_flops(model, 8, 20, 18)
    print(f"FLOPs of a batch of 8 x (20 source, 18 target) tokens: formula {formula:.4g}, torch's counter "
          f"{counted:.4g}", flush=True)

    pristine = copy.deepcopy(model)
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in TRAINERS}
    loads = [os.getloadavg()[0]]
    for repeat in range(args.repeats):
        for name in TRAINERS:
            model = copy.deepcopy(pristine)
            model.train()
            AcceleratorState._reset_state(reset_partial_state=True)  # each trainer builds its own Accelerator
            with tempfile.TemporaryDirectory() as work:
                if name == "ours":
                    clock = train_ours(config, model, tokenizer, train, Path(work))
                else:
                    sampling = "group_by_length" if name == "hf_group_by_length" else "random"
                    clock = train_hf(config, model, tokenizer, train, Path(work), sampling)
            clock.close()
            figures[name].append(summarise(clock, args.warmup, model.config))
            shown = figures[name][-1]
            loads.append(os.getloadavg()[0])
            print(f"round {repeat + 1} {name:<19} {shown['tokens_per_s']:8.0f} target tokens/s "
                  f"({shown['tokens_per_cpu_s']:6.0f} per CPU s) {shown['examples_per_step']:5.1f} examples/step "
                  f"{shown['padding_fraction']:6.2%} padding {shown['flops_per_s'] / 1e9:6.1f} GFLOP/s "
                  f"load {loads[-1]:.1f}", flush=True)

    peaks = {precision: gemm_peak_flops(precision) for precision in ("fp32", "bf16")}
    result: dict[str, Any] = {"precision": args.precision, "threads": threads,
                              "load": f"median {median(loads):.1f} (from {min(loads):.1f} to {max(loads):.1f})",
                              "max_tokens": config.max_tokens, "repeats": args.repeats, "steps": args.steps,
                              "gemm_peak_gflops_fp32": round(peaks["fp32"] / 1e9, 1),
                              "gemm_peak_gflops_bf16": round(peaks["bf16"] / 1e9, 1)}
    for name in TRAINERS:
        prefix = "" if name == "ours" else f"{name}_"
        rows = figures[name]
        result[f"{prefix}tokens_per_s"] = round(median([row["tokens_per_s"] for row in rows]), 1)
        result[f"{prefix}tokens_per_cpu_s"] = round(median([row["tokens_per_cpu_s"] for row in rows]), 1)
        result[f"{prefix}examples_per_step"] = round(median([row["examples_per_step"] for row in rows]), 2)
        result[f"{prefix}padding_fraction"] = round(median([row["padding_fraction"] for row in rows]), 4)
        flops = median([row["flops_per_s"] for row in rows])
        result[f"{prefix}fraction_of_peak"] = round(flops / peaks[args.precision], 4)
        result[f"{prefix}fraction_of_bf16_peak"] = round(flops / peaks["bf16"], 4)
    for peer in TRAINERS[1:]:
        for clock, key in (("", "tokens_per_s"), ("_cpu", "tokens_per_cpu_s")):
            ratios = [ours[key] / theirs[key] for ours, theirs in zip(figures["ours"], figures[peer])]
            result[f"ratio_vs_{peer}{clock}"] = round(median(ratios), 3)
            result[f"ratio_vs_{peer}{clock}_lowest"] = round(min(ratios), 3)
    if args.write_doc:
        write_doc(result, " ".join(["python benchmarks/train_speed.py", *sys.argv[1:]]))
    print_json_line(result)


def write_doc(result: dict[str, Any], command_line: str) -> None:
    """One block per precision: each run rewrites its own."""
    precision = result["precision"]
    begin = f"<!-- trainer comparison ({precision}): written by benchmarks/train_speed.py -->"
    end = f"<!-- end of trainer comparison ({precision}) -->"
    lines = [begin, "", f"## Against transformers' Seq2SeqTrainer ({precision})", "",
             f"Written by `{command_line}`: the default from-scratch transformer (d=128, 2+2 layers), the same "
             f"initial weights, optimiser (fused AdamW), schedule, clipping and precision for every trainer; ours "
             f"with a token budget of {result['max_tokens']} ({result['examples_per_step']:.1f} examples per step on "
             f"average), Seq2SeqTrainer with batches of {result['hf_default_examples_per_step']:.0f}, in "
             f"{result['repeats']} alternating rounds of {result['steps']} steps, {result['threads']} thread (load "
             f"average {result['load']}). Target tokens per second in steady state, of wall time and of the "
             f"process's CPU time; ratios taken round by round: median (lowest). Padding: the padded share of source "
             f"and target positions. Our Trainer keeps freed memory for reuse (--cpu_memory_reuse) from its first "
             f"round on, a process-wide setting the Seq2SeqTrainer rounds then share.", "",
             "| trainer | padding | tokens/s | tokens per CPU s | ours vs it | ours vs it (CPU) |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, label in (("ours", "this framework (token budget)"), ("hf_default", "Seq2SeqTrainer, random batches"),
                        ("hf_group_by_length", "Seq2SeqTrainer, group_by_length")):
        prefix = "" if name == "ours" else f"{name}_"
        ratios = "| | |" if name == "ours" else (
            f"| {result[f'ratio_vs_{name}']:.2f}x ({result[f'ratio_vs_{name}_lowest']:.2f}x) | "
            f"{result[f'ratio_vs_{name}_cpu']:.2f}x ({result[f'ratio_vs_{name}_cpu_lowest']:.2f}x) |")
        lines.append(f"| {label} | {result[f'{prefix}padding_fraction']:.1%} | {result[f'{prefix}tokens_per_s']:.0f} "
                     f"| {result[f'{prefix}tokens_per_cpu_s']:.0f} {ratios}")
    lines += ["", end]
    write_doc_block(DOC, begin, end, "\n".join(lines))


if __name__ == "__main__":
    main()
