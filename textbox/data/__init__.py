"""Data: read splits, build built-in datasets, tokenise with a cache, collate batches.

Exports resolve on first use, so that config validation can import ``textbox.data.builtin`` without
paying for torch or datasets.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Split": "textbox.data.split",
    "read_splits": "textbox.data.readers",
    "tokenize_splits": "textbox.data.tokenize",
    "Seq2SeqCollator": "textbox.data.collate",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'textbox.data' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
