"""Two engines, one answer, setting by setting: for every generation setting the CTranslate2 mapping accepts, how
many of CTranslate2's outputs are identical to transformers' ``generate``, and which engine ``--decoding_backend=
auto`` picks, on small trained models of both kinds.

Models (trained once by the framework itself on the dataset, kept under .cache/benchmarks/runs/ and reused): the
default BART-architecture transformer, and a GPT-2 and a Llama (d=128, 2 layers, from scratch, with a byte-level
BPE trained on the training split, GPT-2's and Llama's special-token habits). Each setting decodes the first
--examples test examples, as a run does (generation_kwargs over tgt_len, the Evaluator's length-sorted batches),
once with the transformers engine (which equals ``model.generate``: tests/unit/decoding) and once with CTranslate2
(float32), forced even where auto would fall back, so that the table shows why it does. Sampling draws from each
engine's own random generator (seeded), so its outputs agree only where the distribution leaves one choice.
--write_doc puts the two tables (decoder-only, encoder-decoder) into docs/speedups.md.

    python benchmarks/engine_agreement.py [--data=DIR] [--examples=60] [--train_steps=600] [--write_doc]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from common import CACHE_DIR, DEFAULT_DATA, add_threads_option, framework_config, print_json_line, set_threads, \
    write_doc_block

DOC = Path(__file__).resolve().parents[1] / "docs" / "speedups.md"
LENGTHS = {"src_len": 48, "tgt_len": 32}
FORCED_TOKEN = "FORCED"  # stands for a token id chosen per model: one the model often wants to end right after
END_TOKEN = "EOS"  # stands for the model's end token id


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--examples", type=int, default=60, help="first N test examples decoded per setting")
    parser.add_argument("--train_steps", type=int, default=600, help="steps of each model trained when needed")
    parser.add_argument("--batch_size", type=int, default=16, help="examples per batch (both engines)")
    parser.add_argument("--write_doc", action="store_true", help="write the two tables into docs/speedups.md")
    add_threads_option(parser)
    return parser.parse_args()


def settings_of(decoder_only: bool, widest_prompt: int) -> list[dict[str, Any]]:
    """The generation_kwargs measured: every setting the mapping accepts, alone and in the combinations that
    matter. Decoder-only lengths count the prompt: max_length is one a run accepts (above src_len + 1),
    min_length reaches past the widest prompt."""
    beam = {"num_beams": 4, "early_stopping": True}
    length = ({"max_length": LENGTHS["src_len"] + 9}, {"min_length": widest_prompt + 6}) if decoder_only else \
        ({"max_length": 10}, {"min_length": 12})
    rows = [{}, {"max_new_tokens": 8}, *length, {"min_new_tokens": 8},
            {"num_beams": 4}, beam, {"num_beams": 4, "early_stopping": "never"},
            {**beam, "length_penalty": 2.0}, {**beam, "length_penalty": 0.5}, {"num_beams": 4, "length_penalty": 0.0},
            {**beam, "num_return_sequences": 4}, {**beam, "min_new_tokens": 8},
            {"no_repeat_ngram_size": 2}, {"no_repeat_ngram_size": 3}, {**beam, "no_repeat_ngram_size": 3},
            {"repetition_penalty": 1.3},
            {"do_sample": True, "top_k": 1}, {"do_sample": True, "top_k": 10, "temperature": 0.7},
            {"do_sample": True, "top_p": 0.9}, {"do_sample": True, "temperature": 0.3},
            *([{"forced_eos_token_id": END_TOKEN}, {**beam, "forced_eos_token_id": END_TOKEN}] if decoder_only else
              [{"forced_eos_token_id": None}, {**beam, "forced_eos_token_id": None}])]
    if not decoder_only:
        rows += [{"forced_bos_token_id": FORCED_TOKEN}, {**beam, "forced_bos_token_id": FORCED_TOKEN}]
    return rows


def causal_base(style: str, texts: list[str], directory: Path) -> Path:
    """A from-scratch checkpoint directory like a hub one: GPT-2 (its tokenizer adds no special tokens) or Llama
    (<s> starts every text); neither has a padding token."""
    from tokenizers import Tokenizer, processors
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from textbox.model.tokenizer import BOS, EOS, UNK, train_bpe_tokenizer

    if (directory / "config.json").is_file():
        return directory
    trained = train_bpe_tokenizer(texts, vocab_size=8000, min_frequency=2, cache_dir=CACHE_DIR, log=print)
    backend = Tokenizer.from_str(trained.backend_tokenizer.to_str())
    if style == "gpt2":
        backend.post_processor = processors.ByteLevel(trim_offsets=False)
    else:
        backend.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B",
                                                               special_tokens=[(BOS, backend.token_to_id(BOS))])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, eos_token=EOS, unk_token=UNK)
    ids = {"vocab_size": len(tokenizer), "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id}
    if style == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(n_positions=128, n_embd=128, n_layer=2, n_head=4, **ids))
    else:
        model = LlamaForCausalLM(LlamaConfig(hidden_size=128, intermediate_size=512, num_hidden_layers=2,
                                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                             **ids))
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def trained_model(kind: str, args: argparse.Namespace) -> Path:
    """checkpoint_best of a framework run training ``kind`` (transformer, gpt2, llama) on the dataset."""
    name = f"agreement-{kind}-{args.data.name}-{args.train_steps}"
    best = CACHE_DIR / "runs" / name / "checkpoint_best"
    if (best / "config.json").is_file():
        return best
    from textbox.pipeline import run

    overrides: dict[str, Any] = {}
    if kind != "transformer":
        texts = [*(args.data / "train.src").read_text(encoding="utf-8").splitlines(),
                 *(args.data / "train.tgt").read_text(encoding="utf-8").splitlines()]
        base = causal_base(kind, texts, CACHE_DIR / "runs" / f"agreement-{kind}-base")
        overrides = {"model": kind, "model_path": str(base), "from_scratch": True, "learning_rate": 1e-3,
                     "scheduler": "constant", "warmup_steps": 0}
    print(f"training {kind} ({args.train_steps} steps) into {best.parent}", flush=True)
    run(framework_config(args.data, saved_dir=str(CACHE_DIR / "runs"), filename=name, max_steps=args.train_steps,
                         train_batch_size=32, do_valid=False, do_test=False, logging_steps=100, **LENGTHS,
                         **overrides))
    return best


def ending_token(model: Any, tokenizer: Any, loader: Any) -> int:
    """A token after which (forced first) the end token often ranks 2nd to 4th: the case where the engines'
    beam searches part (textbox/decoding/ctranslate2_settings.py). Counted on the first batch's sources."""
    import torch

    batch = next(iter(loader))
    counts = torch.zeros(len(tokenizer), dtype=torch.long)
    candidates = torch.arange(len(tokenizer))
    with torch.no_grad():
        for row in range(len(batch["index"])):
            ids = batch["input_ids"][row:row + 1][:, batch["attention_mask"][row].bool()]
            encoder = model.get_encoder()(input_ids=ids)
            for chunk in candidates.split(1024):
                decoder = torch.stack([torch.full_like(chunk, model.config.decoder_start_token_id), chunk], dim=1)
                hidden = encoder.last_hidden_state.expand(len(chunk), -1, -1)
                logits = model(encoder_outputs=(hidden,), decoder_input_ids=decoder).logits[:, -1]
                rank = (logits > logits[:, [tokenizer.eos_token_id]]).sum(dim=1)
                counts[chunk] += ((rank >= 1) & (rank <= 3)).long()
    return int(counts.argmax())


