"""What every metric function receives and returns (standard library only: the registry imports it)."""
from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version
from typing import TypedDict

import textbox


class MetricOptions(TypedDict):
    """The settings the metric functions read: the schema's DEFAULTS under the run's values (the registry merges
    them before it calls a metric, so every key is there)."""

    lower_evaluation: bool
    multiref_strategy: str
    bleu_type: str
    bleu_tokenize: str
    bleu_max_ngrams: int
    corpus_bleu: bool
    smoothing_function: int
    rouge_max_ngrams: int
    rouge_use_stemmer: bool
    rouge_sentence_split: str
    meteor_type: str
    corpus_meteor: bool
    distinct_max_ngrams: int
    novelty_max_ngrams: int
    coco_tokenize: str
    bert_score_model_path: str | None
    bert_score_num_layers: int | None


Details = dict[str, object]  # how a figure was computed (package, version, settings), written to results.json


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
    details: Details


def package_details(package: str, **settings: object) -> Details:
    """Details naming the installed package that computed a figure, so results.json says which version."""
    return {"package": package, "version": version(package), **settings}


def textbox_details(**settings: object) -> Details:
    """Details of a metric implemented here rather than by a scoring package."""
    return {"package": "textbox", "version": textbox.__version__, **settings}


def ngram_orders(prefix: str, max_order: int) -> list[str]:
    """Figure names ``prefix-1`` .. ``prefix-max_order``."""
    return [f"{prefix}-{order}" for order in range(1, max_order + 1)]
