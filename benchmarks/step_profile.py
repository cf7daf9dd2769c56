"""Where a training step's time goes at d_model 512, 6+6 layers: fp32 against bf16, and the options tried for bf16.

Every variant trains its own copy of the same initial model (the framework's from-scratch transformer at that size,
built as a run builds it) on the same token-budget batches of the dataset, with the framework's loss
(textbox.model.loss), optimiser and learning-rate schedule (textbox.trainer.optim: the transformer's warm-up) and
gradient clipping; bf16 variants run under torch.autocast as accelerate runs them; freed memory is kept for reuse,
as the Trainer does on a CPU (--cpu_memory_reuse). Variants alternate, --steps steps each, for --rounds rounds
(after one round of warm-up), so that a busy minute of the machine hits all of them; the figures are medians over
the rounds of the seconds per step, wall and CPU time of this process (one thread: CPU time is what other work on
the machine disturbs least). Losses are compared step by step with the fp32 variant's (same batches, same initial
weights, the same dropout masks). Then one more chunk of --profile_steps steps per variant runs under
torch.profiler, whose operator times are gathered into what they do (matrix products, softmax, casts, optimiser...).

Variants (--variants picks some):
- fp32, fp32_loop_adamw: float32, with torch's fused AdamW (the framework's default on CPU) or its
  one-parameter-at-a-time loop (optimizer_kwargs={'foreach': False}, the default before);
- bf16, bf16_loop_adamw: bf16 autocast with eager attention (what --mixed_precision=bf16 runs), with either AdamW;
- bf16_sdpa: bf16 autocast with torch's scaled_dot_product_attention;
- fp32_matmul_medium: float32 with torch.set_float32_matmul_precision("medium"), which lets oneDNN run float32
  matrix products (in bfloat16 where the CPU has fast units for it; see docs/speedups.md for what it did here);
- bf16_weights: the weights themselves in bf16, no autocast (no cast of fp32 weights on every forward; layer norms
  and softmax in bf16 too), with fp32 master weights that the optimiser updates and copies back after each step.

    python benchmarks/step_profile.py [--data=DIR] [--rounds=3] [--steps=4] [--profile_steps=3] [--write_doc]
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (DEFAULT_DATA, REPO, add_threads_option, framework_config, median, prepare_data_and_model,
                    print_json_line, set_threads, write_doc_block)

DOC = REPO / "docs" / "speedups.md"
BEGIN, END = "<!-- step profile: written by benchmarks/step_profile.py -->", "<!-- end of step profile -->"
SIZE = {"d_model": 512, "encoder_layers": 6, "decoder_layers": 6, "encoder_attention_heads": 8,
        "decoder_attention_heads": 8, "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048, "dropout": 0.1}


@dataclass(frozen=True)
class Variant:
    label: str
    autocast: bool = False  # bf16 autocast
    optimizer_kwargs: dict[str, Any] = field(default_factory=dict)
    attention: str = "sdpa"
    bf16_weights: bool = False
    matmul_precision: str = "highest"  # torch.set_float32_matmul_precision


VARIANTS = {
    "fp32": Variant("fp32, fused AdamW (default)"),
    "fp32_loop_adamw": Variant("fp32, AdamW one parameter at a time", optimizer_kwargs={"foreach": False}),
    "fp32_matmul_medium": Variant("fp32, float32_matmul_precision='medium'", matmul_precision="medium"),
    "bf16": Variant("bf16 autocast, eager attention, fused AdamW (default)", autocast=True, attention="eager"),
    "bf16_loop_adamw": Variant("bf16 autocast, AdamW one parameter at a time", autocast=True, attention="eager",
                               optimizer_kwargs={"foreach": False}),
    "bf16_sdpa": Variant("bf16 autocast, SDPA attention", autocast=True),
    "bf16_weights": Variant("bf16 weights, fp32 master weights", attention="eager", bf16_weights=True),
}
PROFILED = ("fp32", "bf16", "bf16_loop_adamw")  # the columns of the breakdown table, where they ran


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (after one round of warm-up)")
    parser.add_argument("--steps", type=int, default=4, help="steps of every variant per round")
    parser.add_argument("--profile_steps", type=int, default=3, help="steps of every variant under the profiler")
    parser.add_argument("--max_tokens", type=int, default=1024, help="token budget of a training batch")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--write_doc", action="store_true", help="write the tables into docs/speedups.md")
    add_threads_option(parser)
    parser.set_defaults(threads=1)
    return parser.parse_args()


@dataclass
class Run:
    """One variant's model, optimiser and figures."""

    name: str
    model: Any
    optimizer: Any
    scheduler: Any
    variant: Variant
    master: list[Any] | None  # fp32 master weights of a bf16-weights model
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)


