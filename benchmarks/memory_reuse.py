"""--cpu_memory_reuse on and off: seconds per training step of whole runs, alternating, in CPU time split into
user and system (kernel) time.

``python run_textbox.py`` trains the default from-scratch transformer (d=128, 2+2 layers) on the dataset for
--steps steps with a token budget, in --precision, one thread, no validation or test; runs alternate between the
two settings for --repeats rounds. Each run's CPU time per step is read from the process as each logging interval's
line reaches metrics.jsonl (benchmarks/bf16_curve.py's watcher), the median over the intervals after the first; the
table shows the medians over the rounds. System time is what the kernel spends for the process: with glibc's own
settings, mostly faulting in (and zeroing) the pages of memory that malloc handed back after the previous step.

    python benchmarks/memory_reuse.py [--data=DIR] [--steps=60] [--logging_steps=10] [--repeats=3]
        [--precision=bf16] [--write_doc]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bf16_curve import train_and_watch
from common import CACHE_DIR, DEFAULT_DATA, REPO, median, print_json_line, write_doc_block

DOC = REPO / "docs" / "speedups.md"
BEGIN, END = "<!-- memory reuse: written by benchmarks/memory_reuse.py -->", "<!-- end of memory reuse -->"
SETTINGS = {"reuse": "True", "glibc": "False"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--steps", type=int, default=60, help="optimiser steps of every run")
    parser.add_argument("--logging_steps", type=int, default=10, help="steps per timed interval")
    parser.add_argument("--max_tokens", type=int, default=1087, help="token budget of a training batch")
    parser.add_argument("--repeats", type=int, default=3, help="rounds, each running both settings")
    parser.add_argument("--precision", choices=("bf16", "no"), default="bf16", help="--mixed_precision of the runs")
    parser.add_argument("--write_doc", action="store_true", help="write the table into docs/speedups.md")
    return parser.parse_args()


def command(args: argparse.Namespace, work: Path, name: str, reuse: str) -> list[str]:
    return [sys.executable, str(REPO / "run_textbox.py"), "--model=transformer", f"--dataset={args.data.name}",
            f"--data_path={args.data}", f"--cache_dir={CACHE_DIR}", f"--saved_dir={work}", f"--filename={name}",
            f"--max_steps={args.steps}", f"--logging_steps={args.logging_steps}", f"--max_tokens={args.max_tokens}",
            f"--mixed_precision={args.precision}", f"--cpu_memory_reuse={reuse}", "--do_valid=False",
            "--do_test=False", "--tracker=none", "--show_examples=0"]


def per_step(rows: list[dict[str, Any]], times: list[tuple[float, float] | None]) -> dict[str, float]:
    """Median user and system CPU seconds per step over the intervals after the first."""
    user, system = [], []
    for (previous, row), (before, after) in zip(zip(rows, rows[1:]), zip(times, times[1:])):
        if before is None or after is None:
            continue
        steps = row["step"] - previous["step"]
        user.append((after[0] - before[0]) / steps)
        system.append((after[1] - before[1]) / steps)
    return {"user": median(user), "system": median(system), "total": median([a + b for a, b in zip(user, system)])}


def main() -> None:
    args = parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in SETTINGS}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        for repeat in range(args.repeats):
            for name, reuse in SETTINGS.items():
                run = f"{name}-{repeat}"
                rows, times, run_loads = train_and_watch(command(args, work, run, reuse), work, run, env)
                loads += run_loads
                results[name].append(per_step(rows, times))
                shown = results[name][-1]
                print(f"round {repeat + 1} cpu_memory_reuse={reuse}: {shown['total'] * 1e3:.1f} CPU ms per step "
                      f"(system {shown['system'] * 1e3:.1f})", flush=True)
    figures: dict[str, Any] = {"steps": args.steps, "repeats": args.repeats, "max_tokens": args.max_tokens,
                               "precision": args.precision,
                               "load": f"median {median(loads):.1f} (from {min(loads):.1f} to {max(loads):.1f})"}
    for name in SETTINGS:
        for part in ("user", "system", "total"):
            figures[f"{name}_{part}_ms"] = round(median([row[part] for row in results[name]]) * 1e3, 1)
    figures["speed_up_cpu"] = round(figures["glibc_total_ms"] / figures["reuse_total_ms"], 2)
    if args.write_doc:
        write_doc(figures, " ".join(["python benchmarks/memory_reuse.py", *sys.argv[1:]]))
    print_json_line(figures)


def write_doc(figures: dict[str, Any], command_line: str) -> None:
    lines = [BEGIN, "", "## Keeping freed memory (`--cpu_memory_reuse`)", "",
             f"Written by `{command_line}`: whole runs of the default from-scratch transformer (d=128, 2+2 layers), "
             f"{figures['steps']} steps of {figures['max_tokens']} tokens, "
             f"--mixed_precision={figures['precision']}, one thread, alternating between the settings for "
             f"{figures['repeats']} rounds (load average {figures['load']}). CPU milliseconds per step (medians), "
             "split into user and system (kernel) time.", "",
             "| setting | user | system | total | speed-up (CPU) |", "|---|---:|---:|---:|---:|"]
    for name, label in (("glibc", "`--cpu_memory_reuse=False` (glibc's settings)"),
                        ("reuse", "`--cpu_memory_reuse=True` (default)")):
        speed = "1.00x" if name == "glibc" else f"{figures['speed_up_cpu']:.2f}x"
        lines.append(f"| {label} | {figures[f'{name}_user_ms']:.1f} | {figures[f'{name}_system_ms']:.1f} | "
                     f"{figures[f'{name}_total_ms']:.1f} | {speed} |")
    lines += ["", END]
    write_doc_block(DOC, BEGIN, END, "\n".join(lines))


if __name__ == "__main__":
    main()
