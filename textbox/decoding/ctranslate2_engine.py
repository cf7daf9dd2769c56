"""Decoding on CTranslate2: the model converted once per content (textbox.decoding.ctranslate2_cache), then
translate_batch (encoder-decoders) or generate_batch (decoder-only LMs).

Examples come from the same length-sorted loader as the transformers path (one shard per process). As a user calling
the engine directly would, the framework hands it a process's whole shard in one call and leaves the batching to it
(``max_batch_size``: the loader's batch size); only where --eval_max_tokens lets a batch hold more examples than the
first batch of its call does a new call start (``_same_run``). Calls are queued (``asynchronous=True``) as the
loader is read; once all their hypotheses are in, they are detokenised unpadded on the calling thread, and each
process's texts are gathered once, with their examples' dataset indices, and returned in dataset order. Smaller
calls queued one ahead, with Python converting and detokenising one while the engine decoded the next, took longer
and more CPU time: Python running beside the engine's worker slowed both (docs/speedups.md).

A decoder-only model's length bounds count its loader batch's left-padded prompt width, as generate's do
(textbox.decoding.lengths): examples whose widths give different bounds go to different calls. How each call is made
(decoder-only prompts, cut searches): textbox.decoding.ctranslate2_calls. CTranslate2 takes and returns token
strings: ids cross over through a memoised map (TokenMap, at the end of this module).
"""
from __future__ import annotations

import contextlib
import sys
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence, TypeVar

import torch
from accelerate.utils import gather_object

from textbox.config import TextBoxUserError
from textbox.decoding.ctranslate2_cache import CTranslate2Failed, converted_model, decoder_start_token, plain_model
from textbox.decoding.ctranslate2_calls import BatchDecoder, Wait, failure_text
from textbox.decoding.detokenize import detokenized, in_dataset_order
from textbox.decoding.engine import DecodingOptions, EngineChoice
from textbox.decoding.generation_config import effective_config
from textbox.utils.progress import bar_disabled

if TYPE_CHECKING:
    from accelerate import Accelerator
    from torch.utils.data import DataLoader
    from transformers import GenerationConfig, PreTrainedModel, PreTrainedTokenizerBase

    from textbox.decoding.ctranslate2_cache import DecodedModel
    from textbox.decoding.ctranslate2_calls import Engine

Key = TypeVar("Key")
Value = TypeVar("Value")
Item = TypeVar("Item")
# The last loaded Translator/Generator, reused across calls on the same weights: (directory, kind, device, device
# index, compute type, workers, threads per worker) -> the engine
_loaded: dict[tuple[str, str, str, int, str, int, int], Engine] = {}


def compute_type(options: DecodingOptions, accelerator: Accelerator) -> str:
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


def _device(accelerator: Accelerator) -> tuple[str, int]:
    device = accelerator.device
    return ("cuda", device.index or 0) if device.type == "cuda" else ("cpu", 0)


def thread_layout(threads: int, sampling: bool) -> tuple[int, int]:
    """(workers, threads per worker) for CTranslate2 on a CPU with ``threads`` threads.

    Greedy and beam searches: one one-thread worker per thread (``inter_threads``), decoding whole batches side by
    side: a batch's hypotheses do not depend on the worker that decodes it, and whole batches on separate cores
    outrun one batch's matrix products split over them (docs/speedups.md, "Threads"). Sampling: one worker (with
    several, which worker draws for which batch would change the samples), on every thread (``intra_threads``),
    unless CTranslate2 shares torch's OpenMP runtime, where it runs faster on one.
    """
    if not sampling:
        return threads, 1
    return 1, 1 if shares_torch_openmp() else threads


def shares_torch_openmp() -> bool:
    """Whether this process imported CTranslate2 after torch: CTranslate2's OpenMP calls then went to the runtime
    torch put in the global symbol scope (textbox/pipeline/__init__.py imports CTranslate2 first to avoid it)."""
    names = list(sys.modules)  # in import order
    return "torch" in names and "ctranslate2" in names and names.index("torch") < names.index("ctranslate2")