def build_runs(config: Any, base: Any, names: list[str], total_steps: int) -> list[Run]:
    import torch

    from textbox.model.attention import set_attention
    from textbox.trainer.optim import build_optimizer, build_scheduler

    runs = []
    for name in names:
        variant = VARIANTS[name]
        model = copy.deepcopy(base)
        set_attention(model, variant.attention)
        model.train()
        master = None
        settings = config.replace(optimizer_kwargs=variant.optimizer_kwargs)
        if variant.bf16_weights:
            fp32_copy = copy.deepcopy(model)  # the optimiser's parameters, with the same names (weight decay groups)
            optimizer = build_optimizer(settings, fp32_copy)
            master = list(fp32_copy.parameters())
            model.to(torch.bfloat16)
        else:
            optimizer = build_optimizer(settings, model)
        runs.append(Run(name, model, optimizer, build_scheduler(config, optimizer, total_steps), variant, master))
    return runs


def train_step(run: Run, batch: dict[str, Any], config: Any) -> float:
    """The Trainer's step for one batch: mean token loss, backward, clipping, optimiser step."""
    import torch
    from torch.profiler import record_function

    from textbox.model.loss import forward_token_losses, target_tokens

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=run.variant.autocast):
        sums, _ = forward_token_losses(run.model, run.model, batch, config.label_smoothing)
        loss = sums.sum() / target_tokens(batch)
    loss.backward()
    parameters = list(run.model.parameters())
    if run.master is not None:
        with record_function("master weights"):
            for master, parameter in zip(run.master, parameters):
                master.grad = parameter.grad.float()
                parameter.grad = None
        parameters = run.master
    if config.grad_clip is not None:
        with record_function("gradient clipping"):
            torch.nn.utils.clip_grad_norm_(parameters, config.grad_clip)
    with record_function("optimiser step"):
        run.optimizer.step()
        run.optimizer.zero_grad(set_to_none=True)
        run.scheduler.step()
    if run.master is not None:
        with record_function("master weights"), torch.no_grad():
            for master, parameter in zip(run.master, run.model.parameters()):
                parameter.copy_(master)
    return float(loss.detach())


def timed_chunk(run: Run, batches: list[tuple[int, dict[str, Any]]], config: Any) -> tuple[float, float, list[float]]:
    """Seconds per step (wall, CPU) and the losses; step i draws the same dropout masks in every variant."""
    import torch

    torch.set_float32_matmul_precision(run.variant.matmul_precision)
    start, start_cpu = time.perf_counter(), time.process_time()
    losses = []
    for number, batch in batches:
        torch.manual_seed(number)
        losses.append(train_step(run, batch, config))
    torch.set_float32_matmul_precision("highest")
    return (time.perf_counter() - start) / len(batches), (time.process_time() - start_cpu) / len(batches), losses


# (category, what it holds): operators are sorted by their own name, or by an enclosing range's
CATEGORIES = [
    ("optimiser step", "the optimiser's update (and zeroing the gradients)"),
    ("gradient clipping", "the gradient norm and its scaling"),
    ("master weights", "bf16 weights: gradients to fp32, updated weights back"),
    ("matrix products", "Linear layers (output layer included) and attention's batched products, forward and backward"),
    ("SDPA attention kernels", "torch's scaled_dot_product_attention"),
    ("attention softmax", "softmax of the attention scores, forward and backward"),
    ("output log-softmax and loss", "cross-entropy over the vocabulary, forward and backward"),
    ("dropout", "random masks and their products"),
    ("layer norm", "forward and backward"),
    ("GELU", "forward and backward"),
    ("casts and copies", "dtype casts (autocast's casts of fp32 weights and activations) and other copies"),
    ("embeddings", "look-ups and their gradient"),
    ("other", "additions, views, reductions, allocation, Python"),
]
_MATMULS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm"}


