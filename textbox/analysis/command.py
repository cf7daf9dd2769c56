"""Compare N systems against a baseline with two-sided paired significance tests:
``python -m textbox.analysis BASELINE SYSTEM [SYSTEM ...] [--metrics=bleu,chrf] [--tests=bs,ar] [--samples=1000]
[--ar_samples=10000] [--seed=12345] [--baseline=NAME] [--ref=refs.txt | --dataset=<name> ...] [--output_dir=DIR]``.

Each system is a run directory, a seed-study directory or an output file. Writes analysis.md, analysis.json and
PNG plots into an analysis directory of its own (--output_dir, default saved/analysis-<timestamp>), never into a
run's. User errors print one ``error:`` line and exit 2.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from textbox.analysis.systems import load_systems
from textbox.config.errors import ConfigError, TextBoxUserError

if TYPE_CHECKING:
    from textbox.analysis.systems import System

TESTS = ("bs", "ar")


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


def _names(text: str) -> list[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one name")
    return list(dict.fromkeys(names))


def _tests(text: str) -> list[str]:
    names = _names(text)
    unknown = [name for name in names if name not in TESTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown test {unknown[0]!r}: choose bs (paired bootstrap), ar (approximate "
                                         f"randomisation) or bs,ar")
    return names


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m textbox.analysis", allow_abbrev=False,
        description="Scores every system on one test set and tests each against the baseline (the first, or "
                    "--baseline) with two-sided paired tests: paired bootstrap resampling and approximate "
                    "randomisation (sacrebleu's own for bleu, chrf and ter); seed studies by t-tests over their "
                    "seeds. Writes analysis.md, analysis.json and plots into --output_dir. Any other --key=value "
                    "is a run option naming the references' dataset and metric options (--dataset, --data_path, "
                    "--lower_evaluation, ...), as run_analysis.py takes them.")
    parser.add_argument("systems", nargs="+", metavar="system",
                        help="run directories (saved/<run>), seed-study directories (saved/multi_seed-<timestamp>) "
                             "or output files (one line per test example); the first is the baseline")
    parser.add_argument("--metrics", "--metric", type=_names, default=["bleu", "chrf"],
                        help="comma-separated figures: bleu, chrf, chrf++, ter, rouge-1..N, rouge-l, rouge-lsum, "
                             "meteor, em, f1 (default: bleu,chrf)")
    parser.add_argument("--tests", type=_tests, default=list(TESTS),
                        help="paired tests of single-output systems: bs, ar or bs,ar (default: bs,ar)")
    parser.add_argument("--samples", type=_positive, default=1000,
                        help="bootstrap resamples, of the test and of the intervals (default: %(default)s, "
                             "sacrebleu's --paired-bs-n)")
    parser.add_argument("--ar_samples", type=_positive, default=10000,
                        help="approximate randomisation trials (default: %(default)s, sacrebleu's --paired-ar-n)")
    parser.add_argument("--seed", type=int, default=12345,
                        help="seed of the resampling (default: %(default)s, sacrebleu's SACREBLEU_SEED default)")
    parser.add_argument("--baseline", help="the system the others are compared with, by name or path "
                                           "(default: the first)")
    parser.add_argument("--ref", help="reference file, one line per example (a Python list of strings gives "
                                      "several); default: the --dataset's test split, else the first run's")
    parser.add_argument("--output_dir", type=Path,
                        help="directory of the analysis (default: saved/analysis-<timestamp>)")
    parser.add_argument("--buckets", type=_positive, default=4,
                        help="number of source-length quantile buckets (default: %(default)s)")
    parser.add_argument("--examples", type=_non_negative, default=10,
                        help="examples shown in the report (default: %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, run_options = parser.parse_known_args(argv)  # exits with code 2 and a usage message on malformed ones
    try:
        return _run(args, run_options)
    except TextBoxUserError as error:
        message = "; ".join(error.problems) if isinstance(error, ConfigError) else str(error)
        print(f"textbox.analysis: error: {message}", file=sys.stderr)
        return error.exit_code


def _run(args: argparse.Namespace, run_options: list[str]) -> int:
    malformed = [option for option in run_options if not option.startswith("--") or "=" not in option]
    if malformed:
        raise TextBoxUserError(f"{malformed[0]}: give run options as --key=value (every other word is a system)")
    from textbox.analysis.compute import analyze
    from textbox.analysis.report import summary, write_report

    systems, test_set = load_systems(args.systems, run_options, args.ref, args.baseline)
    directory = _output_directory(args.output_dir, systems, str(test_set.options.saved_dir))
    analysis = analyze(systems, test_set, args.metrics, args.tests, {"bs": args.samples, "ar": args.ar_samples},
                       args.seed, args.buckets)
    path = write_report(analysis, directory, args.examples)
    print(summary(analysis))
    print(f"report: {path}")
    return 0


def _output_directory(chosen: Path | None, systems: Sequence[System], saved_dir: str) -> Path:
    """The analysis's own directory: never a run's (a run directory is its run's record) nor a study's."""
    if chosen is None:
        base = Path(saved_dir) / f"analysis-{time.strftime('%Y-%b-%d_%H-%M-%S')}"
        chosen, suffix = base, 1
        while chosen.exists():
            suffix += 1
            chosen = base.with_name(f"{base.name}-{suffix}")
        return chosen
    resolved = chosen.resolve()
    for system in systems:
        path = system.path.resolve()
        if path.is_dir() and (resolved == path or path in resolved.parents):
            raise TextBoxUserError(f"--output_dir={chosen} is inside {path}, a system's directory: the analysis "
                                   f"writes into a directory of its own; choose another")
    run = next((directory for directory in (resolved, *resolved.parents) if (directory / "config.yaml").is_file()),
               None)
    if run is not None:
        raise TextBoxUserError(f"--output_dir={chosen} is inside {run}, a run directory (it holds config.yaml); choose "
                               f"another")
    return chosen
