"""Decoding on CTranslate2: the model converted once per content (textbox.decoding.ctranslate2_cache), then
translate_batch (encoder-decoders) or generate_batch (decoder-only LMs).

Examples come from the same length-sorted loader as the transformers path (one shard per process) and leave as ids
through the same gather and background detokenisation, so outputs return in dataset order. The engine is called
once per BATCHES_PER_CALL loader batches (fewer where --eval_max_tokens varies the batch size: ``_runs``) and
batches their examples itself (``max_batch_size``: the loader's batch size), as a user calling it directly would.
Each call is queued (``asynchronous=True``) before the results of the one ahead of it are read, so that the engine's
worker goes from one call to the next while Python reads, converts and gathers examples: a call per loader batch,
each waited for, left CTranslate2 idle between batches. A decoder-only model's length bounds count its loader batch's left-padded prompt width, as generate's do
(textbox.decoding.lengths): examples whose widths give different bounds go to different calls.

Decoder-only prompts are passed unpadded with ``include_prompt_in_result=False``: CTranslate2 runs the first
(shortest prompt - 1) tokens of every prompt at once, then the rest of each longer prompt token by token as a
forced prefix, and counts lengths from the end of each prompt. Two consequences, both handled by splitting a batch
into calls (``_by_prompt_length``):
- when the shortest prompt is a single token (an empty source: the separator alone) nothing is run at once and
  CTranslate2 counts lengths, and returns tokens, from the start of every prompt: such prompts get a call of their
  own;
- beam search after a forced prefix lets no beam but the best end at its first free step (the decoding.cc
  behaviour that keeps forced_bos_token_id with beams off CTranslate2), where generate ends any of the num_beams
  best: under beam search each prompt length gets its own call, so that no prompt has a forced prefix. (Tiny
  trained GPT-2, 60 examples, num_beams=4, length_penalty=0: 53/60 outputs equal in one call per batch.)
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import torch

from textbox.config import TextBoxUserError
from textbox.decoding.ctranslate2_cache import CannotConvert, converted_model, decoder_start_token, plain_model
from textbox.decoding.ctranslate2_settings import (Ctranslate2Call, ctranslate2_call, effective_config,
                                                   rerank_cut_hypotheses)
from textbox.decoding.detokenize import BackgroundDetokenizer
from textbox.decoding.engine import DecodingOptions, EngineChoice

# Loader batches decoded by one engine call: CTranslate2 batches their examples itself (max_batch_size: the loader's
# batch size); the calls are queued one ahead, so that the engine never waits for Python between them.
BATCHES_PER_CALL = 4
_loaded: dict[tuple, Any] = {}  # the last loaded Translator/Generator, reused across calls on the same weights


def compute_type(options: DecodingOptions, accelerator: Any) -> str:
    """--decoding_precision as CTranslate2's compute_type; auto follows --mixed_precision."""
    import ctranslate2

    device = _device(accelerator)[0]
    precision = options.precision
    if precision == "auto":
        wanted = {"bf16": "bfloat16", "fp16": "float16"}.get(str(accelerator.mixed_precision), "float32")
        supported = ctranslate2.get_supported_compute_types(device)
        return wanted if wanted in supported else "float32"
    supported = ctranslate2.get_supported_compute_types(device)
    if precision not in supported:
        raise TextBoxUserError(f"--decoding_precision={precision} is not supported by CTranslate2 on this {device} "
                               f"(supported: {', '.join(sorted(supported))})")
    return precision


def _device(accelerator: Any) -> tuple[str, int]:
    device = accelerator.device
    return ("cuda", device.index or 0) if device.type == "cuda" else ("cpu", 0)


def load_engine(path: Path, kind: str, device: str, device_index: int, compute: str, threads: int,
                fresh: bool = False) -> Any:
    """The Translator/Generator, kept for the next call on the same weights; ``fresh`` loads it anew (its
    worker threads seed their random generators when they start: sampling needs new ones to follow the seed)."""
    import ctranslate2

    key = (str(path), kind, device, device_index, compute, threads)
    if fresh or key not in _loaded:
        _loaded.clear()
        cls = ctranslate2.Translator if kind == "translator" else ctranslate2.Generator
        _loaded[key] = cls(str(path), device=device, device_index=device_index, compute_type=compute,
                           intra_threads=threads if device == "cpu" else 0)
    return _loaded[key]


