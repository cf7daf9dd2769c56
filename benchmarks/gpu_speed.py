"""The speed table of benchmarks/gpu_check.sh: training steps/s of the framework's Trainer in fp32, bf16 and fp16
(accelerate's autocast, fp16 with its gradient scaler) and decoding sentences/s of its two engines (transformers'
generate and CTranslate2), greedy and beam search, on one CUDA GPU, each with its ratio to the first row.

Nothing is read from disk or the hub: a reverse-the-words dataset is made up (--examples training pairs of 2-12
words, --decode_examples test sources), and the model is the framework's from-scratch transformer (a BART) of
--d_model, --layers (each side) and d_model/64 heads, built as a run builds it (benchmarks/common.py). Each precision
trains --steps steps from the same initial weights (benchmarks/train_speed.py's train_ours: the Trainer, timed by the
model's forward calls, the first --warmup steps left out); the Trainer reads each step's loss back, so the timing
includes the GPU's work. Decoding uses the fp32-trained weights, in float32 on both engines, each engine warmed up
once (CTranslate2's conversion happens there), then the median of --repeats timed rounds; "equal" counts the outputs
that match transformers'.

On a machine without CUDA it runs on the CPU (fp16 left out: it needs a GPU), which is how it is tested; the figures
that matter are the GPU's.

    python benchmarks/gpu_speed.py [--steps=60] [--warmup=10] [--d_model=256] [--layers=3] [--json=FILE]
"""
from __future__ import annotations

import argparse
import copy
import json
import logging
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import ctranslate2  # noqa: F401  before torch, as a run loads it (textbox/pipeline/__init__.py)
from common import framework_config, median, prepare_data_and_model, print_json_line
from train_speed import train_ours

