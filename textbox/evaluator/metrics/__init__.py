"""Metric suite: names and figures (cheap, for config validation) and computation (imports scorers lazily)."""
from textbox.evaluator.metrics.registry import (MetricReport, compute_metrics, figure_goal, known_metrics,
                                                metric_outputs, metric_problems, option_problems)

__all__ = ["MetricReport", "compute_metrics", "figure_goal", "known_metrics", "metric_outputs", "metric_problems",
           "option_problems"]
