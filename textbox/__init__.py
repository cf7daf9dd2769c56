"""TextBox-style text generation framework: config-driven training, evaluation and search.

The Python API (docs/extending.md): ``textbox.run({...})`` (textbox.api.run) runs as run_textbox.py does and returns
the results; ``textbox.register_metric`` (textbox.evaluator.metrics.registry) adds a metric from a --user_dir module,
which receives a ``textbox.MetricInputs`` and may return a ``textbox.MetricResult``; ``textbox.register_loss``
(textbox.model.losses) a training loss; ``textbox.register_model`` (textbox.model.user_models) a model family, whose
builder returns a ``textbox.BuiltModel``. Each is imported from its module on first use: ``import textbox`` (which
every subpackage's import runs first) and --help stay light, and this package imports none of its layers.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
__all__ = ["BuiltModel", "MetricInputs", "MetricResult", "register_loss", "register_metric", "register_model", "run"]

_HOMES = {"run": "textbox.api", "register_metric": "textbox.evaluator.metrics.registry",
          "register_loss": "textbox.model.losses", "register_model": "textbox.model.user_models",
          "BuiltModel": "textbox.model.built_model",
          "MetricInputs": "textbox.evaluator.metrics.base", "MetricResult": "textbox.evaluator.metrics.base"}


def __getattr__(name: str) -> Any:
    """``textbox.run`` and the rest of the API, from the module that defines it (its signature and types are
    that module's)."""
    if name not in _HOMES:
        raise AttributeError(f"module 'textbox' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