def prepare_engine(accelerator: Any, model: Any, tokenizer: Any, choice: EngineChoice,
                   options: DecodingOptions, seed: int | None = None, validation: bool = False) -> tuple[Any, Path]:
    """(the loaded Translator/Generator for ``model``, its directory): converted once (main process first, the
    others then find it in the cache)."""
    compute = compute_type(options, accelerator)
    failure = None
    with accelerator.main_process_first():  # every process reaches its barrier, converted or not
        try:
            path, _ = converted_model(plain_model(model), tokenizer, options.cache_dir, compute,
                                      latest_only=validation)
        except CannotConvert as error:
            failure = error
    if failure is not None:
        raise failure
    device, index = _device(accelerator)
    if seed is not None:
        import ctranslate2

        ctranslate2.set_random_seed(seed)
    engine = load_engine(path, choice.kind, device, index, compute, torch.get_num_threads(), fresh=seed is not None)
    return engine, path


def sampling_seed(seed: int, process_index: int) -> int:
    """CTranslate2's sampling seed on one process: a stream of its own for every (--seed, process), where
    ``seed + process_index`` made seed 7's second process sample as seed 8's first."""
    import numpy as np

    return int(np.random.SeedSequence([seed % 2**32, process_index]).generate_state(1)[0])


@torch.no_grad()
def ctranslate2_sequences(accelerator: Any, model: Any, tokenizer: Any, loader: Any, settings: dict[str, Any],
                          description: str, choice: EngineChoice, options: DecodingOptions) -> list[list[str]]:
    """generate_sequences on CTranslate2: every process decodes its shard; all return, in dataset order, each
    example's num_return_sequences texts (best first, as ``generate`` returns them)."""
    from tqdm.auto import tqdm

    unwrapped = accelerator.unwrap_model(model)
    inner = unwrapped.get_base_model() if getattr(unwrapped, "active_peft_config", None) is not None else unwrapped
    effective = effective_config(inner.generation_config, settings)
    seed = sampling_seed(options.seed, accelerator.process_index) if effective.do_sample else None
    engine, path = prepare_engine(accelerator, unwrapped, tokenizer, choice, options, seed,
                                  validation=description == "valid")
    batches = _BatchDecoder(engine, choice.kind, effective, tokenizer,
                            _target_prefix(path, choice.kind, effective, inner, tokenizer), inner.config.vocab_size)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    def start(chunk: list[Any]) -> tuple[list[Any], list[Callable[[], list[list[list[str]]]]]]:
        waits = []
        for run in _runs(chunk):
            sources, widths = [], []
            for batch in run:
                if choice.kind == "translator":
                    ids, mask, width = batch["input_ids"], batch["attention_mask"], 1  # the decoder start token
                else:
                    ids, mask = batch["prompt_ids"], batch["prompt_attention_mask"]
                    width = ids.shape[1]  # what generate counts in max_length / min_length: the padded prompt
                sources.extend(_tokens(tokenizer, ids, mask))
                widths.extend([width] * ids.shape[0])
            waits.append(batches.start(sources, widths, len(run[0]["index"])))
        return chunk, waits

    with BackgroundDetokenizer(tokenizer) as detokenizer, \
            tqdm(total=len(loader), desc=description, disable=not accelerator.is_local_main_process,
                 leave=False) as progress:
        def finish(chunk: list[Any], waits: list[Callable[[], list[list[list[str]]]]]) -> None:
            rows = [tokenizer.convert_tokens_to_ids(hypothesis)
                    for wait in waits for hypotheses in wait() for hypothesis in hypotheses]
            out = _padded(rows, pad_id).to(accelerator.device)
            out = accelerator.pad_across_processes(out, dim=1, pad_index=pad_id)
            index = torch.cat([batch["index"] for batch in chunk])
            detokenizer.submit(*accelerator.gather((out, index)))  # k consecutive rows per example
            progress.update(len(chunk))

        in_engine = None  # the chunk the engine works on while the next one is read and queued behind it
        for chunk in _chunks(loader, BATCHES_PER_CALL):
            queued = start(chunk)
            if in_engine is not None:
                finish(*in_engine)
            in_engine = queued
        if in_engine is not None:
            finish(*in_engine)
        return detokenizer.sequences(len(loader.dataset))


