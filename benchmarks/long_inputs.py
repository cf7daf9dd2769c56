"""Long inputs: step time, peak memory and tokens per second at src_len 1024 (CNN/DM's) against src_len 256, plain,
with gradient checkpointing and with token-budget batches.

The corpus is CNN/DM-shaped and built under /tmp from multi30k's English sentences: every source joins random
sentences up to --words words (default 950-1150: 1,050-1,350 tokens of the runs' BPE, more than src_len 1024
holds, as CNN/DM articles often are for BART's 1024; 700-900 words made only 790-1,050 tokens of this BPE,
multi30k's words being short and common), every target is 3 of its sentences (a highlight-sized summary). The model
is the framework's from-scratch transformer (BART architecture) at d_model 256, 3+3 layers, ffn 1024, 4 heads, with
1024 learned positions at both lengths (one model, so that only the length changes). Each configuration is one
``python run_textbox.py`` process training --steps steps (no validation, no test), logging every step:

- step time: the median of the steps after the first --warmup ones, each from one forward call of the model to the
  next (the last step is left out), on the wall clock and on the process's CPU clock (which the machine's other work
  stretches less);
- peak memory: the process's peak RSS (``wait4``'s ru_maxrss: interpreter, torch and data included), what training
  added to it (that peak less the peak before the first forward call: activations, gradients, optimiser state) and,
  where the run used a GPU, ``torch.cuda.max_memory_allocated()`` read at its exit;
- tokens per second: real (unpadded) source + target tokens of a step over its time; a source counts
  min(its length, src_len) tokens (every source here is cut to src_len: the exact count), examples and target
  tokens as metrics.jsonl logs them step by step.

The configurations alternate within each of --repeats rounds (after one untimed round that tokenises and caches
the data), so a busy minute of the machine hits all of them; figures are medians over the rounds. The load
average is recorded before every run.

    python benchmarks/long_inputs.py [--data=DIR] [--steps=8] [--repeats=3] [--batch_size=4] [--write_doc]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import CACHE_DIR, DEFAULT_DATA, REPO, framework_config, median, print_json_line, write_doc_block

DOC = REPO / "docs" / "training.md"
BEGIN, END = "<!-- long inputs table: written by benchmarks/long_inputs.py -->", "<!-- end of long inputs table -->"
LENGTHS = (256, 1024)
TGT_LEN = 128  # CNN/DM's in the catalogue
SIZE = {"d_model": 256, "encoder_layers": 3, "decoder_layers": 3, "encoder_attention_heads": 4,
        "decoder_attention_heads": 4, "encoder_ffn_dim": 1024, "decoder_ffn_dim": 1024,
        "max_position_embeddings": max(LENGTHS)}
CORPUS = Path(tempfile.gettempdir()) / "textbox_long_inputs" / "cnndm_shaped"
MODES = {"plain": "plain", "checkpointing": "`--gradient_checkpointing=True`", "max_tokens": "`--max_tokens={}`"}
# Run at exit of a configuration's process: the CUDA peak where the run used a GPU (nothing is imported for it).
# The process that runs one configuration: run_textbox.py, with a global hook that removes itself at the first
# forward call (the model built, the data loaded), noting the peak RSS so far and then timing every forward call of
# the model it met first (the whole model: one call per training step; checkpointing recomputes layers, not it) on
# the wall clock and on this process's CPU clock; the CUDA peak is read at exit.
CHILD = """import atexit, json, resource, runpy, sys, time
import torch
out, script = sys.argv[1], sys.argv[2]
figures = {"rss_before_training_kib": None, "cuda_peak_bytes": None, "forward_starts": []}
def clock(module, args):
    figures["forward_starts"].append((time.perf_counter(), time.process_time()))
