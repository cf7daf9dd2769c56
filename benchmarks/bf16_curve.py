"""bf16 against fp32 at d_model 512, 6+6 layers: seconds per step and the training loss curve, side by side.

Four ``python run_textbox.py`` processes train the framework's from-scratch transformer at that size on the
dataset one after the other (one thread each): fp32 and bf16 autocast from the same seed, fp32 from another seed,
whose distance from the first fp32 curve is the noise a curve is judged against, and bf16 with
--cpu_memory_reuse=False, which measures that key. (Run at the same time on
this 2-core machine, bf16 lost most of its lead, its matrix units shared.) Figures: the median seconds per step
over the logging intervals after the first, in wall time and in the run's CPU time (read from the process as each
interval's line reaches metrics.jsonl: other work on the machine stretches wall time, less so CPU time, and the
runs cannot share one stretch of time), and the training loss logged every --logging_steps steps (the mean over
the interval).

    python benchmarks/bf16_curve.py [--data=DIR] [--steps=200] [--logging_steps=10] [--max_tokens=1024] [--write_doc]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import CACHE_DIR, DEFAULT_DATA, REPO, median, print_json_line, write_doc_block

DOC = REPO / "docs" / "speedups.md"
BEGIN, END = "<!-- bf16 curve: written by benchmarks/bf16_curve.py -->", "<!-- end of bf16 curve -->"
SIZE = "{'d_model': 512, 'encoder_layers': 6, 'decoder_layers': 6, 'encoder_attention_heads': 8, " \
       "'decoder_attention_heads': 8, 'encoder_ffn_dim': 2048, 'decoder_ffn_dim': 2048, 'dropout': 0.1}"
RUNS = {"fp32": ["--seed=2020"], "bf16": ["--seed=2020", "--mixed_precision=bf16"], "fp32_other_seed": ["--seed=2021"],
        "bf16_glibc_malloc": ["--seed=2020", "--mixed_precision=bf16", "--cpu_memory_reuse=False"]}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--steps", type=int, default=200, help="optimiser steps of every run")
    parser.add_argument("--logging_steps", type=int, default=10, help="steps per logged loss and timed interval")
    parser.add_argument("--max_tokens", type=int, default=1024, help="token budget of a training batch")
    parser.add_argument("--write_doc", action="store_true", help="write the table into docs/speedups.md")
    return parser.parse_args()


def command(args: argparse.Namespace, work: Path, name: str) -> list[str]:
    return [sys.executable, str(REPO / "run_textbox.py"), "--model=transformer", f"--config_kwargs={SIZE}",
            f"--dataset={args.data.name}", f"--data_path={args.data}", f"--cache_dir={CACHE_DIR}",
            f"--saved_dir={work}", f"--filename={name}", f"--max_steps={args.steps}",
            f"--logging_steps={args.logging_steps}", f"--max_tokens={args.max_tokens}", "--do_valid=False",
            "--do_test=False", "--tracker=none", "--show_examples=0", *RUNS[name]]


def main() -> None:
    args = parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    runs: dict[str, Any] = {}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        for name in RUNS:
            rows, cpu_times, run_loads = train_and_watch(command(args, work, name), work, name, env)
            loads += run_loads
            cpu_per_step = [(sum(b) - sum(a)) / (row["step"] - previous["step"])  # intervals after the first
                            for a, b, previous, row in zip(cpu_times, cpu_times[1:], rows, rows[1:])
                            if a is not None and b is not None]
            runs[name] = {"steps": [row["step"] for row in rows], "loss": [round(row["loss"], 4) for row in rows],
                          "seconds_per_step": round(1 / median([row["steps_per_s"] for row in rows[1:]]), 3),
                          "cpu_seconds_per_step": round(median(cpu_per_step), 3)}
            print(name, runs[name], flush=True)
    fp32, bf16, other = (runs[name]["loss"] for name in ("fp32", "bf16", "fp32_other_seed"))
    figures = {"steps": args.steps, "logging_steps": args.logging_steps, "max_tokens": args.max_tokens,
               "runs": runs, "speed_up": round(runs["fp32"]["seconds_per_step"] / runs["bf16"]["seconds_per_step"], 2),
               "speed_up_cpu": round(runs["fp32"]["cpu_seconds_per_step"] / runs["bf16"]["cpu_seconds_per_step"], 2),
               "memory_reuse_speed_up": round(runs["bf16_glibc_malloc"]["seconds_per_step"]
                                              / runs["bf16"]["seconds_per_step"], 2),
               "memory_reuse_speed_up_cpu": round(runs["bf16_glibc_malloc"]["cpu_seconds_per_step"]
                                                  / runs["bf16"]["cpu_seconds_per_step"], 2),
               "bf16_vs_fp32_max_abs": round(max(abs(a - b) for a, b in zip(fp32, bf16)), 4),
               "seed_vs_seed_max_abs": round(max(abs(a - b) for a, b in zip(fp32, other)), 4),
               "bf16_vs_fp32_median_abs": round(median([abs(a - b) for a, b in zip(fp32, bf16)]), 4),
               "seed_vs_seed_median_abs": round(median([abs(a - b) for a, b in zip(fp32, other)]), 4),
               "load": f"median {median(loads):.1f} (from {min(loads):.1f} to {max(loads):.1f})"}
    if args.write_doc:
        write_doc(figures, " ".join(["python benchmarks/bf16_curve.py", *sys.argv[1:]]))
    print_json_line(figures)


def train_and_watch(arguments: list[str], work: Path, name: str,
                    env: dict[str, str]) -> tuple[list[dict[str, Any]], list[tuple[float, float] | None], list[float]]:
    """Run one training process; return its training rows of metrics.jsonl, the process's CPU seconds (user,
    system) read as each row appeared (None for rows that appeared after it ended), and the load average then."""
    import psutil

    metrics = work / name / "metrics.jsonl"
    rows: list[dict[str, Any]] = []
    cpu_times: list[tuple[float, float] | None] = []
    loads: list[float] = []
    seen = 0
    with open(work / f"{name}.out", "w", encoding="utf-8") as output:
        process = subprocess.Popen(arguments, cwd=work, env=env, stdout=output, stderr=subprocess.STDOUT)
        watched = psutil.Process(process.pid)
        finished = False
        while not finished:
            time.sleep(0.05)
            finished = process.poll() is not None
            text = metrics.read_text() if metrics.exists() else ""
            complete = text.splitlines()
            if not (finished or text.endswith("\n")):
                complete = complete[:-1]  # a line still being written
            if len(complete) <= seen:
                continue
            times = None if finished else watched.cpu_times()  # rows found after the exit have no CPU time
            for line in complete[seen:]:
                row = json.loads(line)
                if row.get("split") == "train" and "loss" in row:
                    rows.append(row)
                    cpu_times.append(None if times is None else (times.user, times.system))
                    loads.append(os.getloadavg()[0])
            seen = len(complete)
    if process.returncode != 0 or len(rows) < 3:
        raise SystemExit(f"{name} failed:\n{(work / f'{name}.out').read_text()[-2000:]}")
    return rows, cpu_times, loads


def write_doc(figures: dict[str, Any], command_line: str) -> None:
    runs = figures["runs"]
    lines = [BEGIN, "", "## bf16 against fp32 at d_model 512, 6+6 layers", "",
             f"Written by `{command_line}`: the from-scratch transformer at d_model 512, 6+6 layers, ffn 2048, "
             f"{figures['steps']} steps of {figures['max_tokens']} tokens, runs one after the other (one thread "
             f"each; load average {figures['load']}). bf16 autocast: **{figures['speed_up']:.2f}x** fp32's speed "
             f"in wall time ({runs['bf16']['seconds_per_step']:.2f} against {runs['fp32']['seconds_per_step']:.2f} s "
             f"per step), **{figures['speed_up_cpu']:.2f}x** in CPU time ({runs['bf16']['cpu_seconds_per_step']:.2f} "
             f"against {runs['fp32']['cpu_seconds_per_step']:.2f} CPU s per step); medians of the intervals after the "
             f"first. Loss curves (mean training loss of each {figures['logging_steps']}-step interval): bf16 differs "
             f"from fp32 of the same seed by {figures['bf16_vs_fp32_median_abs']:.4f} (median over the intervals) and "
             f"at most {figures['bf16_vs_fp32_max_abs']:.4f}; fp32 of another seed differs from it by "
             f"{figures['seed_vs_seed_median_abs']:.4f} and at most {figures['seed_vs_seed_max_abs']:.4f} (the noise). "
             f"A fourth run, bf16 with `--cpu_memory_reuse=False` (glibc's own malloc settings: freed memory goes "
             f"back to the system and is faulted in again), took {runs['bf16_glibc_malloc']['seconds_per_step']:.2f} "
             f"s and {runs['bf16_glibc_malloc']['cpu_seconds_per_step']:.2f} CPU s per step, against "
             f"{runs['bf16']['seconds_per_step']:.2f} and {runs['bf16']['cpu_seconds_per_step']:.2f} with the default "
             f"(CPU time ratio {figures['memory_reuse_speed_up_cpu']:.2f}x).",
             "",
             "| step | fp32 | bf16 | fp32, other seed |", "|---:|---:|---:|---:|"]
    for step, a, b, c in zip(runs["fp32"]["steps"], runs["fp32"]["loss"], runs["bf16"]["loss"],
                             runs["fp32_other_seed"]["loss"]):
        lines.append(f"| {step} | {a:.4f} | {b:.4f} | {c:.4f} |")
    lines += ["", END]
    write_doc_block(DOC, BEGIN, END, "\n".join(lines))


if __name__ == "__main__":
    main()
