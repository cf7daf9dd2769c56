"""Compiled decoding: a static key/value cache and a torch.compile'd decoder forward (``--decode_compile=True``).

transformers' ``generate`` compiles the forward by itself when the cache is static, but only on accelerators;
the CompileConfig here allows it on every device. The cache then has a fixed size (batch x (prompt + new
tokens)), so every new batch shape costs a compilation (~35-45 s for the default model on this project's CPU)
and later batches of a shape seen before run the compiled code. It pays on large test sets with few shapes
(equal-length batches); on small ones the compile time dominates. Outputs are those of eager decoding (tested).

Cross-attention sharing (textbox.decoding.cross_attention) passes its own cache and is not combined with this.
"""
from __future__ import annotations

from typing import Any


def with_compiled_decoding(settings: dict[str, Any]) -> dict[str, Any]:
    """``generate`` settings that use a static cache and compile the forward, on CPU as on GPU."""
    from transformers.generation import CompileConfig

    compile_config = CompileConfig(fullgraph=False)
    compile_config._compile_all_devices = True  # generate only auto-compiles on accelerators otherwise
    return {**settings, "cache_implementation": "static", "compile_config": compile_config}


def is_compiled_decoding(settings: dict[str, Any]) -> bool:
    return settings.get("cache_implementation") == "static"


def compilation_seconds() -> float:
    """Wall time torch.compile has spent in this process so far (TorchDynamo's own timer)."""
    from torch._dynamo.utils import calculate_time_spent

    return float(calculate_time_spent().get("total_wall_time", 0.0))