def first_forward(module, args):
    figures["rss_before_training_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    handle.remove()
    module.register_forward_pre_hook(clock)
    clock(module, args)
handle = torch.nn.modules.module.register_module_forward_pre_hook(first_forward)
def report():
    if torch.cuda.is_initialized():
        figures["cuda_peak_bytes"] = torch.cuda.max_memory_allocated()
    with open(out, "w") as file:
        json.dump(figures, file)
atexit.register(report)
sys.argv = sys.argv[2:]
runpy.run_path(script, run_name="__main__")
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset whose train.src "
                                                                        "sentences make the corpus")
    parser.add_argument("--corpus", type=Path, default=CORPUS,
                        help="where the CNN/DM-shaped corpus is written")
    parser.add_argument("--pairs", type=int, default=400, help="training pairs of the corpus")
    parser.add_argument("--words", type=int, nargs=2, default=(950, 1150), metavar=("LOW", "HIGH"),
                        help="words of a source, drawn uniformly from LOW to HIGH")
    parser.add_argument("--steps", type=int, default=8, help="optimiser steps per run")
    parser.add_argument("--warmup", type=int, default=2, help="first steps left out of the medians")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (configurations interleaved)")
    parser.add_argument("--batch_size", type=int, default=4, help="train_batch_size of the plain and checkpointing "
                                                                  "runs")
    parser.add_argument("--max_tokens", type=int, default=None,
                        help="token budget of the max_tokens runs, at both lengths (default: batch_size x "
                             f"({max(LENGTHS)} + {TGT_LEN}), the padded size of a plain batch at src_len "
                             f"{max(LENGTHS)})")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of every run")
    parser.add_argument("--write_doc", action="store_true", help="write the table into docs/training.md")
    args = parser.parse_args()
    if args.max_tokens is None:
        args.max_tokens = args.batch_size * (max(LENGTHS) + TGT_LEN)
    if args.steps < args.warmup + 2:
        parser.error(f"--steps={args.steps} must be at least --warmup + 2 (the last step has no end time)")
    return args