def category(event: Any) -> str:
    names = []
    while event is not None:
        names.append(event.name)
        event = event.cpu_parent
    text = " ".join(names).lower()
    for key in ("optimiser step", "gradient clipping", "master weights"):
        if key in text:
            return key
    if "dropout" in text or names[0] == "aten::bernoulli_":
        return "dropout"
    if names[0] in _MATMULS:
        return "matrix products"
    if "scaled_dot_product" in text:
        return "SDPA attention kernels"
    if any(part in text for part in ("log_softmax", "logsoftmax", "nll_loss", "nllloss", "cross_entropy",
                                     "crossentropy")):
        return "output log-softmax and loss"
    if "softmax" in text:
        return "attention softmax"
    if "layer_norm" in text or "layernorm" in text:
        return "layer norm"
    if "gelu" in text:
        return "GELU"
    if "embedding" in text:
        return "embeddings"
    if names[0] in ("aten::copy_", "aten::_to_copy", "aten::clone"):
        return "casts and copies"
    return "other"


def profile(run: Run, batches: list[dict[str, Any]], config: Any) -> dict[str, float]:
    """Milliseconds per step by category (operators' own CPU time; the rest of the process's CPU time is 'other')."""
    import torch
    from torch.profiler import ProfilerActivity, profile as torch_profile

    torch.set_float32_matmul_precision(run.variant.matmul_precision)
    start = time.process_time()
    with torch_profile(activities=[ProfilerActivity.CPU]) as profiler:
        for batch in batches:
            train_step(run, batch, config)
    cpu_ms = (time.process_time() - start) * 1e3 / len(batches)
    torch.set_float32_matmul_precision("highest")
    totals = {name: 0.0 for name, _ in CATEGORIES}
    for event in profiler.events():
        totals[category(event)] += event.self_cpu_time_total / 1e3 / len(batches)
    measured = sum(totals.values())
    totals["other"] += max(cpu_ms - measured, 0.0)  # time no operator holds: Python, the profiler's own
    return totals


def main() -> None:
    args = parse_args()
    from textbox.data import Seq2SeqCollator
    from textbox.data.batching import TokenBudgetBatchSampler, column_lengths
    from textbox.trainer.allocator import keep_freed_memory

    keep_freed_memory()  # as the Trainer does on a CPU (--cpu_memory_reuse, its default)
    threads = set_threads(args.threads)
    names = [name for name in args.variants.split(",") if name]
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown or "fp32" not in names:
        raise SystemExit(f"--variants: unknown {unknown}; fp32 (the reference) must be one of them")
    config = framework_config(args.data, config_kwargs=SIZE, max_tokens=args.max_tokens)
    base, tokenizer, tokenized, _ = prepare_data_and_model(config, splits=())
    train = tokenized["train"]
    lengths = (column_lengths(train, "input_ids"), column_lengths(train, "labels"))
    needed = (args.rounds + 1) * args.steps + args.profile_steps
    order = TokenBudgetBatchSampler(*lengths, args.max_tokens, seed=config.seed).batches()[:needed]
    collate = Seq2SeqCollator(tokenizer.pad_token_id)
    batches = [collate([train[index] for index in batch]) for batch in order]
    runs = build_runs(config, base, names, total_steps=len(batches))
    loads = [os.getloadavg()[0]]
    for round_number in range(args.rounds + 1):  # round 0 warms up
        chunk = list(enumerate(batches))[round_number * args.steps:(round_number + 1) * args.steps]
        for run in runs:
            wall, cpu, losses = timed_chunk(run, chunk, config)
            run.losses += losses
            if round_number:
                run.wall.append(wall)
                run.cpu.append(cpu)
            print(f"round {round_number} {run.name:<16} {wall:.3f} s/step wall {cpu:.3f} CPU", flush=True)
        loads.append(os.getloadavg()[0])
    profiled = {}
    for run in runs:
        if run.name in PROFILED:
            profiled[run.name] = profile(run, batches[-args.profile_steps:], config)
    reference = next(run for run in runs if run.name == "fp32")
    figures: dict[str, Any] = {
        "threads": threads, "rounds": args.rounds, "steps": args.steps, "max_tokens": args.max_tokens,
        "load": f"median {median(loads):.1f} (from {min(loads):.1f} to {max(loads):.1f})",
        "parameters": sum(parameter.numel() for parameter in base.parameters()),
        "variants": {run.name: {
            "wall_s_per_step": round(median(run.wall), 3), "cpu_s_per_step": round(median(run.cpu), 3),
            "speed_up": round(median(reference.wall) / median(run.wall), 2),
            "speed_up_cpu": round(median(reference.cpu) / median(run.cpu), 2),
            "loss_max_abs_diff": round(max(abs(a - b) for a, b in zip(run.losses, reference.losses)), 4)}
            for run in runs},
        "profile_ms_per_step": {name: {key: round(value, 1) for key, value in totals.items()}
                                for name, totals in profiled.items()}}
    if args.write_doc:
        write_doc(figures, " ".join(["python benchmarks/step_profile.py", *sys.argv[1:]]))
    print_json_line(figures)


