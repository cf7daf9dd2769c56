"""Strict JSON for result files: NaN and inf (a diverged model's loss or perplexity) are not JSON, and
json.dumps would write the bare words NaN/Infinity that strict readers (jq, JavaScript, pandas' default) reject.
They are written as null; the log and the metric details say what the value was."""
from __future__ import annotations

import math
from typing import Any


def finite_or_null(value: Any) -> Any:
    """The same nested dicts/lists with every NaN/inf float replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(item) for item in value]
    return value
