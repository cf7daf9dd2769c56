"""Quantised base weights (``--quantization=int8|nf4|fp4``): a pretrained checkpoint loaded through transformers'
``BitsAndBytesConfig`` (bitsandbytes' ``Linear8bitLt`` / ``Linear4bit`` layers), frozen, with an efficient method
trained on top (QLoRA: NF4 + LoRA).

What is decided where:
- which combinations make sense (a method on top, a pretrained checkpoint, no FSDP/DeepSpeed, 4-bit settings only
  with 4-bit) is checked with the other model keys before anything is built (``problems``, called by
  textbox.model.checks; textbox.config.family_keys refuses it for the families it cannot apply to);
- the builders pass ``load_settings`` to ``from_pretrained`` (textbox.model.loading), which prepares a quantised
  model for training (peft's ``prepare_model_for_kbit_training``: every base weight frozen);
- checkpoint_best holds the adapter and ``QUANTIZATION_RECORD``, the settings that quantise its base again
  (textbox.model.adapter_files writes it); a checkpoint that holds one is reloaded quantised the same way
  unless --quantization is given (``requested``).

Nothing heavy is imported at module level: config validation calls ``problems``.
"""
from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from textbox.config.errors import TextBoxUserError
from textbox.config.launcher import uses_deepspeed, uses_fsdp

if TYPE_CHECKING:
    import torch
    from transformers import BitsAndBytesConfig

    from textbox.config import Config

METHODS = ("none", "int8", "nf4", "fp4")
FOUR_BIT = ("nf4", "fp4")
COMPUTE_DTYPES = ("auto", "float32", "bfloat16", "float16")
QUANTIZATION_RECORD = "base_quantization.json"  # in checkpoint_best, beside the adapter


@dataclass(frozen=True)
class Quantization:
    """How the base weights are quantised (the record checkpoint_best keeps)."""

    method: str  # int8, nf4, fp4
    double_quantization: bool = False  # 4-bit: the quantisation constants quantised too
    compute_dtype: str = "float32"  # 4-bit: the dtype dequantised weights are multiplied in

    def bitsandbytes_config(self) -> BitsAndBytesConfig:
        import torch
        from transformers import BitsAndBytesConfig

        if self.method == "int8":
            return BitsAndBytesConfig(load_in_8bit=True)
        return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=self.method,
                                  bnb_4bit_use_double_quant=self.double_quantization,
                                  bnb_4bit_compute_dtype=getattr(torch, self.compute_dtype))

    def describe(self) -> str:
        if self.method == "int8":
            return "int8 (bitsandbytes LLM.int8)"
        return (f"{self.method} (bitsandbytes 4-bit{', double quantisation' if self.double_quantization else ''}, "
                f"computing in {self.compute_dtype})")

    def save(self, directory: Path) -> None:
        (Path(directory) / QUANTIZATION_RECORD).write_text(json.dumps(asdict(self), indent=2) + "\n",
                                                           encoding="utf-8")