def _tokens(tokenizer: Any, ids: torch.Tensor, mask: torch.Tensor) -> list[list[str]]:
    """Each row's unpadded tokens, converted in one call."""
    rows = [row[row_mask.bool()].tolist() for row, row_mask in zip(ids.cpu(), mask.cpu())]
    flat = tokenizer.convert_ids_to_tokens([token for row in rows for token in row])
    ends = [0]
    for row in rows:
        ends.append(ends[-1] + len(row))
    return [flat[start:end] for start, end in zip(ends, ends[1:])]


def _chunks(loader: Any, size: int) -> Any:
    """The loader's batches, ``size`` at a time (the last chunk may be shorter)."""
    chunk = []
    for batch in loader:
        chunk.append(batch)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _runs(chunk: list[Any]) -> list[list[Any]]:
    """The chunk's batches cut where a batch holds more examples than the first of its run: each run is one
    engine call whose batches hold as many examples as that first batch: the loader's batch size, or under
    --eval_max_tokens (longest sources first, so a batch with more examples has shorter sources) what the budget
    allowed for sources as long as the run's longest: an engine batch never holds more examples than the loader
    put with sources of that length."""
    runs: list[list[Any]] = []
    for batch in chunk:
        if runs and len(batch["index"]) <= len(runs[-1][0]["index"]):
            runs[-1].append(batch)
        else:
            runs.append([batch])
    return runs


def _target_prefix(path: Path, kind: str, effective: Any, model: Any, tokenizer: Any) -> list[str] | None:
    """What a Translator's every target starts with: the forced first token (forced_bos_token_id), after the
    decoder start token where the converted model leaves that to the caller (see decoder_start_token)."""
    if kind != "translator":
        return None
    prefix = []
    if decoder_start_token(path) is None:
        start = effective.decoder_start_token_id
        prefix.append(tokenizer.convert_ids_to_tokens(start if start is not None else
                                                      model.config.decoder_start_token_id))
    if effective.forced_bos_token_id is not None:
        prefix.append(tokenizer.convert_ids_to_tokens(effective.forced_bos_token_id))
    return prefix or None


