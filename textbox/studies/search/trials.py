"""What one trial runs: the search's run keys, its point (typed as the keys want), its own directory, no test."""
from __future__ import annotations

from pathlib import Path
from textbox.config.schema import SCHEMA


def trial_overrides(run_keys: dict[str, object], params: dict[str, object], directory: Path,
                    name: str) -> dict[str, object]:
    """A trial's keys: the search's run keys, its point, its own directory, and no test run."""
    return {**run_keys, **fit_key_types(params), "saved_dir": str(directory), "filename": name, "do_test": False}


def fit_key_types(params: dict[str, object]) -> dict[str, object]:
    """quniform and friends give floats such as 32.0; a key typed int gets 32."""
    fitted = dict(params)
    for label, value in params.items():
        key = SCHEMA.get(label)
        if (key and isinstance(value, float) and value.is_integer() and key.type_error(value)
                and not key.type_error(int(value))):
            fitted[label] = int(value)
    return fitted
