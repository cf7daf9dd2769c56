"""The CTranslate2 conversion of an in-memory model, converted once per content and kept in a cache.

Conversion reads the model object being decoded (the checkpoint just trained, checkpoint_best, a --model_path),
never the user's files: ``TransformersConverter`` is given that model and its tokenizer, and only the config it
reads first is written, to a temporary directory. The result is cached under ``<cache_dir>/ctranslate2/<key>``, the
key a hash of everything the converted model depends on: the weights, the model config, the vocabulary, which
tokens are special (the converter writes the tokenizer's bos/eos/unk tokens into the converted config, and
Pegasus and Marian models start decoding from its pad or eos token), the precision and CTranslate2's version. So
the same weights convert once whatever path they came from. LoRA/IA3 adapters are merged into a copy first; a base
with bitsandbytes weights (--quantization) is dequantised first, then merged in float.

A cache never poisons a run: a conversion is published by one rename of a complete directory holding a record of
its files, their sizes and checksums (XXH3-128), written last, and an entry is used only if every file is there at
its recorded size and checksum (textbox.utils.checksums). One that is not (a copy cut short, a full disk, bytes
overwritten in place, an entry from before the record held checksums) is named in a warning and converted again. A
file checked once is checked again only when it changed: a decode after a decode hashes nothing.
A complete entry another process published first is kept as it is, never replaced under a process loading it.

Validation converts new weights every time: those conversions go to ``<key>`` under ``ctranslate2/validation/``,
which processes share (study workers, two runs, the ranks of one run). A process holds a lease on the entry it
converts or uses (textbox.utils.leases) until its next validation conversion, and then removes every entry no
process holds: each live process keeps one, and none removes an entry another is converting or loading.

The converter writes the tokenizer's bos/eos/unk tokens into the converted config as strings, and CTranslate2
refuses to load a null one. A tokenizer without them (a BERT tokenizer saved with a BART or GPT-2 config, as
Chinese BART and GPT-2 checkpoints ship) is given, on the converter's copy, the tokens of the ids the model's
generation config names: the end token ``generate`` stops at, and a start token the engine never decodes from
here (the framework passes the decoder start token or the prompt itself).

The converter is given a deep copy of the model (its int8 quantisation rewrites the weights in place), on the
CPU: it reads each weight's bytes at its address in host memory, so a model decoded on a GPU is copied to the host
(and only there: the GPU holds no second copy). Fields
transformers 5 dropped but the converter reads (``normalize_before``, ``normalize_embedding``: whether the
architecture normalises before each block and after the embeddings) are set on that copy's config; the model's
own config is left alone.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import tempfile
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from textbox.utils import checksums, leases
from textbox.utils.atomic import swap_in
from textbox.utils.logging import get_logger

if TYPE_CHECKING:
    from typing import TypeAlias

    from ctranslate2.converters import TransformersConverter
    from peft import PeftModel
    from transformers import PreTrainedModel, PreTrainedTokenizerBase
    from typing_extensions import TypeIs

    # A model to decode: a transformers model, or a PeftModel over one (LoRA/IA3 are merged before conversion).
    DecodedModel: TypeAlias = PreTrainedModel | PeftModel

# Fields some converters read that transformers 5 configs no longer carry, with the architecture's value.
# T5-family converters scale the decoder outputs by d_model**-0.5 when config.tie_word_embeddings says so (the rule of
# transformers 4), but transformers 5 always sets that field and decides with scale_decoder_outputs (T5; a config
# saved with tie_word_embeddings false turns it off), and never scales mT5's: the field is set to what the model does.
_SCALES_DECODER_OUTPUTS = ("t5", "mt5", "umt5")
# Bumped when the conversion of the same model changes (a fix above): entries converted before are converted again.
_CONVERSION_REVISION = 2
_DROPPED_FIELDS = {"bart": {"normalize_before": False}, "mbart": {"normalize_before": True},
                   "pegasus": {"normalize_before": True, "normalize_embedding": False}}
STORAGE_TYPES = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "float16", "bfloat16")
# Config fields that say where a model came from, not what it computes. save_pretrained sets ``architectures`` and
# ``dtype`` on the model it saves (the main process's, when it writes checkpoint_best): keyed, they made the other
# processes of a run convert the same weights again. The weights' dtypes are keyed tensor by tensor, and the
# converter reads neither (it is handed the model).
_PROVENANCE = ("_name_or_path", "_commit_hash", "transformers_version", "architectures", "dtype", "torch_dtype")
_SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "pad_token")
RECORD = "textbox_conversion.json"  # the files of a complete conversion, their sizes and checksums, written last
VALIDATION = "validation"  # the directory of validation conversions, shared by the processes using the cache
_KEY = r"[0-9a-f]{32}"  # a content key (content_key): every name of an entry holds its key


class CTranslate2Failed(Exception):
    """CTranslate2 could not decode this model: its conversion, the loading of the converted model or a
    translation failed. ``--decoding_backend=auto`` decodes with transformers instead (and says why); an explicit
    ``ctranslate2`` stops with the message."""


class CannotConvert(CTranslate2Failed):
    """The converter failed on this model (e.g. an OPT vocabulary that is no multiple of 8, a Marian model
    without a Marian tokenizer)."""


def has_adapter(model: DecodedModel) -> TypeIs[PeftModel]:
    """Whether ``model`` is a PeftModel (it carries an adapter: its active_peft_config)."""
    return getattr(model, "active_peft_config", None) is not None


def plain_model(model: DecodedModel) -> PreTrainedModel:
    """The transformers model to convert: a LoRA/IA3 PeftModel merged into a copy, a model with bitsandbytes
    weights dequantised (``dequantized_model``), anything else itself."""
    if quantization_method(model) is not None:
        return dequantized_model(model)
    if not has_adapter(model):
        return model
    return copy.deepcopy(model).merge_and_unload()


def quantization_method(model: DecodedModel) -> str | None:
    """int8 / nf4 / fp4 when ``model`` (or a PeftModel's base) holds bitsandbytes weights, else None."""
    inner = model.get_base_model() if has_adapter(model) else model
    if not getattr(inner, "is_quantized", False):
        return None
    found = getattr(inner.config, "quantization_config", None)
    settings = found.to_dict() if found is not None and hasattr(found, "to_dict") else dict(found or {})
    return "int8" if settings.get("load_in_8bit") else str(settings.get("bnb_4bit_quant_type", "4-bit"))


def dequantized_model(model: DecodedModel) -> PreTrainedModel:
    """A float copy of a model with bitsandbytes weights: every quantised layer dequantised (transformers'
    ``dequantize``), then a LoRA/IA3 adapter merged in float (merging into the quantised layers would round the
    sum to 4 or 8 bits again). The model itself is left as it is."""
    work = copy.deepcopy(model)
    if not has_adapter(work):
        return work.dequantize()
    from peft import get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict

    adapter = get_peft_model_state_dict(work)
    settings = copy.deepcopy(work.active_peft_config)
    base = work.unload().dequantize()  # the adapter's layers taken out, the base in float
    merged = get_peft_model(base, settings)
    set_peft_model_state_dict(merged, adapter)
    return merged.merge_and_unload()


def content_key(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, quantization: str) -> str:
    """Hash of what the converted model depends on: weights, config, vocabulary, special tokens, precision,
    CTranslate2."""
    import ctranslate2

    named = sorted(model.state_dict().items())
    weights = "".join(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}:{tensor_digest}" for (name, tensor), tensor_digest
                      in zip(named, _tensor_digests([tensor for _, tensor in named])))
    digest = hashlib.sha256(weights.encode())
    config = {key: value for key, value in model.config.to_dict().items() if key not in _PROVENANCE}
    digest.update(json.dumps(config, sort_keys=True, default=str).encode())
    digest.update(_vocabulary_digest(tokenizer))
    special = {name: str(getattr(tokenizer, name, None)) for name in _SPECIAL_TOKENS}
    digest.update(json.dumps([special, tokenizer.special_tokens_map], sort_keys=True, default=str).encode())
    digest.update(f"{quantization}:{ctranslate2.__version__}:{_CONVERSION_REVISION}".encode())
    return digest.hexdigest()[:32]


