"""Decoding throughput of this framework against a plain loop over ``model.generate``, with the same weights.

Ours: Evaluator.loader (length-sorted batches) and generate_texts, on each engine: transformers
(``--decoding_backend=transformers``: in-place n-gram blocking, detokenisation on a background thread) and
CTranslate2 (``--decoding_backend=ctranslate2``) in float32 and int8. Plain: the test split in dataset order, the
same number of examples per batch, ``model.generate`` then ``batch_decode``. Same inputs (the framework's
tokenisation), same generation settings. Greedy and beam-search runs of every decoder alternate for --repeats
rounds; figures are medians of examples/s, with the number of outputs that differ from the plain loop's and the BLEU
of each. The CTranslate2 conversion (once per precision, cached) happens in the warm-up and is reported apart.
--write_doc puts the table into docs/speedups.md.

With --large, the model is a d_model 512, 6+6 layers BART with random weights (the trained model's tokenizer)
whose end token gets a -1e4 logit bias, so that every output runs to --large_tokens tokens and speed does not
depend on what it says (a minimum length would do the same greedily, but CTranslate2 cannot map it with beams).

Without --model_path, the framework first trains its default transformer on the dataset for --train_steps
steps (once, ~15 minutes on one core: the run is kept under .cache/benchmarks/ and reused).

    python benchmarks/decode_speed.py [--data=DIR] [--model_path=DIR] [--examples=320] [--batch_size=32]
                                      [--num_beams=4] [--repeats=3] [--large] [--write_doc]
"""
from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import ctranslate2  # before torch, as a run loads it (textbox/pipeline/__init__.py)
from common import (CACHE_DIR, DEFAULT_DATA, add_threads_option, framework_config, median, print_json_line,
                    set_threads, write_doc_block)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="plain-text dataset directory")
    parser.add_argument("--model_path", type=Path, help="a trained checkpoint (default: train one, see above)")
    parser.add_argument("--train_steps", type=int, default=3000, help="steps of the model trained when needed")
    parser.add_argument("--examples", type=int, default=320, help="first N test examples decoded")
    parser.add_argument("--batch_size", type=int, default=32, help="examples per generate call (both)")
    parser.add_argument("--num_beams", type=int, default=4)
    parser.add_argument("--no_repeat_ngram_size", type=int, default=0, help="0: no n-gram blocking")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of greedy and beam runs, alternating")
    parser.add_argument("--engines",
                        default="transformers,transformers_compiled,ct2_float32,ct2_int8,ct2_direct_float32,"
                                "ct2_direct_int8",
                        help="decoders besides the plain loop (comma-separated): transformers (the transformers "
                             "backend), transformers_compiled (what the retired --decode_compile did: a static cache "
                             "and a compiled forward, greedy only), ct2_float32, ct2_int8 (the framework's "
                             "CTranslate2 backend), ct2_direct_float32, ct2_direct_int8 (CTranslate2 called directly "
                             "on the same converted model: translate_batch over all inputs with max_batch_size)")
    parser.add_argument("--early_stopping", choices=["unset", "true", "never"], default="unset",
                        help="beam search's early_stopping (unset: transformers' default heuristic, which "
                             "CTranslate2 replaces by early_stopping=True)")
    parser.add_argument("--large", action="store_true", help="a random d=512 6+6 layers BART, forced lengths")
    parser.add_argument("--large_tokens", type=int, default=24, help="tokens each output is forced to (--large)")
    parser.add_argument("--write_doc", action="store_true", help="write the decoding table into docs/speedups.md")
    add_threads_option(parser)
    return parser.parse_args()


def trained_model(args: argparse.Namespace) -> Path:
    """checkpoint_best of a framework run on the dataset: a model whose outputs end where a real one's do."""
    if args.model_path:
        return args.model_path
    name = f"decode-{args.data.name}-{args.train_steps}"
    best = CACHE_DIR / "runs" / name / "checkpoint_best"
    if not (best / "config.json").is_file():
        from textbox.pipeline import run

        print(f"training the model decoded here ({args.train_steps} steps) into {best.parent}", flush=True)
        run(framework_config(args.data, saved_dir=str(CACHE_DIR / "runs"), filename=name, max_steps=args.train_steps,
                             max_tokens=2048, learning_rate=1e-3, do_valid=False, do_test=False, logging_steps=100))
    return best


