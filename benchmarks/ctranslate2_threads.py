"""How CTranslate2 should use a CPU's threads inside a process that also runs torch: the layouts side by side.

The framework's engine (textbox.decoding.ctranslate2_engine) runs in a process where torch has already worked.
Two facts decide its layout, both measured here on the model the framework converts:
- the layout: one worker whose matrix products use every thread (``intra_threads``), or one one-thread worker per
  thread decoding whole batches side by side (``inter_threads``);
- the import order: torch puts its OpenMP runtime in the process's global symbol scope, so a CTranslate2 loaded
  after it binds its OpenMP calls to torch's runtime; loaded first, it keeps its own (textbox/pipeline/__init__.py).
Each case runs in a fresh process (the import order is fixed once per process) that imports the two libraries in
its order, runs torch matrix products on all threads (as training or the transformers engine would have), loads the
Translator, warms it up, and times --calls translate_batch calls over the same --examples test sources (the
framework's tokenisation, max_batch_size --batch_size). The cases alternate for --repeats rounds; figures are
medians of examples/s, and every case's outputs are checked equal to the first case's.

    python benchmarks/ctranslate2_threads.py --model_path=DIR [--data=DIR] [--threads=2] [--examples=320]
        [--batch_size=32] [--num_beams=1,4] [--repeats=5] [--write_doc]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import (CACHE_DIR, DEFAULT_DATA, REPO, framework_config, median, prepare_data_and_model,
                    print_json_line, write_doc_block)

DOC = REPO / "docs" / "speedups.md"
BEGIN = "<!-- ctranslate2 threads: written by benchmarks/ctranslate2_threads.py -->"
END = "<!-- end of ctranslate2 threads -->"
# (label, CTranslate2 imported before torch, layout): "workers" (inter_threads), "intra" or "one" (one thread).
CASES = (("one thread (for scale)", True, "one"),
         ("torch first, one worker on every thread", False, "intra"),
         ("CTranslate2 first, one worker on every thread", True, "intra"),
         ("torch first, one one-thread worker per thread", False, "workers"),
         ("CTranslate2 first, one one-thread worker per thread", True, "workers"))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_path", type=Path, required=True, help="a trained seq2seq checkpoint directory")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--threads", type=int, default=2, help="threads the engine may use")
    parser.add_argument("--examples", type=int, default=320)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--num_beams", default="1,4", help="comma-separated beam sizes")
    parser.add_argument("--calls", type=int, default=3, help="timed calls per case and round (median)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds of the cases, alternating")
    parser.add_argument("--write_doc", action="store_true", help="write the table into docs/speedups.md")
    parser.add_argument("--case", type=Path, help=argparse.SUPPRESS)  # a child process's job file
    return parser.parse_args()


def run_case(job: dict[str, Any]) -> dict[str, Any]:
    """One case in this (fresh) process: the import order, torch's threads busy first, then the timed calls."""
    if job["ctranslate2_first"]:
        import ctranslate2  # noqa: F401
    import torch

    torch.set_num_threads(job["threads"])
    square = torch.randn(256, 256)
    for _ in range(100):
        square @ square
    import ctranslate2

    workers, per_worker = {"workers": (job["threads"], 1), "intra": (1, job["threads"]), "one": (1, 1)}[job["layout"]]
    translator = ctranslate2.Translator(job["path"], device="cpu", inter_threads=workers, intra_threads=per_worker)
    arguments = {"max_batch_size": job["batch_size"], "beam_size": job["num_beams"], "end_token": job["end"]}
    translator.translate_batch(job["sources"][:job["batch_size"]], **arguments)
    seconds = []
    for _ in range(job["calls"]):
        start = time.perf_counter()
        results = translator.translate_batch(job["sources"], **arguments)
        seconds.append(time.perf_counter() - start)
    return {"examples_per_s": len(job["sources"]) / median(seconds),
            "outputs": [" ".join(result.hypotheses[0]) for result in results]}


