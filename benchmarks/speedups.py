"""Writes docs/speedups.md: ParlAI's table of speed tricks, measured on this machine with this framework.

Each row adds one trick to the row above and runs the whole framework (python run_textbox.py: train with
validation every epoch, then test) on a slice of the dataset with a small model, so that the table takes
minutes. Train time includes validation; eval time is the test pass (loss and generation); the speed-up is the
baseline's train + eval time over the row's.

    python benchmarks/speedups.py [--data=DIR] [--examples=1000] [--epochs=2]
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

from common import DEFAULT_DATA, REPO, print_json_line

DOC = REPO / "docs" / "speedups.md"
BATCH_SIZE = 32


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--examples", type=int, default=1000, help="first N examples of every split (quick_test)")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs, validated after each")
    parser.add_argument("--max_tokens", type=int, default=1088,
                        help="token budget of the dynamic-batching rows (~32 examples on multi30k)")
    return parser.parse_args()


def rows(args: argparse.Namespace) -> list[tuple[str, str, list[str], int]]:
    """(id, trick, every command-line key of the row, processes): each row adds its trick to the row above."""
    tricks = [
        ("baseline", "baseline: validation by generation + BLEU",
         [f"--train_batch_size={BATCH_SIZE}", f"--eval_batch_size={BATCH_SIZE}", "--metrics_for_best_model=['bleu']"],
         1),
        ("skip_generation", "skip generation in validation (loss picks the model)",
         ["--metrics_for_best_model=['loss']"], 1),
        ("dynamic_batching", "dynamic batching (token budget)", [f"--max_tokens={args.max_tokens}"], 1),
        ("bf16", "bf16 autocast", ["--mixed_precision=bf16"], 1),
        ("larger_eval_batch", "larger eval batches (4x the token budget)", [f"--eval_max_tokens={args.max_tokens * 4}"],
         1),
        ("background_preprocessing", "background preprocessing (a DataLoader worker)", ["--num_workers=1"], 1),
        ("two_processes", "2 processes", [], 2),
    ]
    table, keys = [], []
    for row_id, name, added, processes in tricks:
        keys = keys + added
        table.append((row_id, name, list(keys), processes))
    return table


def run_row(args: argparse.Namespace, keys: list[str], processes: int, work: Path, name: str) -> dict[str, Any]:
    common = [f"--data_path={args.data}", f"--dataset={args.data.name}", f"--quick_test={args.examples}",
              f"--epochs={args.epochs}", "--tracker=none", f"--saved_dir={work}", f"--filename={name}",
              f"--cache_dir={REPO / '.cache' / 'benchmarks'}"]
    script = [str(REPO / "run_textbox.py"), *common, *keys]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if processes == 1:
        command = [sys.executable, *script]
    else:  # the launch that really starts communicating CPU processes (docs: ENVIRONMENT)
        environment["ACCELERATE_USE_CPU"] = "true"
        precision = "bf16" if "--mixed_precision=bf16" in keys else "no"
        command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes",
                   str(processes), "--num_machines", "1", "--mixed_precision", precision, "--dynamo_backend", "no",
                   "--main_process_port", str(29500 + os.getpid() % 400), *script]
    done = subprocess.run(command, env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"row {name!r} failed ({' '.join(command)}):\n{done.stderr[-3000:]}")
    return json.loads((work / name / "results.json").read_text())


Row = tuple[str, str, list[str], int, dict[str, Any]]


def total_seconds(results: dict[str, Any]) -> float:
    return results["train_seconds"] + results["test_seconds"]


def markdown(args: argparse.Namespace, measured: list[Row]) -> str:
    baseline = total_seconds(measured[0][4])
    lines = [
        "# Speed-ups, trick by trick",
        "",
        "Written by `python benchmarks/speedups.py` (do not edit by hand). Each row adds one trick to the row above",
        f"and runs the whole framework (`run_textbox.py`): the default from-scratch transformer, the first "
        f"{args.examples} examples of every split of `{args.data.name}`, {args.epochs} epochs validated after each, "
        "then the test pass (greedy generation). Train time includes validation; eval is the test pass (loss and "
        "generation); the speed-up is the baseline's train + eval time over the row's. A small model and a slice of "
        "the data keep the whole table to minutes on the project's 2-core CPU machine, which other work shares: "
        "one run per row, so differences of 10% can be noise. Bigger models gain more from bf16 (its matrix "
        "products run ~9x faster than fp32 here) and less from removing per-step overheads.",
        "",
        "| trick (cumulative) | train s | eval s | total s | speed-up | test BLEU | added |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    previous: list[str] = []
    for _, name, keys, processes, results in measured:
        added = [key for key in keys if key not in previous] or [f"{processes} processes"]
        previous = keys
        lines.append(f"| {name} | {results['train_seconds']:.1f} | {results['test_seconds']:.1f} | "
                     f"{total_seconds(results):.1f} | {baseline / total_seconds(results):.2f}x | "
                     f"{results['test']['bleu']:.2f} | {' '.join(f'`{key}`' for key in added)} |")
    lines += [
        "",
        "Not in the table: compiling. Training has no `torch.compile` option in this framework yet, and compiled",
        "static-cache decoding was not adopted on this CPU (see the closing note of issue 5).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    args = parse_args()
    measured: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        for row_id, name, keys, processes in rows(args):
            results = run_row(args, keys, processes, Path(directory), row_id)
            measured.append((row_id, name, keys, processes, results))
            print(f"{name}: train {results['train_seconds']} s, eval {results['test_seconds']} s", flush=True)
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(markdown(args, measured), encoding="utf-8")
    baseline = total_seconds(measured[0][4])
    print_json_line({"doc": str(DOC.relative_to(REPO)),
                     "total_seconds": {row[0]: round(total_seconds(row[4]), 1) for row in measured},
                     "speedup": {row[0]: round(baseline / total_seconds(row[4]), 3) for row in measured}})


if __name__ == "__main__":
    main()