def _vocabulary_digest(tokenizer: PreTrainedTokenizerBase) -> bytes:
    """sha256 of the vocabulary as text: a fast tokenizer's own serialisation (vocabulary in id order, merges,
    added tokens; several times faster than sorting get_vocab() into JSON), else get_vocab() as sorted JSON. Kept
    per tokenizer while its length stays the same (adding tokens is how a vocabulary changes): the key is computed
    before every decode, validation included, and hashing the vocabulary's text each time cost as much as hashing
    the weights of a small model (docs/speedups.md, "Figures behind the code's choices")."""
    try:
        kept = _vocabularies.get(tokenizer)
    except TypeError:  # a tokenizer that cannot be weakly referenced
        kept = None
    if kept is not None and kept[0] == len(tokenizer):
        return kept[1]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    text = backend.to_str() if backend is not None else json.dumps(tokenizer.get_vocab(), sort_keys=True)
    digest = hashlib.sha256(text.encode()).digest()
    with contextlib.suppress(TypeError):
        _vocabularies[tokenizer] = (len(tokenizer), digest)
    return digest


_vocabularies: weakref.WeakKeyDictionary[PreTrainedTokenizerBase, tuple[int, bytes]] = weakref.WeakKeyDictionary()


def _tensor_digests(tensors: list[torch.Tensor]) -> list[str]:
    """Each tensor's bytes hashed in place (no copy) with xxHash's XXH3-128: a cache key against accidental
    collisions, not an adversary, at memory speed (the weights are hashed before every decode, validation
    included, and sha256 of a mid-sized model took a sizeable part of a second: docs/speedups.md, "Figures behind
    the code's choices")."""
    import xxhash

    digests, seen = [], {}  # tied weights (BART's three embeddings, half its weights) are hashed once
    for tensor in tensors:
        view = (tensor.device, tensor.data_ptr(), tensor.dtype, tuple(tensor.shape), tensor.stride())
        if view not in seen:
            data = tensor.detach().to("cpu").contiguous().reshape(-1)
            # numpy's annotations give ndarray its buffer protocol (__buffer__) only from Python 3.12 on
            seen[view] = xxhash.xxh3_128_hexdigest(
                data.view(torch.uint8).numpy()) if data.numel() else ""  # type: ignore[arg-type]
        digests.append(seen[view])
    return digests


