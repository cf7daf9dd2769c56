"""Decoding on CTranslate2: the in-memory model converted once per content, then translate/generate per batch.

Conversion reads the model object being decoded (the checkpoint just trained, checkpoint_best, a --model_path),
never the user's files: ``TransformersConverter`` is given that model and its tokenizer, and only the config it
reads first is written, to a temporary directory. The result is cached under ``<cache_dir>/ctranslate2/<key>``,
the key a hash of the weights, the model config, the vocabulary, the precision and CTranslate2's version, so the
same weights convert once whatever path they came from. LoRA/IA3 adapters are merged into a copy first.

The converter is given a deep copy of the model (its int8 quantisation rewrites the weights in place). Fields
transformers 5 dropped but the converter reads (``BartConfig.normalize_before``: BART normalises after each
block) are set on that copy's config; the model's own config is left alone.

Batches come from the same length-sorted loader as the transformers path (one shard per process) and leave as
ids through the same gather and background detokenisation, so outputs return in dataset order.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from textbox.config import TextBoxUserError
from textbox.decoding.ctranslate2_settings import ctranslate2_call, effective_config, rerank_cut_hypotheses
from textbox.decoding.detokenize import BackgroundDetokenizer
from textbox.decoding.engine import DecodingOptions, EngineChoice
from textbox.utils.logging import get_logger

# Fields some converters read that transformers 5 configs no longer carry, with the architecture's value.
_DROPPED_FIELDS = {"bart": {"normalize_before": False}}
_STORAGE_TYPES = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "float16", "bfloat16")
# Config fields that say where a model came from, not what it computes.
_PROVENANCE = ("_name_or_path", "_commit_hash", "transformers_version")
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


def plain_model(model: Any) -> Any:
    """The transformers model to convert: a LoRA/IA3 PeftModel merged into a copy, anything else itself."""
    if getattr(model, "active_peft_config", None) is None:
        return model
    return copy.deepcopy(model).merge_and_unload()


def content_key(model: Any, tokenizer: Any, quantization: str) -> str:
    """Hash of what the converted model depends on: weights, config, vocabulary, precision, CTranslate2."""
    import ctranslate2

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        tensor = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    config = {key: value for key, value in model.config.to_dict().items() if key not in _PROVENANCE}
    digest.update(json.dumps(config, sort_keys=True, default=str).encode())
    digest.update(json.dumps(tokenizer.get_vocab(), sort_keys=True).encode())
    digest.update(f"{quantization}:{ctranslate2.__version__}".encode())
    return digest.hexdigest()[:32]


def converted_model(model: Any, tokenizer: Any, cache_dir: str | Path, quantization: str,
                    latest_only: bool = False) -> tuple[Path, bool]:
    """(directory of the CTranslate2 model, whether it was converted now); converted at most once per key.
    ``latest_only`` (validation: new weights every time) keeps one conversion under ``validation/``."""
    key = content_key(model, tokenizer, quantization)
    root = Path(cache_dir) / "ctranslate2" / ("validation" if latest_only else "")
    target = root / key
    if (target / "model.bin").is_file():
        return target, False
    if latest_only and root.is_dir():
        for old in root.iterdir():
            shutil.rmtree(old, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=root, prefix=".converting-") as work:
        config_dir, output = Path(work) / "config", Path(work) / "model"
        seen = _as_converter_sees_it(model)
        seen.config.save_pretrained(config_dir)  # the converter reads the config class from here
        _InMemoryConverter(seen, tokenizer, str(config_dir)).convert(
            str(output), quantization=quantization if quantization in _STORAGE_TYPES else None)
        try:
            os.replace(output, target)  # atomic; another process may have won the race
        except OSError:
            if not (target / "model.bin").is_file():
                raise
    get_logger().info(f"converted the model for CTranslate2 ({quantization}) in {time.perf_counter() - started:.1f} s "
                      f"into {target}")
    return target, True


def _as_converter_sees_it(model: Any) -> Any:
    """A copy of ``model`` whose config carries the fields the converter reads. A deep copy: quantising
    (int8) rewrites the weights it is given in place (measured: the decoded model's embeddings and projections
    changed), and the model being decoded must stay as it is."""
    seen = copy.deepcopy(model)
    for name, value in _DROPPED_FIELDS.get(seen.config.model_type, {}).items():
        if not hasattr(seen.config, name):
            setattr(seen.config, name, value)
    return seen


def _converter_class() -> type:
    from ctranslate2.converters import TransformersConverter

    class InMemoryConverter(TransformersConverter):
        """TransformersConverter fed with a model and tokenizer already in memory."""

        def __init__(self, model: Any, tokenizer: Any, config_dir: str):
            super().__init__(config_dir)
            self._model, self._tokenizer = model, tokenizer

        def load_model(self, model_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
            return self._model

        def load_tokenizer(self, tokenizer_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
            return self._tokenizer

    return InMemoryConverter


def _InMemoryConverter(model: Any, tokenizer: Any, config_dir: str) -> Any:  # noqa: N802 - a lazy class
    return _converter_class()(model, tokenizer, config_dir)


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
                   options: DecodingOptions, seed: int | None = None, validation: bool = False) -> Any:
    """The loaded Translator/Generator for ``model``: converted once (main process first, others then find
    it in the cache)."""
    compute = compute_type(options, accelerator)
    with accelerator.main_process_first():
        path, _ = converted_model(plain_model(model), tokenizer, options.cache_dir, compute, latest_only=validation)
    device, index = _device(accelerator)
    if seed is not None:
        import ctranslate2

        ctranslate2.set_random_seed(seed)
    return load_engine(path, choice.kind, device, index, compute, torch.get_num_threads(), fresh=seed is not None)


@torch.no_grad()
def ctranslate2_sequences(accelerator: Any, model: Any, tokenizer: Any, loader: Any, settings: dict[str, Any],
                          description: str, choice: EngineChoice, options: DecodingOptions) -> list[list[str]]:
    """generate_sequences on CTranslate2: every process decodes its shard; all return, in dataset order, each
    example's num_return_sequences texts (best first, as ``generate`` returns them)."""
    from tqdm.auto import tqdm

    unwrapped = accelerator.unwrap_model(model)
    inner = unwrapped.get_base_model() if getattr(unwrapped, "active_peft_config", None) is not None else unwrapped
    effective = effective_config(inner.generation_config, settings)
    seed = options.seed + accelerator.process_index if effective.do_sample else None
    engine = prepare_engine(accelerator, unwrapped, tokenizer, choice, options, seed, validation=description == "valid")
    encoder_decoder = choice.kind == "translator"
    call = ctranslate2_call(effective, choice.kind, encoder_decoder)
    arguments, per_example = call.arguments, call.per_example
    end = effective.eos_token_id
    arguments["end_token"] = tokenizer.convert_ids_to_tokens(end if isinstance(end, list) else [end])
    prefix = ([tokenizer.convert_ids_to_tokens(effective.forced_bos_token_id)]
              if encoder_decoder and effective.forced_bos_token_id is not None else None)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    def decode(sources: list[list[str]], **overrides: Any) -> list[Any]:
        if encoder_decoder:
            return engine.translate_batch(sources, target_prefix=[prefix] * len(sources) if prefix else None,
                                          **{**arguments, **overrides})
        return engine.generate_batch(sources, **{**arguments, **overrides})

    def pick(result: Any) -> list[list[str]]:
        found = _hypotheses(result)
        if call.rerank_cut:
            found = rerank_cut_hypotheses(found, list(result.scores), arguments["end_token"][0],
                                          arguments["length_penalty"], per_example, call.stops_when_ended)
        if len(found) != per_example:
            raise RuntimeError(f"CTranslate2 returned {len(found)} hypotheses for an example, expected {per_example}")
        return found

    with BackgroundDetokenizer(tokenizer) as detokenizer:
        for batch in tqdm(loader, desc=description, disable=not accelerator.is_local_main_process, leave=False):
            if encoder_decoder:
                ids, mask = batch["input_ids"], batch["attention_mask"]
            else:
                ids, mask = batch["prompt_ids"], batch["prompt_attention_mask"]
            sources = [tokenizer.convert_ids_to_tokens(row[row_mask.bool()].tolist())
                       for row, row_mask in zip(ids.cpu(), mask.cpu())]
            results = list(decode(sources))
            if call.stops_when_ended is not None:
                _complete_cut_searches(results, sources, decode, arguments["end_token"][0], call.stops_when_ended)
            rows = [tokenizer.convert_tokens_to_ids(hypothesis)
                    for result in results for hypothesis in pick(result)]
            out = _padded(rows, pad_id).to(accelerator.device)
            out = accelerator.pad_across_processes(out, dim=1, pad_index=pad_id)
            detokenizer.submit(*accelerator.gather((out, batch["index"])))  # k consecutive rows per example
        return detokenizer.sequences(len(loader.dataset))


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


def remove_cache(cache_dir: str | Path) -> None:
    """Delete every converted model under ``cache_dir`` (they are rebuilt on demand)."""
    shutil.rmtree(Path(cache_dir) / "ctranslate2", ignore_errors=True)
