"""Per-example statistics of one corpus figure: the figure of any subset or bootstrap resample of the test set
follows from them without scoring text again (the method of sacrebleu's own significance tests).

Two kinds of figure decompose this way: sacrebleu's (bleu, chrf, chrf++, ter: sums of n-gram matches or edits
over examples) and those defined as a mean of per-example figures (rouge-*, meteor, em, f1). Corpus-level
diversity figures (distinct, self_bleu) do not, and bert_score would reload its model for every example.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from textbox.config.errors import TextBoxUserError
from textbox.evaluator.metrics import compute_metrics, figure_goal, metric_outputs
from textbox.evaluator.metrics.sacrebleu_metrics import reference_streams, scorer
from textbox.utils.suggest import suggest

SACREBLEU_FIGURES = ("bleu", "chrf", "chrf++", "ter")
MEAN_OF_EXAMPLES_METRICS = ("rouge", "meteor", "em", "f1")


@dataclass(frozen=True)
class ExampleStatistics:
    """``rows[i]`` holds example i's statistics; the corpus figure depends only on their column sums."""

    figure: str
    higher_is_better: bool
    rows: np.ndarray
    from_sums: Callable[[np.ndarray], float]
    sentence_scores: np.ndarray  # each example's figure on its own: which examples two runs disagree on
    method: str  # how the corpus and sentence figures are computed, for the report

    def score(self, weights: np.ndarray | None = None) -> float:
        """The corpus figure counting example i ``weights[i]`` times (default: each once).

        A subset is a 0/1 weighting, a bootstrap resample weights each example by how often it was drawn.
        """
        return self.from_sums(self.rows.sum(axis=0) if weights is None else weights @ self.rows)


def supported_figures(options: Mapping[str, object]) -> list[str]:
    return [*SACREBLEU_FIGURES, *(figure for metric in MEAN_OF_EXAMPLES_METRICS
                                  for figure in metric_outputs(metric, options))]


def example_statistics(figure: str, hypotheses: list[str], references: list[list[str]],
                       options: Mapping[str, object]) -> ExampleStatistics:
    """Statistics of ``figure`` for every example, under the metric options of ``options`` (a run's Config)."""
    name = figure.lower()
    supported = supported_figures(options)
    if name not in supported:
        raise TextBoxUserError(f"--metric={figure} cannot be analysed per example{suggest(name, supported)}; "
                               f"choose one of {', '.join(supported)}")
    higher_is_better = figure_goal(name, options) == "max"
    if name == "bleu" and options.get("bleu_type", "sacrebleu") != "sacrebleu":
        raise TextBoxUserError(f"--metric=bleu: these runs score bleu with bleu_type={options['bleu_type']!r}, and "
                               f"the per-example analysis decomposes sacrebleu's corpus BLEU only: analyse another "
                               f"figure, or rescore the outputs with textbox-evaluate --bleu_type=sacrebleu")
    if name in SACREBLEU_FIGURES:
        return _sacrebleu_statistics(name, hypotheses, references, options, higher_is_better)
    metric = next(metric for metric in MEAN_OF_EXAMPLES_METRICS if name in metric_outputs(metric, options))
    return _mean_statistics(metric, name, hypotheses, references, options, higher_is_better)


def _sacrebleu_statistics(figure: str, hypotheses: list[str], references: list[list[str]],
                          options: Mapping[str, object], higher_is_better: bool) -> ExampleStatistics:
    corpus_metric = scorer(figure, options)
    # Private sacrebleu API, but the one its significance module uses: one row of match counts per example.
    rows = np.array(corpus_metric._extract_corpus_statistics(hypotheses, reference_streams(references)),
                    dtype=np.float64)
    sentence_metric = scorer(figure, options, sentence_level=True)
    sentence_scores = np.array([sentence_metric._compute_score_from_stats(row).score for row in rows])
    method = (f"sacrebleu {corpus_metric.get_signature().format()}; per example: sacrebleu's sentence score"
              + (" (sentence_bleu: effective order)" if figure == "bleu" else ""))
    return ExampleStatistics(figure, higher_is_better, rows,
                             lambda sums: corpus_metric._compute_score_from_stats(sums).score, sentence_scores, method)


def _mean_statistics(metric: str, figure: str, hypotheses: list[str], references: list[list[str]],
                     options: Mapping[str, object], higher_is_better: bool) -> ExampleStatistics:
    """Rows (example's figure, 1): the sums give the total and the number of examples, so the mean."""
    per_example = np.array([compute_metrics([metric], [hypothesis], [example_references], options=options)
                            .scores[figure] for hypothesis, example_references in zip(hypotheses, references)])
    rows = np.column_stack([per_example, np.ones(len(per_example))])
    method = f"mean over examples of each example's {figure} (textbox metric {metric!r})"
    return ExampleStatistics(figure, higher_is_better, rows, lambda sums: float(sums[0] / sums[1]), per_example,
                             method)