def converted_model(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, cache_dir: str | Path,
                    quantization: str, latest_only: bool = False) -> tuple[Path, bool]:
    """(directory of the CTranslate2 model, whether it was converted now); converted at most once per key.
    ``latest_only`` (validation: new weights every time): the conversion goes under ``validation/``, where this
    process keeps only its latest (see the module docstring)."""
    key = content_key(model, tokenizer, quantization)
    root = Path(cache_dir) / "ctranslate2"
    if not latest_only:
        return _found_or_converted(model, tokenizer, root, key, quantization)
    root = root / VALIDATION
    root.mkdir(parents=True, exist_ok=True)
    lease = leases.hold(root / f"{key}{leases.LOCK_SUFFIX}")  # from now on no process removes this entry
    try:
        found = _found_or_converted(model, tokenizer, root, key, quantization)
    except BaseException:
        lease.release()
        raise
    _hold_only(lease, root, key)
    return found


# This process's lease on its latest validation conversion: held until the next one (a decode loads the converted
# model after converted_model returns; a Translator holds its weights in memory once loaded).
_validation_lease: leases.Lease | None = None


def _hold_only(lease: leases.Lease, root: Path, key: str) -> None:
    """Keep ``lease``, give up the previous one, and remove the validation conversions no process holds."""
    global _validation_lease
    previous, _validation_lease = _validation_lease, lease
    if previous is not None:  # the same entry again (the same weights validated twice) stays held by ``lease``
        previous.release()
    leases.remove_unheld(root, leases.key_in_name(_KEY), keep={key})