def load_engine(path: Path, kind: str, device: str, device_index: int, compute: str, threads: int,
                sampling: bool = False) -> Engine:
    """The Translator/Generator, kept for the next call on the same weights.

    Sampling loads anew every time: its workers seed their random generators when they start, and they must
    follow the seed. On a CPU the threads are laid out by ``thread_layout``.
    """
    import ctranslate2

    workers, threads_per_worker = thread_layout(threads, sampling) if device == "cpu" else (1, 0)
    key = (str(path), kind, device, device_index, compute, workers, threads_per_worker)
    if sampling or key not in _loaded:
        _loaded.clear()
        cls = ctranslate2.Translator if kind == "translator" else ctranslate2.Generator
        _loaded[key] = cls(str(path), device=device, device_index=device_index, compute_type=compute,
                           inter_threads=workers, intra_threads=threads_per_worker)
    return _loaded[key]


def prepare_engine(accelerator: Accelerator, model: DecodedModel, tokenizer: PreTrainedTokenizerBase,
                   choice: EngineChoice, options: DecodingOptions, seed: int | None = None,
                   validation: bool = False) -> tuple[Engine, Path]:
    """(the loaded Translator/Generator for ``model``, its directory): converted once (main process first, the
    others then find it in the cache). A conversion or a load that fails raises CTranslate2Failed."""
    compute = compute_type(options, accelerator)
    failure = None
    with accelerator.main_process_first():  # every process reaches its barrier, converted or not
        try:
            path, _ = converted_model(plain_model(model), tokenizer, options.cache_dir, compute,
                                      latest_only=validation)
        except CTranslate2Failed as error:
            failure = error
    if failure is not None:
        raise failure
    device, index = _device(accelerator)
    if seed is not None:
        import ctranslate2

        ctranslate2.set_random_seed(seed)
    try:
        engine = load_engine(path, choice.kind, device, index, compute, torch.get_num_threads(),
                             sampling=seed is not None)
    except Exception as error:  # e.g. a config.json the engine cannot read
        raise CTranslate2Failed(f"CTranslate2 could not load the converted model {path} "
                                f"({failure_text(error)})") from error
    return engine, path


def sampling_seed(seed: int, process_index: int) -> int:
    """CTranslate2's sampling seed on one process: a stream of its own for every (--seed, process), where
    ``seed + process_index`` made seed 7's second process sample as seed 8's first."""
    import numpy as np

    return int(np.random.SeedSequence([seed % 2**32, process_index]).generate_state(1)[0])


@contextlib.contextmanager
def _torch_threads_kept() -> Iterator[None]:
    """torch's thread count as it was before decoding. Where torch was imported before CTranslate2, CTranslate2's
    OpenMP calls bind to torch's runtime (textbox/pipeline/__init__.py) and a decode left torch on one thread: the
    training after a validation ran on one core."""
    threads = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@_torch_threads_kept()
@torch.no_grad()
def ctranslate2_sequences(accelerator: Accelerator, model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase,
                          loader: DataLoader, settings: Mapping[str, object],
                          description: str, choice: EngineChoice, options: DecodingOptions) -> list[list[str]]:
    """generate_sequences on CTranslate2: every process decodes its shard; all return, in dataset order, each
    example's num_return_sequences texts (best first, as ``generate`` returns them). A conversion, load or
    translation that fails on any process raises CTranslate2Failed on every process (before any text is
    returned), so that they all decode again with the same engine."""
    failure = None
    try:
        indices, texts = _decoded_shard(accelerator, model, tokenizer, loader, settings, description, choice, options)
    except CTranslate2Failed as error:
        indices, texts, failure = [], [], str(error)
    # Every process detokenised its own shard; the texts (not padded ids) cross over, once per decode.
    shards = gather_object([(indices, texts, failure)])
    failures = [failed for _, _, failed in shards if failed is not None]
    if failures:
        raise CTranslate2Failed(failures[0])
    # the loader's dataset (the Evaluator's EvalExamples) has a length; torch's Dataset annotation declares none
    return in_dataset_order([(shard_indices, shard_texts) for shard_indices, shard_texts, _ in shards],
                            len(loader.dataset))  # type: ignore[arg-type]