def measure(kind: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One row per setting: identical outputs out of all, and auto's engine (with its reason)."""
    import torch

    from textbox.data import read_splits, tokenize_splits
    from textbox.data.collate import make_collator
    from textbox.decoding.ctranslate2_engine import ctranslate2_sequences
    from textbox.decoding.engine import DecodingOptions, EngineChoice, choose_engine
    from textbox.evaluator.evaluator import Evaluator
    from textbox.decoding.generate import generate_sequences, generation_settings
    from textbox.model.build import build_model
    from textbox.config.launcher import agreed_launch
    from textbox.pipeline.processes import build_accelerator

    best = trained_model(kind, args)
    config = framework_config(args.data, model=kind, model_path=str(best),
                              quick_test=args.examples, eval_batch_size=args.batch_size, **LENGTHS)
    built = build_model(config, None)
    model, tokenizer = built.model.eval(), built.tokenizer
    split = read_splits(config, ["test"], log=lambda message: None)["test"]
    test = tokenize_splits(config, {"test": split}, tokenizer, log=lambda message: None)["test"]
    accelerator = build_accelerator(config, agreed_launch(config))
    evaluator = Evaluator(config, accelerator, tokenizer, make_collator(config, tokenizer))
    loader = evaluator.loader(test)
    decoder_only = not model.config.is_encoder_decoder
    widest = max(len(batch["prompt_ids"][0]) for batch in loader) if decoder_only else 1
    forced = None if decoder_only else ending_token(model, tokenizer, loader)
    cache = str(CACHE_DIR / "agreement")
    rows = []
    for shown in settings_of(decoder_only, widest):
        placeholders = {FORCED_TOKEN: forced, END_TOKEN: tokenizer.eos_token_id}
        kwargs = {key: placeholders.get(value, value) if isinstance(value, str) else value
                  for key, value in shown.items()}
        settings = generation_settings(kwargs, config.tgt_len)
        auto = choose_engine(model, settings, "test", DecodingOptions("auto", "float32", cache, config.seed))
        torch.manual_seed(config.seed)
        reference = generate_sequences(accelerator, model, tokenizer, loader, dict(settings), "test",
                                       DecodingOptions("transformers", "auto", cache, config.seed))
        choice = EngineChoice("ctranslate2", "measured", "generator" if decoder_only else "translator")
        flat_reference = [text for texts in reference for text in texts]
        try:
            ours = ctranslate2_sequences(accelerator, model, tokenizer, loader, dict(settings), "test", choice,
                                         DecodingOptions("ctranslate2", "float32", cache, config.seed))
            flat_ours = [text for texts in ours for text in texts]
            same: int | str = sum(a == b for a, b in zip(flat_reference, flat_ours))
        except Exception as error:  # a setting CTranslate2 itself rejects: the table says so
            same = f"error ({type(error).__name__})"
        rows.append({"kwargs": _shown(shown), "identical": same, "outputs": len(flat_reference),
                     "auto": auto.name, "why": auto.reason})
        print(f"{kind} {_shown(shown)}: {same}/{len(flat_reference)} identical; auto: {auto.name}", flush=True)
    return rows


def _shown(kwargs: dict[str, Any]) -> str:
    if not kwargs:
        return "{} (greedy, max_new_tokens = tgt_len)"
    return "{" + ", ".join(f"'{key}': {value if value in (FORCED_TOKEN, END_TOKEN) else repr(value)}"
                           for key, value in kwargs.items()) + "}"


def write_doc(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace, command: str) -> None:
    """The decoder-only and encoder-decoder tables, one block in docs/speedups.md's decoding section."""
    begin = "<!-- engine agreement tables: written by benchmarks/engine_agreement.py -->"
    end = "<!-- end of engine agreement tables -->"
    lines = [begin, "", "### Decoding engines: outputs identical to `generate`, setting by setting", "",
             f"Written by `{command}`. Each setting (`--generation_kwargs`, over max_new_tokens = tgt_len = "
             f"{LENGTHS['tgt_len']}) decodes the first {args.examples} test examples of `{args.data.name}` with "
             f"transformers' `generate` and with CTranslate2 (float32, run even where `auto` falls back), on models "
             f"the framework trained for {args.train_steps} steps: its default BART-architecture transformer, and a "
             f"GPT-2 and a Llama (d=128, 2 layers, from scratch). Identical: CTranslate2's outputs equal to "
             f"`generate`'s, out of all (num_return_sequences per example). auto: the engine "
             f"`--decoding_backend=auto` picks (an explicit `ctranslate2` is refused where it picks transformers). "
             f"Decoder-only `max_length`/`min_length` count the left-padded prompt (transformers' rule). Sampling "
             f"draws from each engine's own seeded generator: identical only where a step leaves one likely token "
             f"(top_k=1 always). `FORCED` in the forced_bos_token_id rows is a token the model often wants to end "
             f"right after (the case where the engines' beam searches part); `EOS` is the end token.", ""]
    decoder_only = [("gpt2", "GPT-2"), ("llama", "Llama")]
    lines += ["Decoder-only:", "", "| generation_kwargs | GPT-2 identical | Llama identical | auto |",
              "|---|---:|---:|---|"]
    for number, row in enumerate(results["gpt2"]):
        cells = [_cell(results[kind][number]) for kind, _ in decoder_only]
        lines.append(f"| `{row['kwargs']}` | {cells[0]} | {cells[1]} | {_auto(row, results['llama'][number])} |")
    lines += ["", "Encoder-decoder (BART architecture):", "", "| generation_kwargs | identical | auto |",
              "|---|---:|---|"]
    for row in results["transformer"]:
        lines.append(f"| `{row['kwargs']}` | {_cell(row)} | {_auto(row)} |")
    lines += ["", "Where auto runs CTranslate2 with fewer than all identical: beam search with early_stopping unset "
              "runs as early_stopping=True (transformers' default heuristic has no CTranslate2 equal; the log line "
              "says so), and sampling (another random generator). Where auto picks transformers although all are "
              "identical here, the setting is refused for a difference in the search itself, which these models "
              "happen not to hit on these examples (auto's log line names it; textbox/decoding/"
              "ctranslate2_settings.py explains each).", "", end]
    write_doc_block(DOC, begin, end, "\n".join(lines))


def _cell(row: dict[str, Any]) -> str:
    return f"{row['identical']}/{row['outputs']}" if isinstance(row["identical"], int) else row["identical"]


def _auto(*rows: dict[str, Any]) -> str:
    names = {row["auto"] for row in rows}
    return names.pop() if len(names) == 1 else " / ".join(row["auto"] for row in rows)


def main() -> None:
    args = parse_args()
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    threads = set_threads(args.threads)
    results = {kind: measure(kind, args) for kind in ("transformer", "gpt2", "llama")}
    if args.write_doc:
        write_doc(results, args, "python " + " ".join(["benchmarks/engine_agreement.py", *sys.argv[1:]]))
    print_json_line({"examples": args.examples, "threads": threads, "train_steps": args.train_steps,
                     "rows": {kind: {row["kwargs"]: f"{_cell(row)} {row['auto']}" for row in rows}
                              for kind, rows in results.items()}})


if __name__ == "__main__":
    main()