def _found_or_converted(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, root: Path, key: str,
                        quantization: str) -> tuple[Path, bool]:
    target = root / key
    if target.is_dir():
        damage = damage_of(target)
        if damage is None:
            return target, False
        get_logger().warning(f"the cached CTranslate2 conversion {target} is damaged ({damage}): converting "
                             f"the model again")
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=root, prefix=f".converting-{key}-") as work:
        output = Path(work) / "model"
        convert(model, tokenizer, output, quantization)
        _write_record(output)
        _publish(output, target)
    get_logger().info(f"converted the model for CTranslate2 ({quantization}) in {time.perf_counter() - started:.1f} s "
                      f"into {target}")
    return target, True


def convert(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, output: Path, quantization: str) -> None:
    """Convert ``model`` (a plain transformers model: ``plain_model``) into the new directory ``output``, its weights
    stored as ``quantization`` (one of CTranslate2's storage types, else as they are); CannotConvert if the
    converter fails. What the cache and the export command (textbox.decoding.ctranslate2_export) both do."""
    with tempfile.TemporaryDirectory(prefix="textbox-ct2-config-") as config_dir:
        seen = _as_converter_sees_it(model)
        seen_tokenizer = _tokenizer_as_converter_sees_it(seen, tokenizer)
        seen.config.save_pretrained(config_dir)  # the converter reads the config class from here
        try:
            _InMemoryConverter(seen, seen_tokenizer, config_dir).convert(
                str(output), quantization=quantization if quantization in STORAGE_TYPES else None)
        except Exception as error:  # whatever the converter trips on, the model does not convert
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise CannotConvert(f"CTranslate2's converter cannot convert this {model.config.model_type!r} model "
                                f"({type(error).__name__}: {reason})") from error


def _publish(output: Path, target: Path) -> None:
    """``output`` becomes ``target`` in one rename. A complete ``target`` another process published meanwhile (the
    same content) is kept, never replaced under a process that may be loading it; a damaged one is replaced."""
    try:
        os.rename(output, target)
        return
    except OSError:
        if not target.is_dir():
            raise
    if damage_of(target) is not None:
        swap_in(output, target)


def damage_of(directory: Path) -> str | None:
    """What is wrong with a cached conversion (None: complete, every file at the size and checksum recorded when
    written; textbox.utils.checksums)."""
    return checksums.damage_of(directory, RECORD)


def _write_record(directory: Path) -> None:
    """Flush every converted file to disk, then record their sizes and checksums (the record last: it marks
    completion)."""
    checksums.write_record(directory, RECORD)


def decoder_start_token(directory: Path) -> str | None:
    """The token the converted Translator starts decoding with; None when the converter left it to the caller
    (mBART checkpoints whose tokenizer class is MBartTokenizer or unnamed: the start token then leads the
    target prefix)."""
    return json.loads((directory / "config.json").read_text(encoding="utf-8")).get("decoder_start_token")


def _as_converter_sees_it(model: PreTrainedModel) -> PreTrainedModel:
    """A copy of ``model`` whose config carries the fields the converter reads. A deep copy: quantising
    (int8) rewrites the weights it is given in place (measured: the decoded model's embeddings and projections
    changed), and the model being decoded must stay as it is. On the CPU: CTranslate2's converter reads each
    tensor's bytes at its address as host memory (ctranslate2.specs.model_spec.PyTorchVariable.to_bytes), which for
    a weight on a GPU is a device address; the weights a GPU holds are copied straight to the host (shared ones
    once: tied weights stay tied)."""
    on_device = {id(tensor): _host_copy(tensor) for tensor in [*model.parameters(), *model.buffers()]
                 if tensor.device.type != "cpu"}
    seen = copy.deepcopy(model, on_device)  # the memo hands deepcopy the host copies in place of the GPU's tensors
    for name, value in _DROPPED_FIELDS.get(seen.config.model_type, {}).items():
        if not hasattr(seen.config, name):
            setattr(seen.config, name, value)
    if seen.config.model_type in _SCALES_DECODER_OUTPUTS:
        seen.config.tie_word_embeddings = bool(getattr(seen.config, "scale_decoder_outputs", False))
    return seen