def plain_loop(model: Any, tokenizer: Any, inputs: list[list[int]], batch_size: int,
               settings: dict[str, Any]) -> list[str]:
    """What a user without the framework writes: dataset order, fixed batches, generate, decode."""
    import torch

    from textbox.decoding.detokenize import one_line

    texts = []
    with torch.no_grad():
        for start in range(0, len(inputs), batch_size):
            batch = tokenizer.pad({"input_ids": inputs[start:start + batch_size]}, return_tensors="pt")
            ids = model.generate(**batch, **settings)
            texts.extend(one_line(text) for text in tokenizer.batch_decode(ids, skip_special_tokens=True))
    return texts


def direct_decoder(model: Any, tokenizer: Any, inputs: list[list[int]], batch_size: int, precision: str,
                   threads: int) -> Callable[[str, dict[str, Any]], list[str]]:
    """CTranslate2 called directly, as a user without the framework calls it: the model the framework converts
    (same cache), one translate_batch over every input with max_batch_size, the arguments the framework's mapping
    gives for the settings (textbox.decoding.ctranslate2_settings: the same search), the threads laid out as the
    framework lays them (one one-thread worker per thread: benchmarks/ctranslate2_threads.py), the best hypotheses
    detokenised as the plain loop does. Loading the Translator is left out of the timing, as it is for the
    framework's cached engine; what the framework adds (its loader, the content hash that finds the cached
    conversion, a second search for the hypotheses an early_stopping=True search cut at a forced end token) is not
    done here."""
    from textbox.decoding.ctranslate2_cache import converted_model
    from textbox.decoding.ctranslate2_settings import ctranslate2_call, effective_config
    from textbox.decoding.detokenize import one_line

    path, _ = converted_model(model, tokenizer, CACHE_DIR, precision)
    translator = ctranslate2.Translator(str(path), device="cpu", compute_type=precision, inter_threads=threads,
                                        intra_threads=1)
    end = tokenizer.convert_ids_to_tokens([model.generation_config.eos_token_id])

    def decode(run_name: str, settings: dict[str, Any]) -> list[str]:
        arguments = ctranslate2_call(effective_config(model.generation_config, settings), "translator").arguments
        sources = [tokenizer.convert_ids_to_tokens(ids) for ids in inputs]
        results = translator.translate_batch(sources, max_batch_size=batch_size, end_token=end, **arguments)
        ids = [tokenizer.convert_tokens_to_ids(result.hypotheses[0]) for result in results]
        return [one_line(text) for text in tokenizer.batch_decode(ids, skip_special_tokens=True)]
    return decode


def timed(work: Callable[[], list[str]]) -> tuple[list[str], float, float]:
    """(texts, wall seconds, CPU seconds of this process: every thread's, CTranslate2's and torch's included)."""
    start, cpu = time.perf_counter(), time.process_time()
    texts = work()
    return texts, time.perf_counter() - start, time.process_time() - cpu


def ngram_blocking_ms(num_hypotheses: int, length: int, vocabulary: int, size: int = 3) -> float:
    """Milliseconds per decoding step of transformers' NoRepeatNGramLogitsProcessor (already vectorised)."""
    import torch
    from transformers import NoRepeatNGramLogitsProcessor

    processor = NoRepeatNGramLogitsProcessor(size)
    ids = torch.randint(0, 50, (num_hypotheses, length))
    scores = torch.zeros(num_hypotheses, vocabulary)
    start = time.perf_counter()
    for _ in range(20):
        processor(ids, scores)
    return (time.perf_counter() - start) / 20 * 1e3