class _BatchDecoder:
    """Decodes examples with the calls ``generate``'s settings map to for the batches they came in."""

    def __init__(self, engine: Any, kind: str, effective: Any, tokenizer: Any, prefix: list[str] | None,
                 vocabulary_size: int):
        self.engine, self.kind, self.effective, self.prefix = engine, kind, effective, prefix
        self.vocabulary_size = vocabulary_size
        end = effective.eos_token_id
        self.end_tokens = tokenizer.convert_ids_to_tokens(end if isinstance(end, list) else [end])

    def start(self, sources: list[list[str]], widths: list[int],
              max_batch_size: int) -> Callable[[], list[list[list[str]]]]:
        """Queues the decoding of ``sources`` on the engine (asynchronously: its worker runs the queued calls one
        after another while Python reads the next examples) and returns what waits for each example's
        num_return_sequences hypotheses (tokens), best first. ``widths``: each example's decoder input width in
        its loader batch; examples whose widths map to the same call go to one engine call, which batches them
        ``max_batch_size`` at a time."""
        calls: list[tuple[Ctranslate2Call, list[int]]] = []
        for width in sorted(set(widths)):
            call = ctranslate2_call(self.effective, self.kind, width, self.vocabulary_size)
            numbers = [number for number, each in enumerate(widths) if each == width]
            same = next((entry for entry in calls if entry[0] == call), None)
            if same is None:
                calls.append((call, numbers))
            else:
                same[1].extend(numbers)
        started = [(numbers, self._start([sources[n] for n in numbers], call, max_batch_size))
                   for call, numbers in calls]

        def wait() -> list[list[list[str]]]:
            found: list[list[list[str]]] = [[] for _ in sources]
            for numbers, hypotheses_of in started:
                for number, hypotheses in zip(numbers, hypotheses_of()):
                    found[number] = hypotheses
            return found
        return wait

    def _start(self, sources: list[list[str]], call: Ctranslate2Call,
               max_batch_size: int) -> Callable[[], list[list[list[str]]]]:
        arguments = {**call.arguments, "end_token": self.end_tokens, "max_batch_size": max_batch_size}

        def run(some: list[list[str]], **overrides: Any) -> list[Any]:
            if self.kind == "translator":
                return self.engine.translate_batch(some, target_prefix=[self.prefix] * len(some) if self.prefix
                                                   else None, **{**arguments, **overrides})
            return _by_prompt_length(some, lambda part: self.engine.generate_batch(part, **{**arguments, **overrides}),
                                     every_length=arguments["beam_size"] > 1)

        pending = run(sources, asynchronous=True)

        def wait() -> list[list[list[str]]]:
            results = [result.result() for result in pending]
            if call.stops_when_ended is not None:
                _complete_cut_searches(results, sources, run, self.end_tokens[0], call.stops_when_ended)
            return [self._pick(call, result) for result in results]
        return wait

    def _pick(self, call: Ctranslate2Call, result: Any) -> list[list[str]]:
        found = _hypotheses(result) * call.copies
        if call.rerank_cut:
            found = rerank_cut_hypotheses(found, list(result.scores), self.end_tokens[0],
                                          call.arguments["length_penalty"], call.per_example, call.stops_when_ended)
        if len(found) != call.per_example:
            raise RuntimeError(f"CTranslate2 returned {len(found)} hypotheses for an example, expected "
                               f"{call.per_example}")
        return found


def _by_prompt_length(prompts: list[list[str]], generate: Any, every_length: bool) -> list[Any]:
    """``generate`` on groups of ``prompts`` (see the module docstring), results in the order of ``prompts``: each
    prompt length apart (``every_length``, beam search), or the single-token prompts apart from the others."""
    groups: dict[int, list[int]] = {}
    for number, prompt in enumerate(prompts):
        groups.setdefault(len(prompt) if every_length else min(len(prompt), 2), []).append(number)
    if len(groups) == 1:
        return list(generate(prompts))
    results: list[Any] = [None] * len(prompts)
    for group in groups.values():
        for number, result in zip(group, generate([prompts[number] for number in group])):
            results[number] = result
    return results


def _complete_cut_searches(results: list[Any], sources: list[list[str]], decode: Any, end_token: str,
                           beams: int) -> None:
    """Under early_stopping=True with a forced end token, a search that reached the length bound returns only its
    ``beams`` best hypotheses (CTranslate2 allows no more at patience 1), which may hide how many had ended: the
    examples concerned are decoded again with patience 2, whose search is the same up to the bound (fewer than
    ``beams`` had ended before it) and which returns every hypothesis (fewer than 2 x beams)."""
    cut = [number for number, result in enumerate(results)
           if any(not hypothesis or hypothesis[-1] != end_token for hypothesis in _hypotheses(result))]
    if cut:
        again = decode([sources[number] for number in cut], patience=2.0, num_hypotheses=2 * beams)
        for number, result in zip(cut, again):
            results[number] = result


def _hypotheses(result: Any) -> list[list[str]]:
    """A TranslationResult's hypotheses or a GenerationResult's sequences."""
    return list(getattr(result, "hypotheses", None) or result.sequences)


def _padded(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    width = max((len(row) for row in rows), default=0) or 1
    out = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for number, row in enumerate(rows):
        out[number, :len(row)] = torch.tensor(row, dtype=torch.long)
    return out