def _host_copy(tensor: torch.Tensor) -> torch.Tensor:
    copied = tensor.detach().to("cpu", copy=True)
    return torch.nn.Parameter(copied, tensor.requires_grad) if isinstance(tensor, torch.nn.Parameter) else copied


def end_token_missing(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> str | None:
    """Why CTranslate2 cannot end this model's outputs (None: it can): neither the tokenizer nor the model's
    generation config names an end-of-sequence token in the vocabulary."""
    if tokenizer.eos_token is not None or _token_of(tokenizer, _end_id(model)) is not None:
        return None
    return ("neither its tokenizer nor its generation config names an end-of-sequence token in the vocabulary, "
            "which CTranslate2 stops at")


def _tokenizer_as_converter_sees_it(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase
                                    ) -> PreTrainedTokenizerBase | _SpecialTokens:
    """``tokenizer``, or a copy with the special tokens the converter writes as strings (see the module docstring):
    eos from the id ``generate`` stops at, bos from the model's start id (else the end token), unk empty (as
    CTranslate2's own converters write a missing one: every token passed is in the vocabulary)."""
    if all(getattr(tokenizer, name) is not None for name in ("bos_token", "eos_token", "unk_token")):
        return tokenizer
    eos = tokenizer.eos_token or _token_of(tokenizer, _end_id(model))
    if eos is None:
        raise CannotConvert(f"this {model.config.model_type!r} model cannot be converted: "
                            f"{end_token_missing(model, tokenizer)}")
    bos = tokenizer.bos_token or _token_of(tokenizer, _first_id(model, "bos_token_id")) or eos
    return _SpecialTokens(tokenizer, bos, eos, tokenizer.unk_token if tokenizer.unk_token is not None else "")


class _SpecialTokens:
    """A tokenizer seen through other bos/eos/unk token strings; everything else is the tokenizer's."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, bos: str, eos: str, unk: str):
        self._tokenizer, self.bos_token, self.eos_token, self.unk_token = tokenizer, bos, eos, unk

    def __getattr__(self, name: str) -> object:
        return getattr(self._tokenizer, name)

    def __len__(self) -> int:
        return len(self._tokenizer)


def _end_id(model: PreTrainedModel) -> int | None:
    return _first_id(model, "eos_token_id")


def _first_id(model: PreTrainedModel, name: str) -> int | None:
    """The generation config's token id ``name`` (the first of a list), else the model config's."""
    for config in (getattr(model, "generation_config", None), model.config):
        value = getattr(config, name, None) if config is not None else None
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
        if isinstance(value, int):
            return value
    return None


def _token_of(tokenizer: PreTrainedTokenizerBase, token_id: int | None) -> str | None:
    """The token string of ``token_id`` (None: no id, or one outside the vocabulary)."""
    if token_id is None or not 0 <= token_id < len(tokenizer):
        return None
    token = tokenizer.convert_ids_to_tokens(token_id)
    return token if isinstance(token, str) else None


def _converter_class() -> type[TransformersConverter]:
    from ctranslate2.converters import TransformersConverter

    class InMemoryConverter(TransformersConverter):
        """TransformersConverter fed with a model and tokenizer already in memory."""

        def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | _SpecialTokens,
                     config_dir: str):
            super().__init__(config_dir)
            self._model, self._tokenizer = model, tokenizer

        def load_model(self, model_class: type, model_name_or_path: str, **kwargs: object) -> PreTrainedModel:
            return self._model

        def load_tokenizer(self, tokenizer_class: type, model_name_or_path: str, **kwargs: object
                           ) -> PreTrainedTokenizerBase | _SpecialTokens:
            return self._tokenizer

    return InMemoryConverter


def _InMemoryConverter(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | _SpecialTokens,
                       config_dir: str) -> TransformersConverter:  # noqa: N802 - a lazy class
    return _converter_class()(model, tokenizer, config_dir)
