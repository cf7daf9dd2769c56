"""Peak memory and step time of the precision and memory levers, each a short run of the whole framework.

Two saved models stand in for pretrained checkpoints (random weights, the dataset's tokenizer; built once and kept
under .cache/benchmarks/models/): a BART-architecture d_model 512, 6+6 layers seq2seq model and a GPT-2-small
architecture (12 layers, d 768) causal LM. Each setting is one ``python run_textbox.py`` process training for
--steps steps on the dataset (no validation, no test); its peak RSS is the kernel's count for that process
(``wait4``'s ru_maxrss: the interpreter, torch and the data included), its seconds per step the median of the
logging intervals after the first (which holds the warm-up). Settings run one after the other, model by model, so
compare rows of one table only.

    python benchmarks/memory_speed.py [--data=DIR] [--steps=20] [--max_tokens=1024] [--threads=1] [--write_doc]
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

from common import CACHE_DIR, DEFAULT_DATA, REPO, framework_config, median, print_json_line, write_doc_block

DOC = REPO / "docs" / "speedups.md"
BEGIN, END = "<!-- memory table: written by benchmarks/memory_speed.py -->", "<!-- end of memory table -->"
# (row label, keys): full fine-tuning in three precisions, then the adapter with the base in float and quantised
SETTINGS = {
    "fp32": ("fp32, full fine-tuning", []),
    "bf16": ("bf16 autocast, full fine-tuning", ["--mixed_precision=bf16"]),
    "bf16_gc": ("bf16 + gradient checkpointing, full fine-tuning",
                ["--mixed_precision=bf16", "--gradient_checkpointing=True"]),
    "lora": ("fp32 base + LoRA", ["--efficient_methods=['lora']"]),
    "nf4_lora": ("NF4 base + LoRA (QLoRA)", ["--quantization=nf4", "--efficient_methods=['lora']"]),
    "int8_lora": ("INT8 base + LoRA", ["--quantization=int8", "--efficient_methods=['lora']"]),
}
MODELS = {"bart512": ("BART architecture, d_model 512, 6+6 layers", "bart"),
          "gpt2": ("GPT-2-small architecture, 12 layers, d 768", "gpt2")}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--steps", type=int, default=20, help="optimiser steps per setting")
    parser.add_argument("--logging_steps", type=int, default=4, help="steps per timed interval")
    parser.add_argument("--max_tokens", type=int, default=1024, help="token budget of a training batch")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of every run")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated, of {', '.join(SETTINGS)}")
    parser.add_argument("--write_doc", action="store_true", help="write the table into docs/speedups.md")
    return parser.parse_args()


def saved_models(data: Path) -> dict[str, Path]:
    """{model name: directory with config, weights and tokenizer}, built once from the dataset's tokenizer."""
    root = CACHE_DIR / "models" / data.name
    paths = {name: root / name for name in MODELS}
    if all((path / "config.json").is_file() for path in paths.values()):
        return paths
    import torch
    from transformers import BartForConditionalGeneration, GPT2Config, GPT2LMHeadModel

    from textbox.data import read_splits
    from textbox.model.build import build_model

    config = framework_config(data)
    built = build_model(config, read_splits(config, ["train"], log=lambda message: None)["train"])
    tokenizer, small = built.tokenizer, built.model
    torch.manual_seed(0)
    bart = BartForConditionalGeneration(small.config.__class__(**{
        **small.config.to_dict(), "d_model": 512, "encoder_layers": 6, "decoder_layers": 6,
        "encoder_attention_heads": 8, "decoder_attention_heads": 8, "encoder_ffn_dim": 2048,
        "decoder_ffn_dim": 2048}))
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                                      bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    for name, model in (("bart512", bart), ("gpt2", gpt2)):
        model.save_pretrained(paths[name])
        tokenizer.save_pretrained(paths[name])
    return paths