def write_doc(figures: dict[str, Any], command_line: str) -> None:
    variants, profiled = figures["variants"], figures["profile_ms_per_step"]
    lines = [BEGIN, "", "## Where a training step's time goes: d_model 512, 6+6 layers", "",
             f"Written by `{command_line}`: the from-scratch transformer at d_model 512, 6+6 layers, ffn 2048 "
             f"({figures['parameters'] / 1e6:.1f}M parameters), batches of {figures['max_tokens']} tokens, "
             f"{figures['threads']} thread. Each variant trains its own copy of the same initial model on the same "
             f"batches with the framework's loss, optimiser, schedule and clipping; variants alternate, "
             f"{figures['steps']} steps each, for {figures['rounds']} rounds after a warm-up round (load average "
             f"{figures['load']}). "
             "Seconds per step are medians over the rounds, of wall time and of this process's CPU time; loss "
             "difference: the largest over the steps against fp32 (same batches, start, schedule and dropout masks).",
             "",
             "| variant | s/step | vs fp32 | CPU s/step | vs fp32 (CPU) | loss difference |",
             "|---|---:|---:|---:|---:|---:|"]
    for name in (name for name in VARIANTS if name in variants):  # the JSON line sorts its keys
        row = variants[name]
        lines.append(f"| {VARIANTS[name].label} | {row['wall_s_per_step']:.3f} | {row['speed_up']:.2f}x | "
                     f"{row['cpu_s_per_step']:.3f} | {row['speed_up_cpu']:.2f}x | {row['loss_max_abs_diff']:.4f} |")
    if profiled:
        columns = [name for name in PROFILED if name in profiled]
        lines += ["", "Milliseconds per step by what the operators do (torch.profiler, operators' own CPU time over "
                      "one chunk per variant; 'other' also holds the CPU time no operator holds). The profiler's own "
                      "cost makes these totals larger than the timed steps above: read them as shares.", "",
                  "| | " + " | ".join(VARIANTS[name].label for name in columns) + " | what |",
                  "|---|" + "---:|" * len(columns) + "---|"]
        for key, what in CATEGORIES:
            cells = [f"{profiled[name][key]:.0f} ({profiled[name][key] / sum(profiled[name].values()):.0%})"
                     for name in columns]
            if any(profiled[name][key] >= 0.5 for name in columns):
                lines.append(f"| {key} | " + " | ".join(cells) + f" | {what} |")
        lines.append("| total | " + " | ".join(f"{sum(profiled[name].values()):.0f}" for name in columns) + " | |")
    lines += ["", END]
    write_doc_block(DOC, BEGIN, END, "\n".join(lines))


if __name__ == "__main__":
    main()