def large_model(like: Any) -> Any:
    """A d_model 512, 6+6 layers BART with random weights and ``like``'s vocabulary and special tokens."""
    import torch
    from transformers import BartForConditionalGeneration

    torch.manual_seed(0)
    config = like.config.__class__(**{**like.config.to_dict(), "d_model": 512, "encoder_layers": 6,
                                      "decoder_layers": 6, "encoder_attention_heads": 8, "decoder_attention_heads": 8,
                                      "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048})
    model = BartForConditionalGeneration(config).eval()
    model.generation_config = copy.deepcopy(like.generation_config)
    model.generation_config.forced_eos_token_id = None  # every output runs to max_new_tokens instead
    with torch.no_grad():
        model.final_logits_bias[0, config.eos_token_id] = -1e4  # converted by CTranslate2 as the output bias
    return model


def compiled_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """What the retired --decode_compile=True did: a static cache and a torch.compile'd forward, which generate
    compiles by itself once allowed on every device (transformers' beam search never runs it)."""
    from transformers.generation import CompileConfig

    compile_config = CompileConfig(fullgraph=False)
    compile_config._compile_all_devices = True  # generate only auto-compiles on accelerators otherwise
    return {**settings, "cache_implementation": "static", "compile_config": compile_config}


def conversion_seconds(model: Any, tokenizer: Any, repeats: int) -> float:
    """Median seconds of what a validation pays before decoding on CTranslate2: the content hash and the float32
    conversion into an empty cache (textbox.decoding.ctranslate2_cache.converted_model, latest_only=True)."""
    from textbox.decoding.ctranslate2_cache import converted_model

    seconds = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            start = time.perf_counter()
            converted_model(model, tokenizer, cache, "float32", latest_only=True)
            seconds.append(time.perf_counter() - start)
    return median(seconds)


DOC = Path(__file__).resolve().parents[1] / "docs" / "speedups.md"


def write_doc(figures: dict[str, Any], rows: list[tuple[str, str, str]], command: str) -> None:
    """Replace (or add) this variant's decoding table in docs/speedups.md (one block per model and stopping rule,
    so that the benchmark model's and the large model's runs each keep their own)."""
    model = "large" if figures["large"] else "benchmark"
    variant = f"{model} model, early_stopping {figures['early_stopping']}"
    begin = f"<!-- decoding table ({variant}): written by benchmarks/decode_speed.py -->"
    end = f"<!-- end of decoding table ({variant}) -->"
    what = ("a d_model 512, 6+6 layers BART with random weights, every output running to "
            f"{figures['max_new_tokens']} tokens" if figures["large"] else "the trained benchmark model")
    stopping = {"unset": "early_stopping unset (the plain loop runs transformers' default heuristic, CTranslate2 stops "
                         "as early_stopping=True does)",
                "true": "early_stopping=True (both engines run the same search)",
                "never": "early_stopping='never' (both engines run the same search)"}[figures["early_stopping"]]
    warmups = ", ".join(f"{label} {seconds:.1f} s" for label, seconds in figures["warmup_seconds"].items())
    lines = [begin, "", f"### Decoding engines: {variant}", "",
             f"Written by `{command}`: {what}; beam search with {stopping}. Medians of {figures['repeats']} "
             f"alternating rounds, {figures['examples']} test examples, {figures['batch_size']} per batch, "
             f"{figures['threads']} thread(s), on the project's 2-core CPU machine (other work may share it: compare "
             f"figures of one run only). Outputs are compared with the plain `model.generate` loop's. Warm-up "
             f"(imports, CTranslate2's conversion, torch.compile's compilation for the compiled row), not in the "
             f"rates: {warmups}.", "",
             f"Load average (1 min) during the rounds: {figures['load']}. *vs direct*: the framework's rate over "
             f"CTranslate2 called directly on the same converted model and inputs (one `translate_batch` with "
             f"`max_batch_size`, the framework's mapping of the settings), measured in the same rounds (the median "
             f"of the rounds' ratios), in examples per second of wall time and (CPU) per second of the process's "
             f"CPU time, which other work on the machine disturbs less. Both sides have their engine loaded before "
             f"the clock starts (the framework keeps one loaded engine, so alternating precisions would otherwise "
             f"reload it inside its timed decodes only); the framework's loader is built once, as the evaluator "
             f"keeps a split's loader, and read in every decode; its content hash of the weights runs in every "
             f"decode.", "",
             "| engine | precision | beam | examples/s | vs plain loop | vs direct | vs direct (CPU) "
             "| outputs identical | BLEU |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for run_name, beam in (("greedy", 1), ("beam", figures["num_beams"])):
        for label, engine, precision in rows:
            key = _key(label, run_name)
            if key + "examples_per_s" not in figures:
                continue  # not applicable (sharing without beams, compiled beam search)
            identical = "-" if label == "plain" else f"{figures['examples'] - figures[key + 'outputs_differing']}/" \
                                                       f"{figures['examples']}"
            ratio = "1.00x" if label == "plain" else f"{figures[key + 'ratio']:.2f}x"
            direct = f"{figures[key + 'vs_direct']:.2f}x" if key + "vs_direct" in figures else ""
            direct_cpu = f"{figures[key + 'vs_direct_cpu']:.2f}x" if key + "vs_direct_cpu" in figures else ""
            lines.append(f"| {engine} | {precision} | {beam} | {figures[key + 'examples_per_s']:.1f} | {ratio} | "
                         f"{direct} | {direct_cpu} | {identical} | {figures[key + 'bleu']:.2f} |")
    lines += ["", end]
    write_doc_block(DOC, begin, end, "\n".join(lines))


def _key(label: str, run_name: str) -> str:
    """Figure names: the transformers backend keeps the original keys (ratio, greedy_ratio, ...)."""
    prefix = "" if label == "transformers" else f"{label}_"
    return prefix + ("" if run_name == "beam" else "greedy_")


def main() -> None:
    args = parse_args()
    import sacrebleu
    from transformers.utils import logging as transformers_logging

    from textbox.data import Seq2SeqCollator, read_splits, tokenize_splits
    from textbox.decoding.engine import DecodingOptions
    from textbox.decoding.generate import generate_texts
    from textbox.evaluator.evaluator import Evaluator
    from textbox.model.build import build_model
    from textbox.config.launcher import agreed_launch
    from textbox.pipeline.processes import build_accelerator

    transformers_logging.set_verbosity_error()
    threads = set_threads(args.threads)
    model_path = trained_model(args)
    config = framework_config(args.data, model_path=str(model_path), quick_test=args.examples,
                              eval_batch_size=args.batch_size)
    built = build_model(config, None)
    model, tokenizer = built.model, built.tokenizer
    model.eval()
    if args.large:
        model = large_model(model)
    split = read_splits(config, ["test"], log=lambda message: None)["test"]
    test = tokenize_splits(config, {"test": split}, tokenizer, log=lambda message: None)["test"]
    inputs = [list(ids) for ids in test["input_ids"]]
    references = [refs[0] for refs in split.targets]
    accelerator = build_accelerator(config, agreed_launch(config))
    with tempfile.TemporaryDirectory():
        evaluator = Evaluator(config, accelerator, tokenizer, Seq2SeqCollator(tokenizer.pad_token_id))
        # Built once, as the evaluator keeps a split's loader across validations (Evaluator.loader_of) and as the
        # direct decoder gets its inputs once; every decode iterates it (reading and collating the batches).
        loader = evaluator.loader(test)

        def engine(backend: str, precision: str,
                   compiled: bool = False) -> Callable[[str, dict[str, Any]], list[str] | None]:
            options = DecodingOptions(backend, precision, str(CACHE_DIR), config.seed)

            def decode(run_name: str, settings: dict[str, Any]) -> list[str] | None:
                if compiled:  # greedy only (transformers' beam search is never compiled)
                    if settings["num_beams"] > 1:
                        return None
                    settings = compiled_settings(settings)
                return generate_texts(accelerator, model, tokenizer, loader, settings, "test", options)
            return decode

        def engine_loaded(precision: str) -> Callable[[], None]:
            """Loads the framework's CTranslate2 engine for ``precision`` unless it is loaded. The framework keeps
            the last engine it loaded (one at a time), so alternating precisions would reload it inside every timed
            decode, where the direct decoder keeps its Translator: both sides get their engine loaded before the
            clock starts."""
            from textbox.decoding.engine import choose_engine
            from textbox.decoding.ctranslate2_engine import prepare_engine

            options = DecodingOptions("ctranslate2", precision, str(CACHE_DIR), config.seed)
            choice = choose_engine(model, {}, "test", options)

            def load() -> None:
                prepare_engine(accelerator, model, tokenizer, choice, options)
            return load

        base = {"max_new_tokens": args.large_tokens if args.large else config.tgt_len}
        stopping = {"unset": {}, "true": {"early_stopping": True}, "never": {"early_stopping": "never"}}
        runs = {"greedy": {**base, "num_beams": 1},
                "beam": {**base, "num_beams": args.num_beams, **stopping[args.early_stopping]}}
        if args.no_repeat_ngram_size:
            for settings in runs.values():
                settings["no_repeat_ngram_size"] = args.no_repeat_ngram_size
        print(f"{len(inputs)} test examples of {args.data}, model {model_path}, {args.batch_size} examples per batch, "
              f"settings {runs}", flush=True)
        engines = {"transformers": ("transformers", "auto"),
                   "transformers_compiled": ("transformers", "auto", True),
                   "ct2_float32": ("ctranslate2", "float32"), "ct2_int8": ("ctranslate2", "int8")}
        decoders: dict[str, Callable[[str, dict[str, Any]], list[str] | None]] = {
            "plain": lambda run_name, settings: plain_loop(model, tokenizer, inputs, args.batch_size, settings)}
        ready: dict[str, Callable[[], None]] = {}  # untimed, before each timed decode
        for label in args.engines.split(","):
            if label.startswith("ct2_direct_"):
                decoders[label] = direct_decoder(model, tokenizer, inputs, args.batch_size,
                                                 label.removeprefix("ct2_direct_"), threads)
            else:
                decoders[label] = engine(*engines[label])
                if engines[label][0] == "ctranslate2":
                    ready[label] = engine_loaded(engines[label][1])
        warmup_seconds = {}
        for label, decode in decoders.items():  # warm-up: lazy imports, allocations, CTranslate2's conversion,
            # torch.compile's compilation (a whole greedy pass: it compiles for each new shape it meets)
            warm = runs["greedy"] if label == "transformers_compiled" else {**runs["beam"], "max_new_tokens": 4}
            _, warmup_seconds[label], _ = timed(lambda: decode("warm-up", warm))
        texts: dict[tuple[str, str], list[str]] = {}
        rates: dict[tuple[str, str], list[float]] = {}
        cpu_rates: dict[tuple[str, str], list[float]] = {}  # examples per CPU second: steadier on a shared machine
        loads: list[float] = []
        for repeat in range(args.repeats):
            for run_name, settings in runs.items():
                for decoder_name, decode in decoders.items():
                    if decoder_name in ready:
                        ready[decoder_name]()
                    found, seconds, cpu_seconds = timed(lambda: decode(run_name, dict(settings)))
                    if found is not None:
                        texts[decoder_name, run_name] = found
                        rates.setdefault((decoder_name, run_name), []).append(len(inputs) / seconds)
                        cpu_rates.setdefault((decoder_name, run_name), []).append(len(inputs) / cpu_seconds)
            loads.append(os.getloadavg()[0])
            print(f"round {repeat + 1} (load {loads[-1]:.1f}): " +
                  ", ".join(f"{d} {r} {rates[d, r][-1]:.1f} examples/s" for d, r in rates), flush=True)

    figures: dict[str, Any] = {"examples": len(inputs), "batch_size": args.batch_size, "num_beams": args.num_beams,
                               "no_repeat_ngram_size": args.no_repeat_ngram_size, "repeats": args.repeats,
                               "threads": threads, "large": args.large, "early_stopping": args.early_stopping,
                               "max_new_tokens": base["max_new_tokens"],
                               "load": f"median {median(loads):.1f} (from {min(loads):.1f} to {max(loads):.1f})",
                               "warmup_seconds": {label: round(value, 2) for label, value in warmup_seconds.items()}}
    for run_name in runs:
        plain_rate = median(rates["plain", run_name])
        figures[_key("plain", run_name) + "examples_per_s"] = round(plain_rate, 2)
        figures[_key("plain", run_name) + "bleu"] = round(
            sacrebleu.corpus_bleu(texts["plain", run_name], [references]).score, 2)
        for label in decoders:
            if label == "plain" or (label, run_name) not in rates:
                continue
            key = _key(label, run_name)
            rate = median(rates[label, run_name])
            figures[key + "examples_per_s"] = round(rate, 2)
            figures[key + "ratio"] = round(rate / plain_rate, 3)
            figures[key + "outputs_differing"] = sum(a != b for a, b in zip(texts[label, run_name],
                                                                            texts["plain", run_name]))
            figures[key + "bleu"] = round(sacrebleu.corpus_bleu(texts[label, run_name], [references]).score, 2)
    if "transformers" in decoders:
        figures["greedy_identical"] = figures["greedy_outputs_differing"] == 0
        if "ct2_float32" in decoders:  # validation by generation converts the weights anew each time: does it pay?
            figures["conversion_seconds"] = round(conversion_seconds(model, tokenizer, args.repeats), 3)
            for run_name in runs:
                saved = 1 / figures[_key("transformers", run_name) + "examples_per_s"] - \
                    1 / figures[_key("ct2_float32", run_name) + "examples_per_s"]
                figures[_key("ct2_float32", run_name) + "break_even_examples"] = \
                    round(figures["conversion_seconds"] / saved, 1) if saved > 0 else None
    for run_name in runs:  # the framework around its engine: its rate over the engine called directly
        for precision in ("float32", "int8"):
            ours, direct = _key(f"ct2_{precision}", run_name), _key(f"ct2_direct_{precision}", run_name)
            if ours + "examples_per_s" in figures and direct + "examples_per_s" in figures:
                # round by round (a round's two decodes ran seconds apart), then the median of those ratios
                pair = (f"ct2_{precision}", run_name), (f"ct2_direct_{precision}", run_name)
                for suffix, measured in (("vs_direct", rates), ("vs_direct_cpu", cpu_rates)):
                    figures[ours + suffix] = round(median([a / b for a, b in zip(measured[pair[0]],
                                                                                 measured[pair[1]])]), 3)
    figures["ngram_blocking_ms_per_step"] = round(
        ngram_blocking_ms(args.batch_size * args.num_beams, config.tgt_len, len(tokenizer)), 3)
    if args.write_doc:
        labels = {"plain": ("plain `model.generate` loop", "float32"),
                  "transformers": ("this framework, transformers backend", "float32"),
                  "transformers_compiled": ("transformers backend, compiled (the retired `--decode_compile`)",
                                            "float32"),
                  "ct2_float32": ("this framework, CTranslate2", "float32"),
                  "ct2_int8": ("this framework, CTranslate2", "int8"),
                  "ct2_direct_float32": ("CTranslate2 called directly (`translate_batch`, `max_batch_size`)",
                                         "float32"),
                  "ct2_direct_int8": ("CTranslate2 called directly (`translate_batch`, `max_batch_size`)", "int8")}
        import sys

        write_doc(figures, [(label, *labels[label]) for label in decoders],
                  "python " + " ".join(["benchmarks/decode_speed.py", *sys.argv[1:]]))
    print_json_line(figures)


if __name__ == "__main__":
    main()
