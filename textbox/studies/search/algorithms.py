"""Search algorithms by name: the exhaustive grid plus hyperopt's own suggest functions.

Names are plain strings here so that option checking imports nothing; hyperopt loads on first use.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

from textbox.config.errors import TextBoxUserError

ALGORITHMS: dict[str, str] = {
    "exhaustive": "textbox.studies.search.grid:suggest",
    "random": "hyperopt.rand:suggest",
    "tpe": "hyperopt.tpe:suggest",
    "bayes": "hyperopt.tpe:suggest",  # TextBox's name for TPE
    "anneal": "hyperopt.anneal:suggest",
    "atpe": "hyperopt.atpe:suggest",
}
ATPE_NEEDS = ("lightgbm", "sklearn")

Suggest = Callable[[list[int], Any, Any, int], list[dict[str, Any]]]


def get_algorithm(name: str) -> Suggest:
    """The suggest function of ``--algo=name``; atpe's optional dependencies are checked before any trial."""
    if name == "atpe":
        missing = [module for module in ATPE_NEEDS if importlib.util.find_spec(module) is None]
        if missing:
            raise TextBoxUserError(f"--algo=atpe needs {' and '.join(missing)} (pip install lightgbm scikit-learn); "
                                   f"or use --algo=tpe")
    module_name, function_name = ALGORITHMS[name].split(":")
    return getattr(importlib.import_module(module_name), function_name)
