"""The peer of benchmarks/data_scale.py: what a researcher writes without a framework (issue 34's), run as its own
process so that data_scale.py measures it as it measures run_textbox.py.

A byte-level BPE trained by `tokenizers` on every text of train.src and train.tgt (8k vocabulary, min_frequency 2,
BART's special tokens, as the framework's), `datasets.load_dataset('text')` for each file, `.map(batched=True,
num_proc=2)` to tokenise it, then --steps optimiser steps of a BART-architecture model of the same shape as the
framework's from-scratch transformer on those ids, in a plain torch loop (batches of 32 drawn at random, AdamW).
Its cached rerun (the same --cache) loads the saved tokenizer and datasets' cached tables and map results.

It prints `first_step_end <unix time>` when the first optimiser step has finished (data_scale.py reads it).

    python benchmarks/data_scale_peer.py --data=DIR --cache=DIR [--steps=20] [--num_proc=2] [--d_model=32]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0..4, BART's (and the framework's BPE)


def tokenizer_for(data: Path, cache: Path) -> Any:
    """The saved tokenizer, or one trained on every line of both training files (then saved)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    path = cache / "tokenizer.json"
    if not path.exists():
        backend = Tokenizer(models.BPE(unk_token="<unk>"))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=8000, min_frequency=2, special_tokens=SPECIAL_TOKENS,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        backend.train([str(data / "train.src"), str(data / "train.tgt")], trainer)
        backend.post_processor = processors.TemplateProcessing(
            single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
        cache.mkdir(parents=True, exist_ok=True)
        backend.save(str(path))
    # loaded from the file in both runs, so that datasets' fingerprint of the map function is the same in the rerun
    return Tokenizer.from_file(str(path))


def tokenised(data: Path, cache: Path, name: str, max_length: int, num_proc: int) -> Any:
    import datasets

    tokenizer = tokenizer_for(data, cache)
    tokenizer.enable_truncation(max_length)
    table = datasets.load_dataset("text", data_files={"train": str(data / f"train.{name}")},
                                  cache_dir=str(cache / "datasets"))["train"]

    def encode(batch: dict) -> dict:
        return {"ids": [encoding.ids for encoding in tokenizer.encode_batch(batch["text"])]}

    return table.map(encode, batched=True, num_proc=num_proc, remove_columns=["text"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="directory of train.src and train.tgt")
    parser.add_argument("--cache", type=Path, required=True, help="the tokenizer and datasets' cache")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--num_proc", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--src_len", type=int, default=256)
    parser.add_argument("--tgt_len", type=int, default=64)
    parser.add_argument("--d_model", type=int, default=32)
    parser.add_argument("--ffn_dim", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=2020)
    args = parser.parse_args()

    import torch
    from transformers import BartConfig, BartForConditionalGeneration

    start = time.perf_counter()
    sources = tokenised(args.data, args.cache, "src", args.src_len, args.num_proc)
    targets = tokenised(args.data, args.cache, "tgt", args.tgt_len, args.num_proc)
    print(f"data ready: {len(sources)} pairs in {time.perf_counter() - start:.1f} s", flush=True)

    torch.manual_seed(args.seed)
    config = BartConfig(vocab_size=8000, d_model=args.d_model, encoder_layers=args.layers,
                        decoder_layers=args.layers, encoder_attention_heads=args.heads,
                        decoder_attention_heads=args.heads, encoder_ffn_dim=args.ffn_dim,
                        decoder_ffn_dim=args.ffn_dim, max_position_embeddings=max(args.src_len, args.tgt_len + 1),
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    model = BartForConditionalGeneration(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    order = torch.randperm(len(sources), generator=torch.Generator().manual_seed(args.seed)).tolist()
    model.train()
    training = time.perf_counter()
    for step in range(args.steps):
        rows = order[step * args.batch_size:(step + 1) * args.batch_size]
        inputs = padded([sources[row]["ids"] for row in rows], pad=1)
        labels = padded([targets[row]["ids"] for row in rows], pad=-100)
        loss = model(input_ids=inputs, attention_mask=(inputs != 1).long(), labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step == 0:
            print(f"first_step_end {time.time():.3f}", flush=True)
    print(f"done: {args.steps} steps in {time.perf_counter() - training:.1f} s, last loss {loss.item():.4f}",
          flush=True)


def padded(rows: list[list[int]], pad: int) -> Any:
    import torch

    width = max(len(row) for row in rows)
    return torch.tensor([row + [pad] * (width - len(row)) for row in rows])


if __name__ == "__main__":
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    main()