def run_setting(args: argparse.Namespace, family: str, path: Path, keys: list[str], work: Path) -> dict[str, Any]:
    """One training run: its peak RSS (MiB), seconds per step (median of the intervals after the first), the
    number of trainable parameters it logged, and its exit status."""
    command = [sys.executable, str(REPO / "run_textbox.py"), f"--model={family}", f"--model_path={path}",
               f"--dataset={args.data.name}", f"--data_path={args.data}", f"--cache_dir={CACHE_DIR}",
               f"--saved_dir={work}", "--filename=run", f"--max_steps={args.steps}",
               f"--logging_steps={args.logging_steps}", f"--max_tokens={args.max_tokens}", "--do_valid=False",
               "--do_test=False", "--tracker=none", "--show_examples=0", *keys]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    with open(work / "output.txt", "w", encoding="utf-8") as output:
        process = subprocess.Popen(command, cwd=work, env=env, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    figures: dict[str, Any] = {"returncode": process.returncode, "peak_rss_mib": round(usage.ru_maxrss / 1024)}
    metrics = work / "run" / "metrics.jsonl"
    if process.returncode != 0 or not metrics.is_file():
        figures["error"] = (work / "output.txt").read_text(encoding="utf-8")[-1500:]
        return figures
    rates = [row["steps_per_s"] for row in map(json.loads, metrics.read_text().splitlines())
             if row.get("split") == "train" and "steps_per_s" in row]
    figures["seconds_per_step"] = round(1 / median(rates[1:] or rates), 3)
    figures["timed_intervals"] = len(rates[1:] or rates)
    return figures


def write_doc(figures: dict[str, Any], command: str) -> None:
    lines = [BEGIN, "", "## Memory and step time: precision, gradient checkpointing, quantised base weights", "",
             f"Written by `{command}`. Each row is one `run_textbox.py` process training {figures['steps']} steps "
             f"on `{figures['data']}` (token budget {figures['max_tokens']}, {figures['threads']} thread(s), no "
             f"validation): peak RSS of the process (interpreter, torch and data included: compare rows, not "
             f"against the weights alone) and the median seconds per step over the logging intervals after the "
             f"first ({figures['logging_steps']} steps each). The models are saved with random weights (they stand "
             f"in for pretrained checkpoints; `--quantization` needs one). Settings ran one after the other on the "
             f"project's 2-core machine shared with other work; load average (1 min) "
             f"{figures['load']}.", ""]
    for model, (title, _) in MODELS.items():
        rows = {setting: figures["runs"][f"{model}/{setting}"] for setting in SETTINGS
                if f"{model}/{setting}" in figures["runs"]}
        if not rows:
            continue
        base = rows.get("fp32", {})
        lines += [f"### {title}", "", "| setting | peak RSS (MiB) | vs fp32 | s/step | vs fp32 | keys |",
                  "|---|---:|---:|---:|---:|---|"]
        for setting, run in rows.items():
            label, keys = SETTINGS[setting]
            if "error" in run:
                lines.append(f"| {label} | failed (exit {run['returncode']}) | | | | {' '.join(keys)} |")
                continue
            memory = f"{run['peak_rss_mib'] / base['peak_rss_mib']:.2f}x" if "peak_rss_mib" in base else ""
            speed = f"{base['seconds_per_step'] / run['seconds_per_step']:.2f}x" \
                if "seconds_per_step" in base else ""
            flags = " ".join(f"`{key}`" for key in keys) or "(defaults)"
            lines.append(f"| {label} | {run['peak_rss_mib']} | {memory} | {run['seconds_per_step']:.2f} | {speed} | "
                         f"{flags} |")
        lines.append("")
    lines.append("*vs fp32*: memory as a fraction of fp32's, speed as fp32's seconds per step over the row's.")
    lines += ["", END]
    write_doc_block(DOC, BEGIN, END, "\n".join(lines))


def main() -> None:
    args = parse_args()
    paths = saved_models(args.data)
    runs: dict[str, Any] = {}
    loads = []
    for model in args.models.split(","):
        for setting in args.settings.split(","):
            with tempfile.TemporaryDirectory() as work:
                started = time.perf_counter()
                run = run_setting(args, MODELS[model][1], paths[model], SETTINGS[setting][1], Path(work))
            loads.append(os.getloadavg()[0])
            run["wall_seconds"] = round(time.perf_counter() - started, 1)
            runs[f"{model}/{setting}"] = run
            print(f"{model} {setting}: {run} (load {loads[-1]:.1f})", flush=True)
    figures = {"data": args.data.name, "steps": args.steps, "logging_steps": args.logging_steps,
               "max_tokens": args.max_tokens, "threads": args.threads, "runs": runs,
               "load": f"median {median(loads):.1f} (from {min(loads):.1f} to {max(loads):.1f})"}
    if args.write_doc:
        write_doc(figures, " ".join(["python benchmarks/memory_speed.py", *sys.argv[1:]]))
    print_json_line(figures)


if __name__ == "__main__":
    main()
