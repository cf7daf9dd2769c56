"""Score generated text files: ``python -m textbox.evaluator.score_files --hyp=generation.txt --ref=test.tgt
[--src=test.src] --metrics="['bleu','rouge']" [--<metric option>=value ...]`` (console script: textbox-evaluate).

Prints a table and then one JSON line ({"scores": ..., "details": ...}). User errors print one message and exit 2.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable, Sequence

from textbox.config.argv import parse_argv
from textbox.config.errors import ConfigError, DataError, TextBoxUserError
from textbox.config.schema import DEFAULTS, SCHEMA
from textbox.data.lines import parse_references, read_lines
from textbox.evaluator.metrics.registry import MetricReport, compute_metrics, describe_metrics, metric_problems
from textbox.utils.pipes import SIGPIPE_EXIT_CODE, stop_quietly  # noqa: F401 (SIGPIPE_EXIT_CODE: its old home)
from textbox.utils.suggest import suggest

_FILES = {"hyp": "generated texts, one per line",
          "ref": "references, one line per example; a line holding a Python list of strings gives several",
          "src": "sources, one per line (only for metrics that compare with the input, e.g. novelty)"}
_OPTIONS = ["metrics", *(name for name, key in SCHEMA.items() if key.group == "metrics")]


def usage() -> str:
    files = "\n".join(f"  --{name}=<file>: {doc}" for name, doc in _FILES.items())
    options = "\n".join(f"  --{name}: {_type_of(name)} = {SCHEMA[name].default!r}\n      {SCHEMA[name].doc}"
                        for name in _OPTIONS)
    return (f"usage: python -m textbox.evaluator.score_files --hyp=<file> --ref=<file> [--src=<file>] "
            f"[--metrics=\"['bleu','rouge']\"] [--<option>=<value> ...]\n\nfiles:\n{files}\n\n"
            f"options:\n{options}\n\nmetrics:\n{describe_metrics()}")


def _type_of(name: str) -> str:
    key = SCHEMA[name]
    return f"{key.type} ({'|'.join(key.choices)})" if key.choices else key.type


def evaluate_files(argv: Sequence[str]) -> MetricReport:
    """Parse the arguments, read the files, score them; every argument problem is reported at once."""
    values, problems = parse_argv(argv)
    paths = {name: str(values.pop(name)) for name in _FILES if name in values}
    problems += [f"--{name}=<file> is required" for name in ("hyp", "ref") if name not in paths]
    options = dict(DEFAULTS)
    for name, value in values.items():
        if name not in _OPTIONS:
            problems.append(f"unknown option --{name}{suggest(name, [*_OPTIONS, *_FILES])} "
                            "(python -m textbox.evaluator.score_files --help lists the options)")
        elif (error := SCHEMA[name].type_error(value)) is not None:
            problems.append(f"--{name} {error}")
        else:
            options[name] = value.lower() if SCHEMA[name].choices and isinstance(value, str) else value
    problems += metric_problems(options["metrics"], options, where=lambda key: f"--{key}")
    problems += [f"--{name}: file {path} does not exist" for name, path in paths.items() if not Path(path).is_file()]
    if problems:
        raise ConfigError(problems)

    lines = {name: read_lines(Path(path)) for name, path in paths.items()}
    hypotheses, sources = lines["hyp"], lines.get("src")
    references = [parse_references(line) for line in lines["ref"]]
    counts = {name: len(texts) for name, texts in lines.items()}
    if not hypotheses:
        raise DataError(f"--hyp file {paths['hyp']} has no lines")
    if len(set(counts.values())) > 1:
        raise DataError("the files must have one line per example, but they have "
                        + ", ".join(f"{count} lines (--{name}={paths[name]})" for name, count in counts.items()))
    return compute_metrics(options["metrics"], hypotheses, references, sources, options)


def format_table(scores: dict[str, float]) -> str:
    width = max(len(name) for name in scores)
    return "\n".join([f"{'metric':<{width}}  value", f"{'-' * width}  -----",
                      *(f"{name:<{width}}  {value:.2f}" for name, value in scores.items())])


# What this command and run_analysis.py (textbox/compare_files.py) do around their work: --help, one line for a user
# error with its exit code, and a quiet stop when the reader closes the pipe (| head -1), as Unix tools stop on
# SIGPIPE.


def run_command(name: str, usage: Callable[[], str], work: Callable[[list[str]], list[str]],
                argv: Sequence[str] | None = None) -> int:
    """Run ``work`` on the arguments and print the lines it returns; ``name`` prefixes a user error's message."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if any(arg in ("-h", "--help") for arg in args):
            print(usage(), flush=True)
            return 0
        try:
            lines = work(args)
        except TextBoxUserError as error:
            print(f"{name}: {error}", file=sys.stderr)
            return error.exit_code
        print("\n".join(lines), flush=True)
    except BrokenPipeError:  # the reader closed the pipe: stop quietly
        return stop_quietly()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    def work(args: list[str]) -> list[str]:
        report = evaluate_files(args)
        return [format_table(report.scores),
                json.dumps({"scores": report.scores, "details": report.details}, ensure_ascii=False)]
    return run_command("textbox.evaluator.score_files", usage, work, argv)

if __name__ == "__main__":
    sys.exit(main())
