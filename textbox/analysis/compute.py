"""Everything the analysis report shows, computed from the systems and their test set (no files written here):
per figure, each system's score, its 95% interval and its tests against the baseline; for the first figure, the
detail of the single-output systems (source-length buckets, lengths, the examples they disagree on most)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from textbox.analysis.buckets import length_buckets, word_counts
from textbox.analysis.example_stats import ExampleStatistics, example_statistics
from textbox.analysis.significance import (Significance, bootstrap_indices, bootstrap_interval, paired_test,
                                           resampled_scores, seed_study_test)
from textbox.analysis.systems import SEED_STUDY, System, TestSet
from textbox.config.schema import SCHEMA
from textbox.evaluator.metrics import figure_bounds
from textbox.studies.common.spread import spread

METRIC_OPTIONS = [name for name, key in SCHEMA.items() if key.group == "metrics"]
BOOTSTRAP_INTERVAL = "bootstrap percentile (sacrebleu's order statistics) over the paired resamples"
SEED_INTERVAL = "95% t-interval of the mean over seeds, cut to the figure's range"


@dataclass(frozen=True)
class SystemScore:
    """One system on one figure: a seed study's score is its mean over seeds."""

    system: str
    score: float
    interval: tuple[float, float] | None  # None: a seed study of one seed
    interval_method: str
    seed_scores: list[float] | None
    tests: list[Significance]  # against the baseline; none for the baseline itself


@dataclass(frozen=True)
class FigureComparison:
    figure: str
    higher_is_better: bool
    method: str  # how the figure and its per-example statistics are computed
    scores: list[SystemScore]  # in the order of the systems, the baseline first


@dataclass(frozen=True)
class Bucket:
    """Examples whose source has ``shortest``..``longest`` words; per-system lists follow Detail.labels."""

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
class Detail:
    """The first figure seen up close, for the systems with one output each (runs and files)."""

    figure: str
    labels: list[str]
    outputs: list[list[str]]
    statistics: list[ExampleStatistics]
    buckets: list[Bucket]  # empty when the sources are unknown (references from --ref)
    hypothesis_words: list[np.ndarray]
    reference_words: np.ndarray  # per example, the mean over its references
    differences: dict[str, np.ndarray]  # label -> its figure minus the first label's, in each bootstrap resample

    def notable_examples(self, count: int) -> list[int]:
        """Indices where the systems' sentence scores differ most; for one system, its worst-scoring examples."""
        scores = np.array([statistics.sentence_scores for statistics in self.statistics])
        if len(scores) == 1:
            worst_first = scores[0] if self.statistics[0].higher_is_better else -scores[0]
            return [int(index) for index in np.argsort(worst_first, kind="stable")[:count]]
        gaps = scores.max(axis=0) - scores.min(axis=0)
        return [int(index) for index in np.argsort(-gaps, kind="stable")[:count] if gaps[index] > 0]


@dataclass(frozen=True)
class Analysis:
    systems: list[System]
    test_set: TestSet
    figures: list[FigureComparison]
    detail: Detail | None  # None when no system has a single output
    tests: list[str]  # "bs", "ar"
    samples: dict[str, int]  # per test (bs, ar), its resamples or trials; the bootstrap's also for the intervals
    seed: int
    option_differences: list[str]  # runs whose metric options differ from those every system is scored with


def analyze(systems: Sequence[System], test_set: TestSet, figures: Sequence[str], tests: Sequence[str],
            samples: dict[str, int], seed: int, buckets: int) -> Analysis:
    """``samples`` holds both tests' counts: the bootstrap's also sets the resamples of the intervals."""
    statistics = {figure: [[example_statistics(figure, outputs, test_set.references, test_set.options)
                            for outputs in system.outputs] for system in systems] for figure in figures}
    comparisons = [_compare(statistics[figure], systems, test_set, tests, samples, seed) for figure in figures]
    detail = _detail(statistics[figures[0]], systems, test_set, samples, seed, buckets)
    return Analysis(list(systems), test_set, comparisons, detail, list(tests), samples, seed,
                    _option_differences(systems, test_set))


