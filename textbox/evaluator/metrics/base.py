"""What every metric function receives and returns (standard library only: the registry imports it)."""
from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import textbox


@dataclass(frozen=True)
class MetricInputs:
    """One corpus to score; ``references[i]`` holds every reference of ``hypotheses[i]``."""

    hypotheses: list[str]
    references: list[list[str]]
    sources: list[str] | None = None
    loss: float | None = None


@dataclass(frozen=True)
class MetricResult:
    """A metric's figures and what is needed to reproduce them (package, version, signature, options)."""

    scores: dict[str, float]
    details: dict[str, Any]


def package_details(package: str, **settings: Any) -> dict[str, Any]:
    """Details naming the installed package that computed a figure, so results.json says which version."""
    return {"package": package, "version": version(package), **settings}


def textbox_details(**settings: Any) -> dict[str, Any]:
    """Details of a metric implemented here rather than by a scoring package."""
    return {"package": "textbox", "version": textbox.__version__, **settings}


def ngram_orders(prefix: str, max_order: int) -> list[str]:
    """Figure names ``prefix-1`` .. ``prefix-max_order``."""
    return [f"{prefix}-{order}" for order in range(1, max_order + 1)]