WORDS = ["red", "green", "blue", "cat", "dog", "bird", "tree", "house", "river", "stone", "light", "dark", "small",
         "big", "old", "new", "cold", "warm", "fast", "slow", "book", "boat", "road", "hill", "rain", "snow", "wind",
         "sun", "moon", "star", "sea", "field"]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=4096, help="training pairs made up")
    parser.add_argument("--decode_examples", type=int, default=512, help="test sources decoded")
    parser.add_argument("--batch_size", type=int, default=64, help="examples per training and decoding batch")
    parser.add_argument("--steps", type=int, default=60, help="training steps per precision")
    parser.add_argument("--warmup", type=int, default=10, help="first steps left out of the timing")
    parser.add_argument("--d_model", type=int, default=256)
    parser.add_argument("--layers", type=int, default=3, help="encoder and decoder layers (each)")
    parser.add_argument("--num_beams", type=int, default=4, help="beams of the beam-search rows")
    parser.add_argument("--max_new_tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3, help="timed decoding rounds per engine and search")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    return parser.parse_args()


def make_dataset(root: Path, examples: int, decode_examples: int) -> Path:
    """train/valid/test .src/.tgt: sources of 2-12 words, targets the same words reversed."""
    rng = random.Random(0)
    root.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", examples), ("valid", 64), ("test", decode_examples)):
        sources = [" ".join(rng.choices(WORDS, k=rng.randint(2, 12))) for _ in range(count)]
        (root / f"{split}.src").write_text("\n".join(sources) + "\n", encoding="utf-8")
        (root / f"{split}.tgt").write_text("\n".join(" ".join(reversed(s.split())) for s in sources) + "\n",
                                           encoding="utf-8")
    return root


def train_rows(config: Any, model: Any, tokenizer: Any, train: Any, precisions: list[str],
               warmup: int) -> tuple[list[dict[str, Any]], Any]:
    """One row per precision (steps/s, target tokens/s, last loss); and the fp32-trained model."""
    from accelerate.state import AcceleratorState, GradientState

    rows, trained = [], None
    for precision in precisions:
        AcceleratorState._reset_state(reset_partial_state=True)  # each run builds its own Accelerator
        GradientState._reset_state()
        copy_of = copy.deepcopy(model).train()
        with tempfile.TemporaryDirectory() as work:
            clock = train_ours(config.replace(mixed_precision=precision), copy_of, tokenizer, train, Path(work))
            losses = [json.loads(line) for line in (Path(work) / "metrics.jsonl").read_text().splitlines()]
        clock.close()
        batches, seconds, _ = clock.steady(warmup)
        last_loss = [row["loss"] for row in losses if row.get("split") == "train"][-1]
        rows.append({"precision": {"no": "fp32"}.get(precision, precision), "steps_per_s": len(batches) / seconds,
                     "target_tokens_per_s": sum(batch["target_tokens"] for batch in batches) / seconds,
                     "last_loss": last_loss})
        print(f"trained {rows[-1]['precision']}: {rows[-1]['steps_per_s']:.1f} steps/s, last loss {last_loss:.3f}",
              flush=True)
        if precision == "no":
            trained = copy_of
    return rows, trained


def decode_rows(config: Any, model: Any, tokenizer: Any, test: Any, args: argparse.Namespace,
                cache: Path) -> list[dict[str, Any]]:
    """One row per search and engine: sentences/s (median of the timed rounds) and outputs equal to transformers'."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    from textbox.data import Seq2SeqCollator
    from textbox.decoding.engine import DecodingOptions
    from textbox.decoding.generate import generate_texts
    from textbox.evaluator.evaluator import Evaluator

    AcceleratorState._reset_state(reset_partial_state=True)
    evaluator = Evaluator(config.replace(eval_batch_size=args.batch_size), Accelerator(), tokenizer,
                          Seq2SeqCollator(tokenizer.pad_token_id))
    model = model.to(evaluator.accelerator.device).eval()
    loader = evaluator.loader([{"input_ids": ids, "labels": labels}
                               for ids, labels in zip(test["input_ids"], test["labels"])])
    rows = []
    for search, settings in (("greedy", {"num_beams": 1}),
                             (f"beam {args.num_beams}", {"num_beams": args.num_beams, "early_stopping": True})):
        settings = {**settings, "max_new_tokens": args.max_new_tokens}
        reference: list[str] = []
        for engine in ("transformers", "ctranslate2"):
            def run(settings: dict[str, Any] = settings, engine: str = engine) -> list[str]:
                return generate_texts(evaluator.accelerator, model, tokenizer, loader, dict(settings), "test",
                                      DecodingOptions(engine, "float32", str(cache), 0))

            texts = run()  # warm-up (CTranslate2 converts here)
            seconds = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                run()
                seconds.append(time.perf_counter() - start)
            reference = reference or texts
            rows.append({"search": search, "engine": engine, "sentences_per_s": len(texts) / median(seconds),
                         "equal": f"{sum(a == b for a, b in zip(texts, reference))}/{len(texts)}"})
            print(f"decoded {search} with {engine}: {rows[-1]['sentences_per_s']:.0f} sentences/s", flush=True)
    return rows


def table(device: str, train: list[dict[str, Any]], decode: list[dict[str, Any]]) -> str:
    lines = [f"training ({device}): steps/s, ratio to fp32",
             "| precision | steps/s | target tokens/s | ratio | last loss |", "|---|---:|---:|---:|---:|"]
    base = train[0]["steps_per_s"]
    lines += [f"| {row['precision']} | {row['steps_per_s']:.1f} | {row['target_tokens_per_s']:.0f} | "
              f"{row['steps_per_s'] / base:.2f} | {row['last_loss']:.3f} |" for row in train]
    lines += ["", f"decoding ({device}, float32): sentences/s, ratio to transformers",
              "| search | engine | sentences/s | ratio | outputs equal to transformers' |", "|---|---|---:|---:|---:|"]
    for row in decode:
        base = next(other["sentences_per_s"] for other in decode
                    if other["search"] == row["search"] and other["engine"] == "transformers")
        lines.append(f"| {row['search']} | {row['engine']} | {row['sentences_per_s']:.0f} | "
                     f"{row['sentences_per_s'] / base:.2f} | {row['equal']} |")
    return "\n".join(lines)


def main() -> None:
    args = parse_args()
    import torch
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    logging.getLogger("accelerate").setLevel(logging.ERROR)
    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name(0) if cuda else "CPU (no CUDA device: fp16 left out)"
    heads = max(args.d_model // 64, 1)
    with tempfile.TemporaryDirectory() as scratch:
        data = make_dataset(Path(scratch) / "reverse", args.examples, args.decode_examples)
        config = framework_config(
            data, model="transformer", cache_dir=str(Path(scratch) / "cache"), train_batch_size=args.batch_size,
            max_steps=args.steps, logging_steps=1, learning_rate=1e-3, scheduler="constant", warmup_steps=0,
            do_valid=False, src_len=16, tgt_len=16, tokenizer_kwargs={"vocab_size": 400},
            config_kwargs={"d_model": args.d_model, "encoder_layers": args.layers, "decoder_layers": args.layers,
                           "encoder_attention_heads": heads, "decoder_attention_heads": heads,
                           "encoder_ffn_dim": 4 * args.d_model, "decoder_ffn_dim": 4 * args.d_model})
        model, tokenizer, tokenized, _ = prepare_data_and_model(config, splits=("test",))
        print(f"{device}: a {sum(p.numel() for p in model.parameters()):,}-parameter BART (d_model {args.d_model}, "
              f"{args.layers}+{args.layers} layers), {len(tokenized['train'])} training pairs, batches of "
              f"{args.batch_size}", flush=True)
        precisions = ["no", "bf16", "fp16"] if cuda else ["no", "bf16"]
        train, trained = train_rows(config, model, tokenizer, tokenized["train"], precisions, args.warmup)
        decode = decode_rows(config, trained, tokenizer, tokenized["test"], args, Path(scratch) / "ct2")
    print(table(device, train, decode), flush=True)
    figures = {"device": device, "train": train, "decode": decode, "steps": args.steps, "d_model": args.d_model,
               "layers": args.layers, "batch_size": args.batch_size, "torch": torch.__version__}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print_json_line(figures)


if __name__ == "__main__":
    main()