def _compare(statistics: list[list[ExampleStatistics]], systems: Sequence[System], test_set: TestSet,
             tests: Sequence[str], samples: dict[str, int], seed: int) -> FigureComparison:
    """``statistics[s][k]``: system s's k-th output (a seed study's k-th seed) on the figure."""
    references, options = test_set.references, test_set.options
    figure = statistics[0][0].figure
    indices = bootstrap_indices(len(references), samples["bs"], seed)
    bounds = figure_bounds(figure, options)
    baseline, baseline_statistics = systems[0], statistics[0]
    scores = []
    for position, (system, system_statistics) in enumerate(zip(systems, statistics)):
        if system.kind == SEED_STUDY:
            seed_scores = [run.score() for run in system_statistics]
            summary = spread(seed_scores, bounds)
            interval = (None if summary.ci95_low is None or summary.ci95_high is None
                        else (summary.ci95_low, summary.ci95_high))
            score = SystemScore(system.name, summary.mean, interval, SEED_INTERVAL, seed_scores, [])
        else:
            score = SystemScore(system.name, system_statistics[0].score(),
                                bootstrap_interval(resampled_scores(system_statistics[0], indices)),
                                BOOTSTRAP_INTERVAL, None, [])
        if position > 0:
            score.tests.extend(_tests(baseline, system, baseline_statistics, system_statistics, references, tests,
                                      samples, seed, options))
        scores.append(score)
    first = statistics[0][0]
    return FigureComparison(first.figure, first.higher_is_better, first.method, scores)


def _tests(baseline: System, system: System, baseline_statistics: list[ExampleStatistics],
           system_statistics: list[ExampleStatistics], references: list[list[str]], tests: Sequence[str],
           samples: dict[str, int], seed: int, options: Mapping[str, Any]) -> list[Significance]:
    if SEED_STUDY in (baseline.kind, system.kind):
        return [seed_study_test([run.score() for run in baseline_statistics],
                                [run.score() for run in system_statistics],
                                baseline.kind == SEED_STUDY, system.kind == SEED_STUDY)]
    texts = (baseline.outputs[0], system.outputs[0], references)
    return [paired_test(test, baseline_statistics[0], system_statistics[0], samples[test], seed, texts, options)
            for test in tests]


def _detail(all_statistics: list[list[ExampleStatistics]], systems: Sequence[System], test_set: TestSet,
            samples: dict[str, int], seed: int, buckets: int) -> Detail | None:
    singles = [system for system in systems if system.kind != SEED_STUDY]
    if not singles:
        return None
    references = test_set.references
    statistics = [system_statistics[0] for system, system_statistics in zip(systems, all_statistics)
                  if system.kind != SEED_STUDY]
    hypothesis_words = [word_counts(system.outputs[0]) for system in singles]
    reference_words = np.array([word_counts(example).mean() for example in references])
    indices = bootstrap_indices(len(references), samples["bs"], seed)
    resampled = [resampled_scores(system_statistics, indices) for system_statistics in statistics]
    differences = {system.name: scores - resampled[0] for system, scores in zip(singles[1:], resampled[1:])}
    bucket_list = []
    if test_set.sources is not None:
        source_words = word_counts(test_set.sources)
        bucket_list = [_bucket(members, source_words, statistics, hypothesis_words, reference_words)
                       for members in length_buckets(source_words, buckets)]
    return Detail(statistics[0].figure, [system.name for system in singles], [system.outputs[0] for system in singles],
                  statistics, bucket_list, hypothesis_words, reference_words, differences)


def _option_differences(systems: Sequence[System], test_set: TestSet) -> list[str]:
    used = test_set.options
    return [f"{run.directory}: {name}={run.config[name]!r} (scored with {used[name]!r})"
            for system in systems for run in system.runs for name in METRIC_OPTIONS if run.config[name] != used[name]]


def _bucket(indices: np.ndarray, source_words: np.ndarray, statistics: list[ExampleStatistics],
            hypothesis_words: list[np.ndarray], reference_words: np.ndarray) -> Bucket:
    members = np.zeros(len(source_words))
    members[indices] = 1
    return Bucket(int(source_words[indices].min()), int(source_words[indices].max()), len(indices),
                  [system_statistics.score(members) for system_statistics in statistics],
                  [float(words[indices].mean()) for words in hypothesis_words], float(reference_words[indices].mean()))