def build_corpus(sentences_file: Path, corpus: Path, pairs: int, words: tuple[int, int],
                 seed: int = 0) -> dict[str, list[str]]:
    """train/valid/test .src/.tgt under ``corpus``: sources of ``words`` (low, high) words of random sentences,
    targets 3 of them; {split: sources}. Rebuilt every time (a few MB), so that the files match these settings."""
    rng = random.Random(seed)
    sentences = [line.strip() for line in sentences_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    corpus.mkdir(parents=True, exist_ok=True)
    sources: dict[str, list[str]] = {}
    for split, count in (("train", pairs), ("valid", 16), ("test", 16)):
        src, tgt = [], []
        for _ in range(count):
            length, chosen = rng.randint(*words), list[str]()
            while sum(len(sentence.split()) for sentence in chosen) < length:
                chosen.append(rng.choice(sentences))
            src.append(" ".join(chosen))
            tgt.append(" ".join(rng.sample(chosen, 3)))
        (corpus / f"{split}.src").write_text("\n".join(src) + "\n", encoding="utf-8")
        (corpus / f"{split}.tgt").write_text("\n".join(tgt) + "\n", encoding="utf-8")
        sources[split] = src
    return sources


def corpus_facts(corpus: Path, sources: list[str]) -> tuple[list[int], int]:
    """Token counts of the training sources, untruncated, with the BPE tokenizer the runs train (same texts, same
    settings: the same cache entry), special tokens included; and the parameters of the runs' model."""
    from textbox.data import read_splits
    from textbox.model.build import build_model

    config = framework_config(corpus, model="transformer", config_kwargs=SIZE)
    built = build_model(config, read_splits(config, ["train"], log=lambda message: None)["train"])
    parameters = sum(parameter.numel() for parameter in built.model.parameters())
    return [len(ids) for ids in built.tokenizer(sources)["input_ids"]], parameters


def command(args: argparse.Namespace, src_len: int, mode: str, work: Path, steps: int) -> list[str]:
    keys = ["--model=transformer", f"--config_kwargs={SIZE!r}", f"--dataset={args.corpus.name}",
            f"--data_path={args.corpus}", f"--cache_dir={CACHE_DIR}", f"--saved_dir={work}", "--filename=run",
            f"--src_len={src_len}", f"--tgt_len={TGT_LEN}", f"--max_steps={steps}", "--logging_steps=1",
            "--do_valid=False", "--do_test=False", "--tracker=none", "--show_examples=0",
            f"--train_batch_size={args.batch_size}"]
    if mode == "checkpointing":
        keys.append("--gradient_checkpointing=True")
    elif mode == "max_tokens":
        keys.append(f"--max_tokens={args.max_tokens}")
    return [sys.executable, "-c", CHILD, str(work / "child.json"), str(REPO / "run_textbox.py"), *keys]


def run_once(args: argparse.Namespace, src_len: int, mode: str, mean_source: float, steps: int) -> dict[str, Any]:
    """One configuration's process: its figures per timed step, its peak memory, its exit status."""
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "TQDM_DISABLE": "1"}
    with tempfile.TemporaryDirectory() as name:
        work = Path(name)
        with open(work / "output.txt", "w", encoding="utf-8") as output:
            process = subprocess.Popen(command(args, src_len, mode, work, steps), cwd=work, env=env, stdout=output,
                                       stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(process.pid, 0)
        figures: dict[str, Any] = {"returncode": os.waitstatus_to_exitcode(status),
                                   "peak_rss_mib": round(usage.ru_maxrss / 1024)}
        metrics = work / "run" / "metrics.jsonl"
        if figures["returncode"] != 0 or not metrics.is_file():
            figures["error"] = (work / "output.txt").read_text(encoding="utf-8")[-1500:]
            return figures
        child = json.loads((work / "child.json").read_text())
        if child["rss_before_training_kib"] is not None:
            figures["training_rss_mib"] = round((usage.ru_maxrss - child["rss_before_training_kib"]) / 1024)
        if child["cuda_peak_bytes"] is not None:
            figures["cuda_peak_mib"] = round(child["cuda_peak_bytes"] / 2 ** 20)
        rows = [row for row in map(json.loads, metrics.read_text().splitlines())
                if row.get("split") == "train" and "steps_per_s" in row]
    starts = child["forward_starts"]
    if len(starts) != len(rows) or len(rows) != steps:
        figures["error"] = f"{len(starts)} forward calls and {len(rows)} logged steps for {steps} steps"
        return figures
    # step i ran from forward call i to forward call i + 1: the last step has no end and is left out
    timed = range(args.warmup, steps - 1)
    seconds = [starts[i + 1][0] - starts[i][0] for i in timed]
    cpu_seconds = [starts[i + 1][1] - starts[i][1] for i in timed]
    examples = [rows[i]["examples_per_s"] / rows[i]["steps_per_s"] for i in timed]
    target_tokens = [rows[i]["tokens_per_s"] / rows[i]["steps_per_s"] for i in timed]
    figures["seconds_per_step"] = median(seconds)
    figures["cpu_seconds_per_step"] = median(cpu_seconds)
    figures["examples_per_step"] = median(examples)
    figures["tokens_per_s"] = median([(count * mean_source + target) / second
                                      for count, target, second in zip(examples, target_tokens, seconds)])
    return figures


def main() -> None:
    args = parse_args()
    sources = build_corpus(args.data / "train.src", args.corpus, args.pairs, tuple(args.words))
    lengths, parameters = corpus_facts(args.corpus, sources["train"])
    load_start = os.getloadavg()
    print(f"corpus {args.corpus}: {len(lengths)} training sources of {min(lengths)}-{max(lengths)} tokens "
          f"(median {median([float(length) for length in lengths])}); load {load_start}", flush=True)
    mean_source = {src_len: sum(min(length, src_len) for length in lengths) / len(lengths) for src_len in LENGTHS}
    configurations = [(src_len, mode) for src_len in LENGTHS for mode in MODES]
    for src_len in LENGTHS:  # untimed: trains the tokenizer and caches the tokenised splits at this length
        warm = run_once(args, src_len, "plain", mean_source[src_len], args.warmup + 2)
        if "error" in warm:
            raise SystemExit(f"error: the warm-up run at src_len {src_len} failed:\n{warm['error']}")
    runs: dict[str, list[dict[str, Any]]] = {f"{src_len}/{mode}": [] for src_len, mode in configurations}
    loads = []
    for round_number in range(args.repeats):
        for src_len, mode in configurations:
            loads.append(os.getloadavg()[0])
            run = run_once(args, src_len, mode, mean_source[src_len], args.steps)
            runs[f"{src_len}/{mode}"].append(run)
            print(f"round {round_number} src_len {src_len} {mode}: {run} (load {loads[-1]:.1f})", flush=True)
    figures = {
        "steps": args.steps, "warmup": args.warmup, "repeats": args.repeats, "batch_size": args.batch_size,
        "max_tokens": args.max_tokens, "threads": args.threads, "pairs": args.pairs, "words": args.words,
        "parameters": parameters,
        "source_tokens": {"min": min(lengths), "median": median([float(length) for length in lengths]),
                          "max": max(lengths),
                          "cut_at_1024": sum(length > 1024 for length in lengths) / len(lengths)},
        "load": f"median {median(loads):.1f} (from {min(loads):.1f} to {max(loads):.1f})",
        "configurations": {key: summarise(rows) for key, rows in runs.items()}}
    if args.write_doc:
        write_doc(figures, " ".join(["python benchmarks/long_inputs.py", *sys.argv[1:]]))
    print_json_line(figures)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the rounds of one configuration's runs; a failed run is reported, not averaged."""
    failed = [row for row in rows if "error" in row]
    if failed:
        return {"failed": len(failed), "returncode": failed[0]["returncode"], "error": failed[0]["error"]}
    summary = {key: round(median([row[key] for row in rows]), 3)
               for key in ("seconds_per_step", "cpu_seconds_per_step", "examples_per_step", "tokens_per_s",
                           "peak_rss_mib",
                           "training_rss_mib")}
    if all("cuda_peak_mib" in row for row in rows):
        summary["cuda_peak_mib"] = median([row["cuda_peak_mib"] for row in rows])
    return summary


def write_doc(figures: dict[str, Any], command_line: str) -> None:
    configurations, tokens = figures["configurations"], figures["source_tokens"]
    cuda = all("cuda_peak_mib" in row for row in configurations.values())
    memory_key, memory = (("cuda_peak_mib", "CUDA peak (MiB)") if cuda else
                          ("training_rss_mib", "added by training (MiB)"))
    lines = [BEGIN, "", f"Written by `{command_line}` (do not edit by hand). The from-scratch transformer at d_model "
             f"256, 3+3 layers, ffn 1024, 4 heads, 1024 positions ({figures['parameters'] / 1e6:.1f}M parameters), "
             f"`--tgt_len={TGT_LEN}`, on "
             f"{figures['pairs']} CNN/DM-shaped pairs (sources of {figures['words'][0]}-{figures['words'][1]} "
             f"words of multi30k sentences: {tokens['min']}-{tokens['max']} tokens, median {tokens['median']:.0f}, "
             f"{tokens['cut_at_1024']:.0%} cut at 1024; targets 3 of their sentences). Each row: one `run_textbox.py` "
             f"process per round training {figures['steps']} steps, the first {figures['warmup']} and the last left "
             f"out; "
             f"`--train_batch_size={figures['batch_size']}`, or the token budget `--max_tokens="
             f"{figures['max_tokens']}` at both lengths; {figures['threads']} thread(s); medians over "
             f"{figures['repeats']} rounds, configurations interleaved, on the project's 2-core machine shared with "
             f"other work (load average {figures['load']}). Peak RSS is the process's (interpreter, torch and data "
             f"included); *added by training* is that peak less the peak before the first forward call "
             f"(activations, gradients, optimiser state)"
             + (", and the CUDA peak `torch.cuda.max_memory_allocated()`" if cuda else "")
             + "; tokens/s counts the real (unpadded) source + target tokens.", "",
             (f"| src_len | setting | s/step | CPU s/step | vs plain (CPU) | peak RSS (MiB) | {memory} | vs plain | "
              f"examples/step | tokens/s |"),
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for src_len in LENGTHS:
        plain = configurations[f"{src_len}/plain"]
        for mode, label in MODES.items():
            row = configurations[f"{src_len}/{mode}"]
            label = label.format(figures["max_tokens"])
            if "error" in row or "error" in plain:
                lines.append(f"| {src_len} | {label} | failed (exit {row.get('returncode', '?')}) | | | | | | | |")
                continue
            lines.append(f"| {src_len} | {label} | {row['seconds_per_step']:.2f} | {row['cpu_seconds_per_step']:.2f} | "
                         f"{row['cpu_seconds_per_step'] / plain['cpu_seconds_per_step']:.2f}x | "
                         f"{row['peak_rss_mib']:.0f} | "
                         f"{row[memory_key]:.0f} | {row[memory_key] / plain[memory_key]:.2f}x | "
                         f"{row['examples_per_step']:.1f} | {row['tokens_per_s']:.0f} |")
    lines += ["", "*vs plain*: the row's figure over the plain row's at the same src_len (CPU time per step: above 1 "
              "is slower; memory: " + ("the CUDA peak" if cuda else "what training added") + "). Step times run "
              "from one forward call of the model to the next.", "", END]
    write_doc_block(DOC, BEGIN, END, "\n".join(lines))


if __name__ == "__main__":
    main()
