"""First-run tokenisation on one process vs several (num_proc), the worker start cost, and tokenizer training on the
whole corpus vs a sample (tokenizer_train_sample), on a corpus built by repeating a dataset's training pairs
(multi30k: ~29k pairs).

Each figure is the median of --repeats timings, settings interleaved (the machine may be shared: compare ratios);
every tokenisation starts from an empty cache (the first run's cost). "1 process" is one process with the fast
tokenizer's own threads on (what num_proc=1 does), "N processes" the spawned workers (textbox.data.parallel).
The worker start cost is the time from starting N workers to their first results (one 10-example chunk each: the
interpreter, the imports, the tokenizer unpickled), less the same chunks encoded here. --skip_training leaves the
tokenizer-training figures out. This file's top level stays light: every spawned worker imports it again
(as run_textbox.py's), so its imports are in the functions.

    python benchmarks/tokenise_speed.py [--data=DIR] [--pairs=300000] [--sample=100000] [--repeats=3]
                                        [--skip_training]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

if TYPE_CHECKING:
    from textbox.data.split import Split

DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "multi30k_en_de"


def corpus(data: Path, pairs: int) -> Split:
    from textbox.data.split import Split

    sources = (data / "train.src").read_text(encoding="utf-8").splitlines()
    targets = (data / "train.tgt").read_text(encoding="utf-8").splitlines()
    repeats = -(-pairs // len(sources))
    return Split("train", (sources * repeats)[:pairs], [[target] for target in (targets * repeats)[:pairs]])


def seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def tokenise(data: Path, split: Split, tokenizer: object, num_proc: int) -> float:
    from textbox.checks import load_checked_config
    from textbox.data.tokenize import tokenize_splits

    with tempfile.TemporaryDirectory() as cache:
        config = load_checked_config([], {"dataset": data.name, "data_path": str(data), "cache_dir": cache,
                                          "tracker": "none", "num_proc": num_proc})
        return seconds(lambda: tokenize_splits(config, {"train": split}, tokenizer, log=lambda _: None))


def worker_start(split: Split, tokenizer: object, processes: int) -> float:
    """Seconds from starting ``processes`` workers to their first results, less the same work done here."""
    import datasets

    from textbox.data.parallel import encode_in_order
    from textbox.data.tokenize import COLUMNS, ChunkEncoder

    schema = datasets.Features({name: datasets.List(datasets.Value("int32")) for name in COLUMNS}).arrow_schema
    encode = ChunkEncoder(tokenizer, 128, 128, "tail", "", "", [], False, schema)
    chunks = [(split.sources[:10], [references[0] for references in split.targets[:10]])] * processes
    here = seconds(lambda: list(encode_in_order(encode, chunks, 1, 10 * processes, "here")))
    return seconds(lambda: list(encode_in_order(encode, chunks, processes, 10 * processes, "workers"))) - here


def train(texts: list[str], sample: int | None) -> float:
    from textbox.model.tokenizer import train_bpe_tokenizer

    with tempfile.TemporaryDirectory() as cache:
        return seconds(lambda: train_bpe_tokenizer(texts, vocab_size=8000, min_frequency=2, cache_dir=cache,
                                                   log=lambda _: None, sample=sample, seed=2020))


def main() -> None:
    from textbox.data.parallel import usable_cores
    from textbox.model.tokenizer import train_bpe_tokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pairs", type=int, default=300_000)
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip_training", action="store_true", help="no tokenizer-training figures")
    args = parser.parse_args()
    split = corpus(args.data, args.pairs)
    texts = [*split.sources, *(references[0] for references in split.targets)]
    training = {} if args.skip_training else {"whole corpus": None, f"sample of {args.sample}": args.sample}
    cores = usable_cores()
    processes = f"{cores} processes"
    settings = {"1 process": 1, processes: cores}
    start = f"start of {cores} workers"
    timings: dict[str, list[float]] = {name: [] for name in [*training, *settings, start]}
    tokenizer = train_bpe_tokenizer(texts, vocab_size=8000, min_frequency=2, cache_dir=tempfile.mkdtemp(),
                                    log=lambda _: None, sample=args.sample, seed=2020)
    for _ in range(args.repeats):
        for name, sample in training.items():
            timings[name].append(train(texts, sample))
        for name, num_proc in settings.items():
            timings[name].append(tokenise(args.data, split, tokenizer, num_proc))
        timings[start].append(worker_start(split, tokenizer, cores))
    medians = {name: statistics.median(values) for name, values in timings.items()}
    print(f"{args.pairs} pairs ({len(texts)} texts), {cores} usable cores, median of {args.repeats}, "
          f"load average before: {os.getloadavg()[0]:.1f}")
    for title, names in (("tokenizer training:", training), ("first tokenisation:", settings),
                         ("workers:", {start: None})):
        if names:
            print(title)
        for name in names:
            print(f"  {name:24s} {medians[name]:7.2f} s   {[round(value, 2) for value in timings[name]]}")
    if training:
        sampled = list(training)[1]
        print(f"ratio whole corpus / {sampled}: {medians['whole corpus'] / medians[sampled]:.2f}")
    saved = (medians["1 process"] - medians[processes]) / args.pairs
    print(f"ratio 1 process / {processes}: {medians['1 process'] / medians[processes]:.2f}")
    print(f"saved per example: {saved * 1e6:.1f} us; break-even (start / saved): "
          f"{medians[start] / saved if saved > 0 else float('inf'):,.0f} examples")


if __name__ == "__main__":
    main()