def sources_and_model(args: argparse.Namespace) -> tuple[list[list[str]], str, list[str]]:
    """The test sources as the framework tokenises them, the framework's float32 conversion, the end token."""
    from textbox.decoding.ctranslate2_cache import converted_model

    config = framework_config(args.data, model_path=str(args.model_path), quick_test=args.examples)
    model, tokenizer, tokenized, _ = prepare_data_and_model(config, ("test",))
    sources = [tokenizer.convert_ids_to_tokens(list(ids)) for ids in tokenized["test"]["input_ids"]]
    path, _ = converted_model(model, tokenizer, CACHE_DIR, "float32")
    return sources, str(path), tokenizer.convert_ids_to_tokens([model.generation_config.eos_token_id])


def main() -> None:
    args = parse_args()
    if args.case is not None:
        print(json.dumps(run_case(json.loads(args.case.read_text()))))
        return
    sources, path, end = sources_and_model(args)
    beams = [int(beam) for beam in args.num_beams.split(",")]
    speeds: dict[tuple[int, str], list[float]] = {(beam, case[0]): [] for beam in beams for case in CASES}
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(args.repeats):
            for beam in beams:
                reference = None
                for label, ctranslate2_first, layout in CASES:
                    job = Path(work) / "job.json"
                    job.write_text(json.dumps({"ctranslate2_first": ctranslate2_first, "layout": layout,
                                               "threads": args.threads, "path": path, "sources": sources,
                                               "end": end, "batch_size": args.batch_size, "num_beams": beam,
                                               "calls": args.calls}))
                    shown = subprocess.run([sys.executable, __file__, f"--model_path={args.model_path}",
                                            f"--case={job}"], capture_output=True, text=True, check=True)
                    result = json.loads(shown.stdout.strip().splitlines()[-1])
                    reference = reference or result["outputs"]
                    if result["outputs"] != reference:
                        raise SystemExit(f"{label}, beam {beam}: outputs differ from the first case's")
                    speeds[(beam, label)].append(result["examples_per_s"])
            print(f"round {round_ + 1}/{args.repeats} done", flush=True)
    figures = {f"beam{beam} | {label}": round(median(values)) for (beam, label), values in speeds.items()}
    print_json_line({"threads": args.threads, "examples": len(sources), "examples_per_s": figures})
    if args.write_doc:
        write_doc_block(DOC, BEGIN, END, doc_block(args, speeds, beams))


def doc_block(args: argparse.Namespace, speeds: dict[tuple[int, str], list[float]], beams: list[int]) -> str:
    header = "| CTranslate2 in a process with torch | " + " | ".join(f"beam {beam}" for beam in beams) + " |"
    rows = [header, "|---|" + "---:|" * len(beams)]
    one = CASES[0][0]
    for label, _, _ in CASES:
        speed = {beam: median(speeds[(beam, label)]) for beam in beams}
        rows.append(f"| {label} | " + " | ".join(
            f"{speed[beam]:,.0f} ({speed[beam] / median(speeds[(beam, one)]):.2f}x)" for beam in beams) + " |")
    return "\n".join([
        BEGIN, "", f"## Threads: CTranslate2 beside torch on {args.threads} CPU threads", "",
        f"`python benchmarks/ctranslate2_threads.py --model_path={args.model_path} --threads={args.threads} "
        f"--repeats={args.repeats}`: examples/s (medians of {args.repeats} rounds; in brackets, against one "
        f"thread) decoding {args.examples} test sources, max_batch_size {args.batch_size}, each case in a fresh "
        f"process where torch's matrix products ran on all threads first; outputs identical in every case. The "
        f"framework loads CTranslate2 before torch (textbox/pipeline/__init__.py), decodes greedy and beam searches "
        f"with one one-thread worker per thread and samples with one worker (its samples follow the seed only with "
        f"one) on every thread, or on one where CTranslate2 was imported after torch.", "",
        *rows, "", END])


if __name__ == "__main__":
    main()
