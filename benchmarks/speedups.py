"""Writes docs/speedups.md: ParlAI's table of speed tricks, measured on this machine with this framework.

Each row adds one trick to the row above and runs the whole framework (python run_textbox.py: train with
validation after every epoch, then test) on a slice of the dataset with the default small model, so that the
table takes minutes. Generation is forced to --generation_tokens tokens in every row, so that eval times compare
speed rather than what each partly trained model happens to say. Train time includes validation; eval time is the
test pass (loss and generation); the speed-up is the baseline's train + eval time over the row's. Each row runs
--repeats times; the table shows medians.

    python benchmarks/speedups.py [--data=DIR] [--examples=1000] [--epochs=2] [--repeats=3] [--threads=N]
"""
from __future__ import annotations

import argparse
import json
import os
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


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--examples", type=int, default=1000, help="first N examples of every split (quick_test)")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs, validated after each")
    parser.add_argument("--max_tokens", type=int, default=1088,
                        help="token budget of the dynamic-batching rows (~32 examples on multi30k)")
    parser.add_argument("--generation_tokens", type=int, default=24, help="tokens generated for every example")
    parser.add_argument("--repeats", type=int, default=3, help="runs of every row (medians are shown)")
    add_threads_option(parser)
    return parser.parse_args()


def rows(args: argparse.Namespace) -> list[tuple[str, str, dict[str, Any], int]]:
    """(id, trick, the row's command-line keys, processes): each row adds its trick to the row above."""
    length = args.generation_tokens
    tricks: list[tuple[str, str, dict[str, Any], int]] = [
        ("baseline", "baseline: validation by generation + BLEU",
         {"train_batch_size": BATCH_SIZE, "eval_batch_size": BATCH_SIZE, "metrics_for_best_model": ["bleu"],
          "generation_kwargs": {"min_new_tokens": length, "max_new_tokens": length}}, 1),
        ("skip_generation", "skip generation in validation (loss picks the model)",
         {"metrics_for_best_model": ["loss"]}, 1),
        ("dynamic_batching", "dynamic batching (token budget)", {"max_tokens": args.max_tokens}, 1),
        ("bf16", "bf16 autocast", {"mixed_precision": "bf16"}, 1),
        ("larger_eval_batch", "larger eval batches (4x the token budget)", {"eval_max_tokens": args.max_tokens * 4}, 1),
        ("background_preprocessing", "background preprocessing (a DataLoader worker)", {"num_workers": 1}, 1),
        ("compile", "torch.compile of the training forward", {"compile": True}, 1),
        ("two_processes", "2 processes", {}, 2),
    ]
    table, keys = [], {}
    for row_id, name, added, processes in tricks:
        keys = {**keys, **added}
        table.append((row_id, name, keys, processes))
    return table


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
    done = subprocess.run(command, env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"row {name!r} failed ({' '.join(command)}):\n{done.stderr[-3000:]}")
    return json.loads((work / name / "results.json").read_text())


Timing = dict[str, float]


def timing(runs: list[dict[str, Any]]) -> Timing:
    """Median train, eval and total seconds of a row's runs."""
    return {"train": median([run["train_seconds"] for run in runs]), "eval": median([run["test_seconds"] for run in runs]),
            "total": median([run["train_seconds"] + run["test_seconds"] for run in runs]),
            "compile": median([run.get("compile_seconds", 0.0) for run in runs])}


def markdown(args: argparse.Namespace, table: list[tuple[str, dict[str, Any], int]], timings: list[Timing]) -> str:
    baseline = timings[0]["total"]
    lines = [
        "# Speed-ups, trick by trick",
        "",
        "Written by `python benchmarks/speedups.py` (do not edit by hand). Each row adds one trick to the row above "
        "and runs the whole framework (`run_textbox.py`): the default from-scratch transformer (d=128, 2+2 layers), "
        f"the first {args.examples} examples of every split of `{args.data.name}`, {args.epochs} epochs validated "
        f"after each, then the test pass. Every generation is forced to {args.generation_tokens} tokens (greedy), so "
        "that eval times compare speed, not what each partly trained model happens to say. Train time includes "
        "validation; eval is the test pass (loss and generation); speed-up is the baseline's total over the row's. "
        f"Medians of {args.repeats} runs per row"
        + (f", {args.threads} torch thread(s) per process" if args.threads else "") + ".",
        "",
        "The small model and data slice keep the table to minutes on the project's 2-core CPU machine, which other "
        "work shares (expect noise of 10% or more). They also set what each trick can gain here: per-step overheads "
        "weigh more than matrix products, so bf16 (whose matrix products run ~6x faster than fp32 on this CPU) "
        "gains less than at larger sizes, and a DataLoader worker or a second process competes for the same 2 "
        "cores.",
        "",
        "| trick (cumulative) | train s | (compiling) | eval s | total s | speed-up | added |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    previous: dict[str, Any] = {}
    for (name, keys, processes), row in zip(table, timings):
        added = [f"`--{key}={value!r}`" for key, value in keys.items() if previous.get(key, None) != value]
        previous = keys
        compiling = f"{row['compile']:.1f}" if row["compile"] else ""
        lines.append(f"| {name} | {row['train']:.1f} | {compiling} | {row['eval']:.1f} | {row['total']:.1f} | "
                     f"{baseline / row['total']:.2f}x | {' '.join(added) or f'{processes} processes'} |")
    lines += [
        "",
        "Compiling: `--compile=True` compiles the training forward once per run (dynamic shapes: one graph for "
        "every batch length); the (compiling) column is the part of the train time torch.compile spent, as "
        "results.json's compile_seconds reports it. Inductor's on-disk cache spares later runs the kernel builds "
        "(the first run on a machine compiles for longer), but tracing is paid every run: on a run this short, "
        "compiling costs more than it saves. Compiled decoding (the retired `--decode_compile`) is measured in the "
        "decoding tables below (benchmarks/decode_speed.py).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    args = parse_args()
    table = rows(args)
    runs: list[list[dict[str, Any]]] = [[] for _ in table]
    with tempfile.TemporaryDirectory() as directory:
        for repeat in range(args.repeats):  # rows alternate, so that a busy minute of the machine hits all of them
            for number, (row_id, name, keys, processes) in enumerate(table):
                results = run_row(args, keys, processes, Path(directory), f"{row_id}-{repeat}")
                runs[number].append(results)
                print(f"run {repeat + 1} {name}: train {results['train_seconds']} s, eval {results['test_seconds']} s",
                      flush=True)
    timings = [timing(row_runs) for row_runs in runs]
    tricks = markdown(args, [(name, keys, processes) for _, name, keys, processes in table], timings)
    write_doc_block(DOC, BEGIN, END, f"{BEGIN}\n{tricks.rstrip()}\n{END}", at_start=True)
    print_json_line({"doc": str(DOC.relative_to(REPO)),
                     "total_seconds": {row[0]: round(t["total"], 1) for row, t in zip(table, timings)},
                     "speedup": {row[0]: round(timings[0]["total"] / t["total"], 3) for row, t in zip(table, timings)}})


if __name__ == "__main__":
    main()