def _decoded_shard(accelerator: Accelerator, model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase,
                   loader: DataLoader, settings: Mapping[str, object],
                   description: str, choice: EngineChoice, options: DecodingOptions) -> tuple[list[int], list[str]]:
    """(the dataset index of every example of this process's shard, their texts: num_return_sequences each)."""
    from tqdm.auto import tqdm

    unwrapped = accelerator.unwrap_model(model)
    inner = unwrapped.get_base_model() if getattr(unwrapped, "active_peft_config", None) is not None else unwrapped
    effective = effective_config(inner.generation_config, settings)
    seed = sampling_seed(options.seed, accelerator.process_index) if effective.do_sample else None
    engine, path = prepare_engine(accelerator, unwrapped, tokenizer, choice, options, seed,
                                  validation=description == "valid")
    batches = BatchDecoder(engine, choice.kind, effective, tokenizer,
                           _target_prefix(path, choice.kind, effective, inner, tokenizer), inner.config.vocab_size)
    tokens = token_map(tokenizer)
    indices: list[int] = []  # the dataset index of every example of this process's shard, in loader order
    calls: list[Wait] = []
    sources: list[list[str]] = []  # the examples of the call being read (see _same_run)
    widths: list[int] = []
    run_size = 0  # examples in the first loader batch of that call
    for batch in loader:
        if sources and not _same_run(len(batch["index"]), run_size):
            calls.append(batches.start(sources, widths, run_size))
            sources, widths = [], []
        if not sources:
            run_size = len(batch["index"])
        if choice.kind == "translator":
            ids, mask, width = batch["input_ids"], batch["attention_mask"], 1  # the decoder start token
        else:
            ids, mask = batch["prompt_ids"], batch["prompt_attention_mask"]
            width = ids.shape[1]  # what generate counts in max_length / min_length: the padded prompt
        sources.extend(_tokens(tokens, ids, mask))
        widths.extend([width] * ids.shape[0])
        indices.extend(batch["index"].tolist())
    if sources:
        calls.append(batches.start(sources, widths, run_size))

    with tqdm(total=len(indices), desc=description, unit="example",
              disable=bar_disabled(accelerator.is_local_main_process),
              leave=False) as progress:
        hypotheses = [hypothesis for wait in calls for found in wait(progress.update) for hypothesis in found]
    flat = tokens.ids([token for hypothesis in hypotheses for token in hypothesis])
    return indices, detokenized(tokenizer, _split(flat, [len(hypothesis) for hypothesis in hypotheses]))


def _tokens(tokens: TokenMap, ids: torch.Tensor, mask: torch.Tensor) -> list[list[str]]:
    """Each row's unpadded tokens (wherever the padding is), taken out in one tensor operation."""
    mask = mask.cpu().bool()
    flat = tokens.tokens(ids.cpu()[mask].tolist())
    return _split(flat, mask.sum(dim=1).tolist())


def _split(flat: list[Item], lengths: list[int]) -> list[list[Item]]:
    """``flat`` cut into consecutive rows of ``lengths``."""
    rows, start = [], 0
    for length in lengths:
        rows.append(flat[start:start + length])
        start += length
    return rows


