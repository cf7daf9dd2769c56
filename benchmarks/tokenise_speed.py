"""First-run tokenisation on one process vs several (num_proc), and tokenizer training on the whole corpus vs a sample
(tokenizer_train_sample), on a corpus built by repeating a dataset's training pairs (multi30k: ~29k pairs).

Each figure is the median of --repeats timings, settings interleaved (the machine may be shared: compare ratios);
every tokenisation starts from an empty cache (the first run's cost). "1 process, threads" is what one process did
before num_proc (the fast tokenizer's own threads on), "1 process, 1 thread" with TOKENIZERS_PARALLELISM=false.

    python benchmarks/tokenise_speed.py [--data=DIR] [--pairs=300000] [--sample=100000] [--repeats=3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

from textbox.checks import load_checked_config  # noqa: E402
from textbox.data.parallel import usable_cores  # noqa: E402
from textbox.data.split import Split  # noqa: E402
from textbox.model.tokenizer import train_bpe_tokenizer  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "multi30k_en_de"


def corpus(data: Path, pairs: int) -> Split:
    sources = (data / "train.src").read_text(encoding="utf-8").splitlines()
    targets = (data / "train.tgt").read_text(encoding="utf-8").splitlines()
    repeats = -(-pairs // len(sources))
    return Split("train", (sources * repeats)[:pairs], [[target] for target in (targets * repeats)[:pairs]])


def seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def tokenise(data: Path, split: Split, tokenizer: object, num_proc: int, threads: bool) -> float:
    from textbox.data.tokenize import tokenize_splits

    os.environ["TOKENIZERS_PARALLELISM"] = "true" if threads else "false"
    with tempfile.TemporaryDirectory() as cache:
        config = load_checked_config([], {"dataset": data.name, "data_path": str(data), "cache_dir": cache,
                                          "tracker": "none", "num_proc": num_proc})
        return seconds(lambda: tokenize_splits(config, {"train": split}, tokenizer, log=lambda _: None))


def train(texts: list[str], sample: int | None) -> float:
    with tempfile.TemporaryDirectory() as cache:
        return seconds(lambda: train_bpe_tokenizer(texts, vocab_size=8000, min_frequency=2, cache_dir=cache,
                                                   log=lambda _: None, sample=sample, seed=2020))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pairs", type=int, default=300_000)
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    split = corpus(args.data, args.pairs)
    texts = [*split.sources, *(references[0] for references in split.targets)]
    training = {"whole corpus": None, f"sample of {args.sample}": args.sample}
    cores = usable_cores()
    settings = {"1 process, 1 thread": (1, False), "1 process, threads": (1, True),
                f"{cores} processes": (cores, False)}
    timings: dict[str, list[float]] = {name: [] for name in [*training, *settings]}
    tokenizer = train_bpe_tokenizer(texts, vocab_size=8000, min_frequency=2, cache_dir=tempfile.mkdtemp(),
                                    log=lambda _: None, sample=args.sample, seed=2020)
    for _ in range(args.repeats):
        for name, sample in training.items():
            timings[name].append(train(texts, sample))
        for name, (num_proc, threads) in settings.items():
            timings[name].append(tokenise(args.data, split, tokenizer, num_proc, threads))
    medians = {name: statistics.median(values) for name, values in timings.items()}
    print(f"{args.pairs} pairs ({len(texts)} texts), {cores} usable cores, median of {args.repeats}")
    for title, names in (("tokenizer training:", training), ("first tokenisation:", settings)):
        print(title)
        for name in names:
            print(f"  {name:24s} {medians[name]:7.1f} s   {[round(value, 1) for value in timings[name]]}")
    sampled, processes = list(training)[1], f"{cores} processes"
    print(f"ratio whole corpus / {sampled}: {medians['whole corpus'] / medians[sampled]:.2f}")
    print(f"ratio 1 process (threads) / {processes}: {medians['1 process, threads'] / medians[processes]:.2f}")
    print(f"ratio 1 process (1 thread) / {processes}: {medians['1 process, 1 thread'] / medians[processes]:.2f}")

if __name__ == "__main__":
    main()
