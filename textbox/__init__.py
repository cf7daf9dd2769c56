"""TextBox-style text generation framework: config-driven training, evaluation and search.

The Python API (docs/extending.md): ``textbox.run({...})`` runs as run_textbox.py does and returns the results;
``textbox.register_metric`` adds a metric from a --user_dir module. They are imported on first use, so that
``import textbox`` (and --help) stays light.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["MetricInputs", "MetricResult", "register_metric", "run"]

if TYPE_CHECKING:
    from textbox.api import run
    from textbox.evaluator.metrics.base import MetricInputs, MetricResult
    from textbox.evaluator.metrics.registry import register_metric

_LAZY = {"run": "textbox.api", "register_metric": "textbox.evaluator.metrics.registry",
         "MetricInputs": "textbox.evaluator.metrics.base", "MetricResult": "textbox.evaluator.metrics.base"}


def __getattr__(name: str) -> object:
    """``textbox.run`` and the rest of the API: the module that defines it, imported when first asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module 'textbox' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_LAZY[name]), name)
