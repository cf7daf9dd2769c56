"""Analyse one run's test generations, or compare two runs: ``python -m textbox.analysis run_dir_a [run_dir_b]
[--metric=bleu] [--buckets=4] [--samples=1000] [--seed=0] [--examples=10]``.

Writes analysis.md and PNG plots into run_dir_b (run_dir_a when alone) and prints a summary. User errors
print one message and exit 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from textbox.config.errors import TextBoxUserError


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m textbox.analysis",
        description="Metrics by source-length bucket, length distributions, the examples where two runs differ "
                    "most and a paired bootstrap test (Koehn 2004) of whether run b beats run a. Writes "
                    "analysis.md and PNG plots into run_dir_b (run_dir_a when alone).")
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="run_dir",
                        help="run directories (saved/<run>) holding config.yaml and generation.txt: a, then "
                             "optionally b")
    parser.add_argument("--metric", default="bleu",
                        help="figure to analyse: bleu, chrf, chrf++, ter, rouge-1..N, rouge-l, rouge-lsum, meteor, "
                             "em or f1, computed with run a's metric options (default: %(default)s)")
    parser.add_argument("--buckets", type=_positive, default=4,
                        help="number of source-length quantile buckets (default: %(default)s)")
    parser.add_argument("--samples", type=_positive, default=1000,
                        help="bootstrap resamples of the test set (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling (default: %(default)s)")
    parser.add_argument("--examples", type=_non_negative, default=10,
                        help="examples shown in the report (default: %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with code 2 and a usage message on malformed arguments
    if len(args.run_dirs) > 2:
        parser.error(f"give one or two run directories, got {len(args.run_dirs)}")
    from textbox.analysis.compute import analyze_runs
    from textbox.analysis.report import summary, write_report

    try:
        analysis = analyze_runs(args.run_dirs, args.metric, args.buckets, args.samples, args.seed)
        path = write_report(analysis, args.examples)
    except TextBoxUserError as error:
        print(f"textbox.analysis: {error}", file=sys.stderr)
        return error.exit_code
    print(summary(analysis))
    print(f"report: {path}")
    return 0

