"""Metric suite: names and figures (cheap, for config validation) and computation (imports scorers lazily)."""
from textbox.evaluator.metrics.registry import (MetricReport, clip_interval, compute_metrics, figure_bounds,
                                                figure_goal, known_metrics, metric_outputs, metric_problems,
                                                option_problems)

__all__ = ["MetricReport", "clip_interval", "compute_metrics", "figure_bounds", "figure_goal", "known_metrics",
           "metric_outputs", "metric_problems", "option_problems"]
