"""Seed study: `python run_multi_seed.py --multi_seed=16 [--workers=N] [--key=value ...]`.

Runs the same config under N seeds and prints mean, std, min, max and a 95% interval per figure.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from textbox.cli import report_user_error, wants_help
    from textbox.config import TextBoxError
    from textbox.utils.pipes import print_out
    from textbox.studies.seeds import HELP, run_multi_seed

    argv = sys.argv[1:] if argv is None else argv
    if wants_help(argv):
        return print_out(HELP)
    try:
        result = run_multi_seed(argv)
        print(result.table)
        if result.failed:
            raise TextBoxError(result.failure_message())
    except TextBoxError as error:
        return report_user_error(error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