def _same_run(batch_size: int, run_size: int) -> bool:
    """Whether a loader batch of ``batch_size`` examples joins the engine call of a run whose first batch held
    ``run_size``: the call batches its examples ``run_size`` at a time, so a batch with more examples starts a
    call of its own. Without --eval_max_tokens every batch holds the loader's batch size (one call for the whole
    shard); under it (longest sources first, so a batch with more examples has shorter sources) an engine batch
    never holds more examples than the loader put with sources as long as the run's longest."""
    return batch_size <= run_size


def _target_prefix(path: Path, kind: str, effective: GenerationConfig, model: PreTrainedModel,
                   tokenizer: PreTrainedTokenizerBase) -> list[str] | None:
    """What a Translator's every target starts with: the forced first token (forced_bos_token_id), after the
    decoder start token where the converted model leaves that to the caller (see decoder_start_token)."""
    if kind != "translator":
        return None
    # transformers annotates convert_ids_to_tokens / convert_tokens_to_ids without overloads (one id or token -> one
    # token or id, a list -> a list): each call here passes one id.
    prefix: list[str] = []
    if decoder_start_token(path) is None:
        start = effective.decoder_start_token_id
        prefix.append(tokenizer.convert_ids_to_tokens(start if start is not None else  # type: ignore[arg-type]
                                                      model.config.decoder_start_token_id))
    if effective.forced_bos_token_id is not None:
        prefix.append(tokenizer.convert_ids_to_tokens(effective.forced_bos_token_id))  # type: ignore[arg-type]
    return prefix or None


# --- ids <-> tokens ---------------------------------------------------------------------------------------------------
# Ids to token strings and back for CTranslate2, which takes and returns tokens: each id or token converted by the
# tokenizer once, then looked up in a dict.
#
# transformers' ``convert_ids_to_tokens`` / ``convert_tokens_to_ids`` run Python code per token (checks, an added-token
# look-up, a call into the Rust tokenizer); the framework converts every source and every hypothesis, and the map
# takes about a tenth of their time (docs/speedups.md, "Figures behind the code's choices"). The map asks the tokenizer
# itself about any id or token it has not seen, so it gives exactly the tokenizer's answers; it is kept per
# tokenizer while the tokenizer's length stays the same (adding tokens is how a vocabulary changes).
class TokenMap:
    """A tokenizer's id <-> token conversions, memoised."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase):
        self.tokenizer = tokenizer
        self.size = len(tokenizer)
        self._tokens: dict[int, str] = {}
        self._ids: dict[str, int] = {}

    def tokens(self, ids: Sequence[int]) -> list[str]:
        """What ``tokenizer.convert_ids_to_tokens(ids)`` returns."""
        return _looked_up(self._tokens, ids, self.tokenizer.convert_ids_to_tokens)  # type: ignore[arg-type]  # a list

    def ids(self, tokens: Sequence[str]) -> list[int]:
        """What ``tokenizer.convert_tokens_to_ids(tokens)`` returns."""
        return _looked_up(self._ids, tokens, self.tokenizer.convert_tokens_to_ids)  # type: ignore[arg-type]  # a list


def _looked_up(known: dict[Key, Value], keys: Sequence[Key],
               convert: Callable[[list[Key]], list[Value]]) -> list[Value]:
    """``keys`` looked up in ``known``; the ones not there yet converted in one call and remembered first."""
    try:
        return [known[key] for key in keys]
    except KeyError:
        unseen = list({key for key in keys if key not in known})
        known.update(zip(unseen, convert(unseen)))
        return [known[key] for key in keys]


_maps: weakref.WeakKeyDictionary[PreTrainedTokenizerBase, TokenMap] = weakref.WeakKeyDictionary()


def token_map(tokenizer: PreTrainedTokenizerBase) -> TokenMap:
    """The tokenizer's map, made anew when tokens were added since (or the tokenizer cannot be weakly referenced)."""
    try:
        found = _maps.get(tokenizer)
    except TypeError:
        return TokenMap(tokenizer)
    if found is None or found.size != len(tokenizer):
        found = _maps[tokenizer] = TokenMap(tokenizer)
    return found