def recorded(path: str | Path | None) -> Quantization | None:
    """The quantisation a checkpoint records for its base (None when it has no record)."""
    if not path:
        return None
    record = Path(path).expanduser() / QUANTIZATION_RECORD
    if not record.is_file():
        return None

    try:
        return Quantization(**json.loads(record.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as error:
        raise TextBoxUserError(f"--model_path={path}: {record} cannot be read ({error}); it says how the base "
                               f"model was quantised: restore it, or give --quantization yourself") from error


def requested(values: Mapping[str, Any], given: Callable[[str], bool]) -> Quantization | None:
    """The run's quantisation: the keys when --quantization is given (``given(key)``: set by the user, a yaml or
    the run's own config.yaml), else what the checkpoint at --model_path records (None: full precision)."""
    if not given("quantization"):
        return recorded(values["model_path"])
    method = values["quantization"]
    if method == "none":
        return None
    dtype = values["quantization_compute_dtype"]
    if dtype == "auto":
        dtype = "bfloat16" if values["mixed_precision"] == "bf16" else "float32"
    return Quantization(method, bool(values["double_quantization"]) and method in FOUR_BIT,
                        dtype if method in FOUR_BIT else "float32")


def of_config(config: Config) -> Quantization | None:
    """``requested`` for a Config."""
    return requested(dict(config.items()), lambda key: config.source_of(key) != "default")


def load_settings(quantization: Quantization | None) -> dict[str, Any]:
    """Keyword arguments of ``from_pretrained`` that load the weights quantised (none in full precision)."""
    if quantization is None:
        return {}
    return {"quantization_config": quantization.bitsandbytes_config(), "device_map": {"": _device()}}


def is_quantized(model: object) -> bool:
    """Whether ``model`` (a transformers model, or a PeftModel's base) holds bitsandbytes weights."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return bool(getattr(inner, "is_quantized", False))


def prepare_for_training(model: Any) -> Any:
    """peft's preparation of a quantised model: every base weight frozen, half-precision ones (norms, embeddings
    of a half-precision checkpoint) in float32. Gradient checkpointing is --gradient_checkpointing's business.

    bitsandbytes repacks a 4-bit layer's weights, for good, on its first forward in eval mode on a CPU with
    AVX512-BF16 (for a kernel it fetches from the hub, absent offline): training after a validation would then
    run on other weights' layout and numerics than the same run resumed from checkpoint_last (measured: losses
    5e-6 apart after the first validation), and checkpoint_last would hold the repacked weights. Every layer
    keeps the one layout it was loaded in."""
    from peft import prepare_model_for_kbit_training

    for module in model.modules():
        if hasattr(module, "support_avx512bf16_for_cpu"):
            module.support_avx512bf16_for_cpu = False
    return prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)


def _device() -> torch.device | str:
    """Where this process's quantised weights live: its CUDA device, or the CPU."""

    import torch

    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return "cpu"


def problems(values: Mapping[str, Any], given: Callable[[str], bool], where: Callable[[str], str],
             efficient_checkpoint: bool) -> list[str]:
    """What cannot combine with the quantisation keys (before anything is built). ``efficient_checkpoint``: the
    --model_path is an adapter (or BitFit) checkpoint, whose method trains on."""
    method = values["quantization"]
    found = []
    if method == "none" or not given("quantization"):
        for key in ("double_quantization", "quantization_compute_dtype"):
            if given(key) and values[key] not in (False, "auto"):
                found.append(f"{where(key)} is a setting of 4-bit quantisation: add --quantization=nf4 (or fp4), "
                             f"or drop it")
        return found
    if method == "int8":
        for key in ("double_quantization", "quantization_compute_dtype"):
            if values[key] not in (False, "auto"):
                found.append(f"{where(key)} is a setting of 4-bit quantisation (nf4, fp4); bitsandbytes' int8 "
                             f"layers have neither: drop it, or use --quantization=nf4")
    if importlib.util.find_spec("bitsandbytes") is None:
        found.append(f"{where('quantization')}={method} needs the bitsandbytes package: pip install bitsandbytes "
                     f"(or pip install -e \".[quantization]\")")
    if values["from_scratch"]:  # without --model_path: textbox.config.family_keys refuses it where it does not apply
        found.append(f"{where('quantization')}={method} quantises the weights of a pretrained checkpoint; a model "
                     f"built from scratch has none: drop --from_scratch=True or --quantization")
    methods = list(values["efficient_methods"])
    if values["do_train"] and (values["efficient_unfreeze_model"] or not (methods or efficient_checkpoint)):
        found.append(f"{where('quantization')}={method}: quantised weights cannot be fine-tuned themselves (they "
                     f"are frozen integers); train an efficient method on top, e.g. --efficient_methods=['lora'] "
                     f"(QLoRA){' without --efficient_unfreeze_model' if values['efficient_unfreeze_model'] else ''}"
                     f", or drop --quantization")

    for asked, name in ((uses_fsdp(os.environ), "FSDP"), (uses_deepspeed(os.environ), "DeepSpeed")):
        if asked:
            found.append(f"{where('quantization')}={method} with {name}: sharding bitsandbytes weights over "
                         f"processes is not supported here; launch without {name} (plain DDP) or drop "
                         f"--quantization")
    return found
