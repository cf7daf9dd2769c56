"""Everything the analysis report shows, computed from one or two run directories (no files written here)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from textbox.analysis.bootstrap import PairedTest, paired_test, percentile_interval, resample_scores
from textbox.analysis.buckets import length_buckets, word_counts
from textbox.analysis.example_stats import ExampleStatistics, example_statistics
from textbox.analysis.runs import RunOutputs, check_same_test_set, load_run
from textbox.config.schema import SCHEMA

METRIC_OPTIONS = [name for name, key in SCHEMA.items() if key.group == "metrics"]


@dataclass(frozen=True)
class Bucket:
    """Examples whose source has ``shortest``..``longest`` words; per-run lists follow the order of the runs."""

    shortest: int
    longest: int
    size: int
    scores: list[float]
    hypothesis_words: list[float]
    reference_words: float

    @property
    def label(self) -> str:
        return str(self.shortest) if self.shortest == self.longest else f"{self.shortest}-{self.longest}"


@dataclass(frozen=True)
class Analysis:
    """Run a (the baseline) and optionally run b, scored with a's metric options on their shared test set."""

    runs: list[RunOutputs]
    statistics: list[ExampleStatistics]
    intervals: list[tuple[float, float]]  # bootstrap 95% interval of each run's figure
    paired: PairedTest | None
    buckets: list[Bucket]
    hypothesis_words: list[np.ndarray]
    reference_words: np.ndarray  # per example, the mean over its references
    option_differences: list[str]  # metric options on which b's config differs from a's
    samples: int
    seed: int

    @property
    def figure(self) -> str:
        return self.statistics[0].figure

    def notable_examples(self, count: int) -> list[int]:
        """Indices where b and a differ most in sentence score; for one run, its worst-scoring examples."""
        if len(self.runs) == 1:
            run = self.statistics[0]
            worst_first = run.sentence_scores if run.higher_is_better else -run.sentence_scores
            return [int(index) for index in np.argsort(worst_first, kind="stable")[:count]]
        gaps = np.abs(self.statistics[1].sentence_scores - self.statistics[0].sentence_scores)
        return [int(index) for index in np.argsort(-gaps, kind="stable")[:count] if gaps[index] > 0]


def analyze_runs(directories: Sequence[Path], figure: str, buckets: int, samples: int, seed: int) -> Analysis:
    runs = [load_run(directory) for directory in directories]
    if len(runs) == 2:
        check_same_test_set(*runs)
    options = runs[0].config
    references = runs[0].test.targets
    statistics = [example_statistics(figure, run.hypotheses, references, options) for run in runs]
    resampled = resample_scores(statistics, samples, seed)
    hypothesis_words = [word_counts(run.hypotheses) for run in runs]
    reference_words = np.array([word_counts(example).mean() for example in references])
    source_words = word_counts(runs[0].test.sources)
    return Analysis(
        runs=runs,
        statistics=statistics,
        intervals=[percentile_interval(resampled[:, column]) for column in range(len(runs))],
        paired=paired_test(*statistics, resampled[:, 0], resampled[:, 1]) if len(runs) == 2 else None,
        buckets=[_bucket(indices, source_words, statistics, hypothesis_words, reference_words)
                 for indices in length_buckets(source_words, buckets)],
        hypothesis_words=hypothesis_words,
        reference_words=reference_words,
        option_differences=_option_differences(*runs) if len(runs) == 2 else [],
        samples=samples,
        seed=seed,
    )


def _option_differences(a: RunOutputs, b: RunOutputs) -> list[str]:
    return [f"{name}: {a.config[name]!r} in a, {b.config[name]!r} in b"
            for name in METRIC_OPTIONS if a.config[name] != b.config[name]]


def _bucket(indices: np.ndarray, source_words: np.ndarray, statistics: list[ExampleStatistics],
            hypothesis_words: list[np.ndarray], reference_words: np.ndarray) -> Bucket:
    members = np.zeros(len(source_words))
    members[indices] = 1
    return Bucket(int(source_words[indices].min()), int(source_words[indices].max()), len(indices),
                  [run_statistics.score(members) for run_statistics in statistics],
                  [float(words[indices].mean()) for words in hypothesis_words], float(reference_words[indices].mean()))
