"""Writes docs/speedups.md: ParlAI's table of speed tricks, measured on this machine with this framework.

Each row adds one trick to the last row carried forward and runs the whole framework (python run_textbox.py: train
with validation after every epoch, then test) on a slice of the dataset, with the from-scratch transformer at
ParlAI's size (its tutorial's `--n-layers 8`, which sets 8 encoder and 8 decoder layers, at the d_model 256 and ffn
1024 of its fp16 rows; --config_kwargs changes it). Generation is forced to --generation_tokens tokens in every row,
so that eval times compare speed rather than what each partly trained model happens to say. Train time includes
validation; eval time is the test pass (loss and generation); the speed-up is the baseline's train + eval time over
the row's in the same round (median over the rounds). The rows that compete for a 2-core machine's cores (a
DataLoader worker, a second process) or do not pay on a run this short (compiling) are run on top of the last row
carried forward and reported apart: the rows after them do not include them. Rows run in turn, --repeats rounds.

    python benchmarks/speedups.py [--data=DIR] [--examples=1000] [--epochs=2] [--repeats=3] [--threads=1]
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import DEFAULT_DATA, REPO, add_threads_option, median, print_json_line, write_doc_block

DOC = REPO / "docs" / "speedups.md"
# This script's part of the doc; benchmarks/decode_speed.py writes the decoding table below it.
BEGIN, END = "<!-- tricks table: written by benchmarks/speedups.py -->", "<!-- end of tricks table -->"
BATCH_SIZE = 32
PARLAI_SIZE = {"d_model": 256, "encoder_layers": 8, "decoder_layers": 8, "encoder_attention_heads": 4,
               "decoder_attention_heads": 4, "encoder_ffn_dim": 1024, "decoder_ffn_dim": 1024}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--examples", type=int, default=1000, help="first N examples of every split (quick_test)")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs, validated after each")
    parser.add_argument("--max_tokens", type=int, default=1088,
                        help="token budget of the dynamic-batching rows (~32 examples on multi30k)")
    parser.add_argument("--generation_tokens", type=int, default=24, help="tokens generated for every example")
    parser.add_argument("--repeats", type=int, default=3, help="runs of every row (medians are shown)")
    parser.add_argument("--config_kwargs", type=ast.literal_eval, default=PARLAI_SIZE,
                        help="model size, merged over configs/model/transformer.yaml's (default: ParlAI's)")
    add_threads_option(parser)
    parser.set_defaults(threads=1)
    return parser.parse_args()


Row = tuple[str, str, dict[str, Any], int, bool]  # id, trick, the keys it adds, processes, carried forward


def rows(args: argparse.Namespace) -> list[Row]:
    """Each row adds its keys to those of the rows carried forward before it."""
    length = args.generation_tokens
    return [
        ("baseline", "baseline: validation by generation + BLEU",
         {"config_kwargs": args.config_kwargs, "train_batch_size": BATCH_SIZE, "eval_batch_size": BATCH_SIZE,
          "metrics_for_best_model": ["bleu"],
          "generation_kwargs": {"min_new_tokens": length, "max_new_tokens": length}}, 1, True),
        ("skip_generation", "skip generation in validation (loss picks the model)",
         {"metrics_for_best_model": ["loss"]}, 1, True),
        ("dynamic_batching", "dynamic batching (token budget)", {"max_tokens": args.max_tokens}, 1, True),
        ("bf16", "bf16 autocast", {"mixed_precision": "bf16"}, 1, True),
        ("larger_eval_batch", "larger eval batches (4x the token budget)", {"eval_max_tokens": args.max_tokens * 4},
         1, True),
        ("larger_batches", "larger training batches (2x the token budget)", {"max_tokens": args.max_tokens * 2}, 1,
         True),
        ("background_preprocessing", "background preprocessing (a DataLoader worker)", {"num_workers": 1}, 1, False),
        ("compile", "torch.compile of the training forward", {"compile": True}, 1, False),
        ("two_processes", "2 processes", {}, 2, False),
    ]


def row_keys(table: list[Row], number: int) -> dict[str, Any]:
    """The keys row ``number`` runs with: those of every row carried forward before it, then its own."""
    keys: dict[str, Any] = {}
    for _, _, added, _, carried in table[:number]:
        if carried:
            keys = {**keys, **added}
    return {**keys, **table[number][2]}


def run_row(args: argparse.Namespace, keys: dict[str, Any], processes: int, work: Path, name: str) -> dict[str, Any]:
    common = [f"--data_path={args.data}", f"--dataset={args.data.name}", f"--quick_test={args.examples}",
              f"--epochs={args.epochs}", "--tracker=none", f"--saved_dir={work}", f"--filename={name}",
              f"--cache_dir={REPO / '.cache' / 'benchmarks'}"]
    script = [str(REPO / "run_textbox.py"), *common, *(f"--{key}={value!r}" for key, value in keys.items())]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if args.threads is not None:  # per process: torch reads it at start-up
        environment["OMP_NUM_THREADS"] = str(args.threads)
    if processes == 1:
        command = [sys.executable, *script]
    else:  # the launch that really starts communicating CPU processes (docs: ENVIRONMENT)
        environment["ACCELERATE_USE_CPU"] = "true"
        precision = keys.get("mixed_precision", "no")
        command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes",
                   str(processes), "--num_machines", "1", "--mixed_precision", precision, "--dynamo_backend", "no",
                   "--main_process_port", str(29500 + os.getpid() % 400), *script]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=environment, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"row {name!r} failed ({' '.join(command)}):\n{done.stderr[-3000:]}")
    results = json.loads((work / name / "results.json").read_text())
    # the whole run's CPU time (start-up included, every process): what other work on the machine disturbs less
    results["cpu_seconds"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return results


Timing = dict[str, float]


def total(run: dict[str, Any]) -> float:
    return run["train_seconds"] + run["test_seconds"]


def timing(runs: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> Timing:
    """Median train, eval, total and CPU seconds of a row's runs, and its speed-ups: the baseline's total (CPU) time
    over the row's in each round, the median over the rounds (rows of one round ran minutes apart, so a load that
    changes over the rounds cancels out)."""
    return {"train": median([run["train_seconds"] for run in runs]),
            "eval": median([run["test_seconds"] for run in runs]),
            "total": median([total(run) for run in runs]),
            "compile": median([run.get("compile_seconds", 0.0) for run in runs]),
            "cpu": median([run["cpu_seconds"] for run in runs]),
            "speed_up": median([total(base) / total(run) for base, run in zip(baseline, runs)]),
            "speed_up_cpu": median([base["cpu_seconds"] / run["cpu_seconds"] for base, run in zip(baseline, runs)])}


def markdown(args: argparse.Namespace, table: list[Row], timings: list[Timing], loads: list[float]) -> str:
    size = args.config_kwargs
    lines = [
        "# Speed-ups, trick by trick",
        "",
        f"Written by `python benchmarks/speedups.py {' '.join(sys.argv[1:])}`".rstrip() + " (do not edit by hand). "
        "Each row adds one trick and runs the whole framework (`run_textbox.py`): the from-scratch transformer at "
        f"ParlAI's size (d_model {size.get('d_model')}, {size.get('encoder_layers')}+{size.get('decoder_layers')} "
        f"layers, ffn {size.get('encoder_ffn_dim')}: its speed-up tutorial's `--n-layers 8`, which sets both stacks, "
        "at the sizes of its fp16 rows), "
        f"the first {args.examples} examples of every split of `{args.data.name}`, {args.epochs} epochs validated "
        f"after each, then the test pass. Every generation is forced to {args.generation_tokens} tokens (greedy), so "
        "that eval times compare speed, not what each partly trained model happens to say. Train time includes "
        "validation; eval is the test pass (loss and generation); CPU s is the whole run's CPU time (start-up and "
        "every process included); speed-up is the baseline's total (CPU) time over the row's in the same round, the "
        "median over the rounds. "
        f"Medians of {args.repeats} rounds (rows in turn in each round), {args.threads} torch thread(s) per process, "
        f"on the project's 2-core CPU machine shared with other work (load average {describe(loads)}).",
        "",
        "Rows carried forward add their trick to every carried row above them. The rows marked *not carried "
        "forward* are measured on top of the last carried row only, and the rows after them leave them out: a "
        "DataLoader worker competes for the core the training process uses, and compiling costs more than it "
        "saves on a run this short. Two processes of one thread each use the second core that every other row "
        "leaves to the machine's other work: the fastest row on a quiet machine (half its speed-up in CPU time), "
        "on a busy one it lost; it is a choice of hardware, not a trick to stack. Their rows show what each did "
        "here. Larger training batches mean fewer optimiser steps for the same epochs (ParlAI's table has the "
        "same row): a change to the training, not only to its speed. Skipping generation in validation is the "
        "framework's default (`metrics_for_best_model: ['loss']`); the baseline validates by generation and BLEU,"
        " as TextBox's recipes do, so its row shows what the default saves.",
        "",
        "| trick | carried forward | train s | (compiling) | eval s | total s | CPU s | speed-up | speed-up (CPU) "
        "| added |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for number, ((_, name, added, processes, carried), row) in enumerate(zip(table, timings)):
        shown = [f"`--{key}={value!r}`" for key, value in added.items()] if number else \
            [f"`--{key}={value!r}`" for key, value in added.items() if key != "config_kwargs"]
        if processes > 1:
            shown.append(f"{processes} processes")
        compiling = f"{row['compile']:.1f}" if row["compile"] else ""
        lines.append(f"| {name} | {'yes' if carried else 'no'} | {row['train']:.1f} | {compiling} | "
                     f"{row['eval']:.1f} | {row['total']:.1f} | {row['cpu']:.0f} | {row['speed_up']:.2f}x | "
                     f"{row['speed_up_cpu']:.2f}x | {' '.join(shown)} |")
    lines += [
        "",
        "Compiling: `--compile=True` compiles the training forward once per run (dynamic shapes: one graph for "
        "every batch length); the (compiling) column is the part of the train time torch.compile spent, as "
        "results.json's compile_seconds reports it. Inductor's on-disk cache spares later runs the kernel builds "
        "(the first run on a machine compiles for longer), but tracing is paid every run. Compiled decoding (the "
        "retired `--decode_compile`) is measured in the decoding tables below (benchmarks/decode_speed.py).",
    ]
    return "\n".join(lines) + "\n"


def describe(loads: list[float]) -> str:
    return f"median {median(loads):.1f}, from {min(loads):.1f} to {max(loads):.1f}"


def main() -> None:
    args = parse_args()
    table = rows(args)
    runs: list[list[dict[str, Any]]] = [[] for _ in table]
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as directory:
        for repeat in range(args.repeats):  # rows alternate, so that a busy minute of the machine hits all of them
            for number, (row_id, name, _, processes, _) in enumerate(table):
                results = run_row(args, row_keys(table, number), processes, Path(directory), f"{row_id}-{repeat}")
                runs[number].append(results)
                loads.append(os.getloadavg()[0])
                print(f"run {repeat + 1} {name}: train {results['train_seconds']} s, eval {results['test_seconds']} s, "
                      f"CPU {results['cpu_seconds']:.1f} s, compiling {results.get('compile_seconds', 0.0)} s, "
                      f"load {loads[-1]:.1f}", flush=True)
    timings = [timing(row_runs, runs[0]) for row_runs in runs]
    tricks = markdown(args, table, timings, loads)
    write_doc_block(DOC, BEGIN, END, f"{BEGIN}\n{tricks.rstrip()}\n{END}", at_start=True)
    print_json_line({"doc": str(DOC.relative_to(REPO)), "load": describe(loads),
                     "total_seconds": {row[0]: round(t["total"], 1) for row, t in zip(table, timings)},
                     "cpu_seconds": {row[0]: round(t["cpu"], 1) for row, t in zip(table, timings)},
                     "speedup": {row[0]: round(t["speed_up"], 3) for row, t in zip(table, timings)},
                     "speedup_cpu": {row[0]: round(t["speed_up_cpu"], 3) for row, t in zip(table, timings)},
                     "runs": {row[0]: [{key: run.get(key) for key in ("train_seconds", "test_seconds", "cpu_seconds",
                                                                      "compile_seconds")} for run in row_runs]
                              for row, row_runs in zip(table, runs)}})


if __name__ == "__main__":
    main()
